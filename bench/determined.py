"""How far the graph itself decides each answer, with no model at all: the ceiling of any walk that
answers with the ends of one query.

For each question, every query of the walk's shape is tried over the bench's graph: one relation
chain of at most `--longest` relations from one topic entity (nameless CVT nodes stepped through,
as the walk and the labeler read the graph: `kg.paths.chains_from`), and the ends two topic
entities' chains share. A query's precision is its gold ends over its ends (names compared as
answers are). The best query's precision is what an oracle that knows which query to ask, and then
picks one of its ends at random, answers first-right in expectation; a question is *determined*
where some query's ends are all gold answers. Per dataset: the share determined, partly determined,
and with no query reaching a gold answer; the oracle's expected Hits@1; by the best query's length
and by the question's kind. No LLM and no compiled part: this bounds every row of a dataset.

    .venv/bin/python -m bench.determined --datasets cwq-mini --dev 300
    .venv/bin/python -m bench.determined --datasets cwq-mini,metaqa --out runs/determined
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kgqa.env import stay_offline

stay_offline()

from bench.accuracy import CWQ_MINI, METAQA, cwq_bench, metaqa_bench  # noqa: E402
from kgqa.evaluate.metrics import normalize  # noqa: E402
from kgqa.kg import KnowledgeGraph  # noqa: E402
from kgqa.kg.errors import KGError  # noqa: E402
from kgqa.kg.paths import chains_from  # noqa: E402

DATASETS = ("cwq-mini", "metaqa")


@dataclass(frozen=True)
class Determined:
    """The best query for one question: its precision (0 where no query reaches a gold answer),
    its relations (the shortest query of that precision; two topics' shared ends: both chains'),
    and whether it is two topic entities' chains' shared ends."""

    precision: float
    relations: int = 0
    shared: bool = False


def determined(kg: KnowledgeGraph, topics: Sequence[str], answers: Iterable[str], *, longest: int = 3) -> Determined:
    """The best query of the walk's shape for a question with these topic entities and answers."""
    golds = {normalize(a) for a in answers} - {""}
    ends = [_chain_ends(kg, topic, longest) for topic in dict.fromkeys(topics)]
    queries = [(names, len(chain), False) for per_topic in ends for chain, names in per_topic.items()]
    for i, first in enumerate(ends):  # two topics' chains that each reach a gold answer: the ends they share
        for second in ends[i + 1:]:
            queries += [(a & b, len(ca) + len(cb), True) for ca, a in first.items() if a & golds
                        for cb, b in second.items() if b & golds]
    scored = [(len(names & golds) / len(names), relations, shared) for names, relations, shared in queries if names & golds]
    if not scored:
        return Determined(0.0)
    precision, relations, shared = max(scored, key=lambda q: (q[0], -q[1], not q[2]))
    return Determined(precision, relations, shared)


def _chain_ends(kg: KnowledgeGraph, topic: str, longest: int) -> dict[tuple, frozenset[str]]:
    """Each chain from `topic` with its ends' names, normalized; none for a topic the graph refuses."""
    found: dict[tuple, frozenset[str]] = {}
    try:
        for layer in chains_from(kg, [topic], longest=longest):
            found.update((chain, frozenset(normalize(n.label) for n in nodes) - {""})
                         for chain, nodes in layer.items())
    except KGError:
        return {}
    return {chain: names for chain, names in found.items() if names}


def summary(rows: Sequence[tuple[str, Determined]]) -> dict:
    """The shares over the questions, by kind (the first element of each row) and by the best query's length."""
    def shares(found: list[Determined]) -> dict:
        n = len(found)
        return {"questions": n, "determined": sum(d.precision == 1 for d in found) / n,
                "partly": sum(0 < d.precision < 1 for d in found) / n, "none": sum(d.precision == 0 for d in found) / n,
                "oracle_hits1": sum(d.precision for d in found) / n, "shared_ends": sum(d.shared for d in found) / n}

    by_kind, by_length = defaultdict(list), defaultdict(list)
    for kind, found in rows:
        by_kind[kind].append(found)
        by_length[found.relations].append(found)
    return {"all": shares([d for _, d in rows]), "by_kind": {k: shares(v) for k, v in sorted(by_kind.items())},
            "by_relations": {n: shares(v) for n, v in sorted(by_length.items())}}


def table(results: dict[str, dict]) -> str:
    lines = ["| dataset | questions | by | determined | partly | none | oracle Hits@1 | shared ends best |",
             "|---|---|---|---|---|---|---|---|"]
    for dataset, result in results.items():
        parts = [("all", result["all"])] + [(f"kind {k}", v) for k, v in result["by_kind"].items()] + [
            (f"{n} relations" if n else "no query", v) for n, v in result["by_relations"].items()]
        for label, s in parts:
            lines.append(f"| {dataset} | {s['questions']} | {label} | {s['determined']:.3f} | {s['partly']:.3f} | "
                         f"{s['none']:.3f} | {s['oracle_hits1']:.3f} | {s['shared_ends']:.3f} |")
    return "\n".join(lines)


def questions(dataset: str, dev: int, seed: int):
    """The graph and the questions: CWQ-mini dev rows outside the seed's compile sample, or MetaQA dev
    questions (`dev` / 3 a hop) outside it, as `bench.accuracy` draws them."""
    if dataset == "cwq-mini":
        bench = cwq_bench(dev, 1500, seed, CWQ_MINI, split="dev")
        return bench.kg, [(getattr(ex, "compositionality_type", None) or "-", ex) for ex in bench.test["dev"]]
    bench = metaqa_bench(dev // 3, 1500, seed, METAQA)
    return bench.kg, [(name, ex) for name, examples in bench.test.items() for ex in examples]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="cwq-mini", help=f"some of {', '.join(DATASETS)}")
    parser.add_argument("--dev", type=int, default=300, help="questions a dataset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--longest", type=int, default=3, help="relations a chain at most")
    parser.add_argument("--out", type=Path, default=None, help="where to write table.md and each question's best query")
    args = parser.parse_args(argv)
    chosen = [d for d in args.datasets.split(",") if d]
    if unknown := set(chosen) - set(DATASETS):
        parser.error(f"unknown datasets {sorted(unknown)}: choose from {', '.join(DATASETS)}")
    results, each = {}, {}
    for dataset in chosen:
        kg, asked = questions(dataset, args.dev, args.seed)
        rows = [(kind, determined(kg, list(ex.topic_entities), list(ex.answers), longest=args.longest)) for kind, ex in asked]
        results[dataset] = summary(rows)
        each[dataset] = {ex.id: asdict(found) for (_, ex), (_, found) in zip(asked, rows)}
        print(dataset, json.dumps(results[dataset]["all"]), flush=True)
    text = table(results)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "table.md").write_text(text + "\n")
        (args.out / "questions.json").write_text(json.dumps(each, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
