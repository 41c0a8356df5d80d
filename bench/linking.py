"""Entity linking without ids: the question's topic entities found as a user writes the question.

CWQ-mini: every `cwq_mini_dev` and `cwq_mini_test` graph in one store (the most distractors
available here: 16,988 triples, every node name a candidate); the linker is compiled on all dev
rows' gold `q_entity` names and scored on a seeded sample of `--size` test questions and on every
test question. MetaQA: dev questions with their brackets removed, over the whole KB; compiled on a
seeded sample of dev rows disjoint from the scored ones (`--metaqa-train`), scored on
`--metaqa-per-hop` per hop. Per backend (the embedded store, and a real Virtuoso loaded with the
same triples): precision and recall of the linked entities against the gold topic entities (micro,
over all questions), the share linked exactly the gold set, with at least one gold entity, with
nothing, the mean candidates offered and the mean seconds to link (index built beforehand). Rows:
`uncompiled` (match quality alone), `compiled` (as compiling fits it: names found by their sentence
vectors too, and what the graph says about the candidates, one query a question), `compiled, no
label vectors`, `compiled, no graph` (compiled and linking without those features) and `compiled,
no lexicon`.

`--split dev`: for tuning the linker without looking at test questions. It is compiled on two thirds
of the dev rows (a seeded shuffle) and scored on the other third; no test question is linked.

`--end-to-end N --program DIR`: a compiled CWQ-mini program (its linker replaced by the one
compiled here) answers the first N questions of the sample twice over the same store: with the
rows' topic entities and without them (linked). Records are resumable JSONL; Hits@1 and F1 of both.

    .venv/bin/python -m bench.linking [--size 200] [--backends embedded,virtuoso]
    .venv/bin/python -m bench.linking --split dev --datasets cwq-mini --backends embedded
    .venv/bin/python -m bench.linking --end-to-end 100 --program bench/results/cwq-test-seed0/program
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

import dspy  # noqa: E402
import pyoxigraph as ox  # noqa: E402

from kgqa.data.jsonl import load_jsonl  # noqa: E402
from kgqa.data.metaqa import kb_triples  # noqa: E402
from kgqa.data.rog import graph_triples, load_rog  # noqa: E402
from kgqa.kg import EmbeddedStore, KnowledgeGraph, SparqlEndpoint, virtuoso  # noqa: E402
from kgqa.kg.names import NameIndex  # noqa: E402
from kgqa.kg.profiles import ROG  # noqa: E402
from kgqa.programs.embedder import Embedder  # noqa: E402
from kgqa.programs.inspection import link_question  # noqa: E402
from kgqa.programs.linking import LinkCandidate, Linker, Linking  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
BACKENDS = ("embedded", "virtuoso")


@dataclass
class Scored:
    """One question's linking against its gold topic entities."""

    id: str
    question: str
    gold: list[str]
    linked: list[str]
    candidates: int
    seconds: float
    shown: list[dict]
    llm_calls: int = 0

    @property
    def right(self) -> int:
        return len(set(self.linked) & set(self.gold))


def link_all(
    linker: Linker, index: NameIndex, rows: Sequence[tuple[str, str, list[str]]], *, graph: KnowledgeGraph | None
) -> list[Scored]:
    scored = []
    for id_, question, gold in rows:
        start = time.perf_counter()
        linking: Linking = linker.link(question, index, graph=graph)
        seconds = time.perf_counter() - start
        scored.append(Scored(id_, question, gold, as_named(linking.linked, gold), len(linking.candidates), seconds,
                             linking.to_dict(shown=5)["candidates"]))
    return scored


def as_named(candidates: Sequence[LinkCandidate], gold: Sequence[str]) -> list[str]:
    """Each candidate as the gold list names it: by name where a gold topic is that name, else by id."""
    return [c.name if c.name in gold else c.entity for c in candidates]


def choose_all(program, rows: Sequence[tuple[str, str, list[str]]]) -> list[Scored]:
    """Each question linked as the program links it: its linker, then the topic choice (the LM,
    only where more than one candidate is plausible)."""
    scored = []
    for id_, question, gold in rows:
        start = time.perf_counter()
        linking, trace = link_question(program, question)
        seconds = time.perf_counter() - start
        scored.append(Scored(id_, question, gold, as_named(linking.linked, gold), len(linking.candidates), seconds,
                             linking.to_dict(shown=5)["candidates"], trace.llm_calls))
    return scored


def metrics(scored: list[Scored]) -> dict[str, float]:
    n = len(scored)
    linked = sum(len(s.linked) for s in scored)
    gold = sum(len(s.gold) for s in scored)
    right = sum(s.right for s in scored)
    return {
        "questions": n,
        "precision": right / max(linked, 1),
        "recall": right / max(gold, 1),
        "exact": sum(set(s.linked) == set(s.gold) for s in scored) / n,
        "at_least_one": sum(s.right > 0 for s in scored) / n,
        "nothing": sum(not s.linked for s in scored) / n,
        "candidates": statistics.mean(s.candidates for s in scored),
        "llm_calls": statistics.mean(s.llm_calls for s in scored),
        "ms_mean": 1000 * statistics.mean(s.seconds for s in scored),
        "ms_p95": 1000 * sorted(s.seconds for s in scored)[int(0.95 * (n - 1))],
    }


# -- the datasets ------------------------------------------------------------------------------------


def cwq_rows(cwq: Path):
    dev = list(load_rog(cwq / "cwq_mini_dev.jsonl.gz"))
    test = list(load_rog(cwq / "cwq_mini_test.jsonl.gz"))
    triples = list(dict.fromkeys(t for ex in dev + test for t in ex.graph))
    return dev, test, list(graph_triples(triples))


def cwq_split(dev: list[dspy.Example], test: list[dspy.Example], *, split: str, size: int, seed: int):
    """The rows the linker is compiled on and the samples it is scored on. `test`: every dev row, then
    a seeded sample of `size` test questions and all of them. `dev`: two thirds of the dev rows (a
    seeded shuffle), then the other third."""
    if split == "test":
        return dev, {"sample": random.Random(seed).sample(test, size), "all test": test}
    rows = list(dev)
    random.Random(f"linking-dev-{seed}").shuffle(rows)
    cut = len(rows) * 2 // 3
    return rows[:cut], {"dev held out": rows[cut:]}


def metaqa_rows(metaqa: Path, per_hop: int, train: int, seed: int):
    """Bracket-free dev questions: `per_hop` scored per hop, `train` compile questions from the rest."""
    rng = random.Random(f"linking-{seed}")
    scored, pool = [], []
    for hop in (1, 2, 3):
        rows = [unbracketed(ex) for ex in load_jsonl(metaqa / "qa" / f"metaqa_{hop}hop_dev.jsonl")]
        rng.shuffle(rows)
        scored += rows[:per_hop]
        pool += rows[per_hop:]
    return rng.sample(pool, train), scored, list(kb_triples(metaqa / "kb.txt"))


def unbracketed(example: dspy.Example) -> dspy.Example:
    return example.copy(question=example.question.replace("[", "").replace("]", ""))


def as_rows(examples: Sequence[dspy.Example]) -> list[tuple[str, str, list[str]]]:
    return [(ex.id, ex.question, list(ex.topic_entities)) for ex in examples]


def knowledge_graph(backend: str, triples: list[ox.Triple], profile, workdir: Path):
    """The store on `backend`, and what to stop when done."""
    if backend == "embedded":
        store = EmbeddedStore()
        store.add_triples(triples)
        return KnowledgeGraph(store, profile=profile), None
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "kg.nt"
    ox.serialize(triples, str(path), format=ox.RdfFormat.N_TRIPLES)
    server = virtuoso.LocalVirtuoso.start(workdir / "virtuoso", [path], timeout=120)
    return KnowledgeGraph(SparqlEndpoint(server.url, timeout=60), profile=profile), server


# -- the report --------------------------------------------------------------------------------------


def table(results: dict[tuple[str, str, str, str], dict]) -> str:
    lines = [
        "| dataset | backend | linker | questions | precision | recall | exact gold set | >= 1 gold | nothing | candidates | LLM calls | ms mean | ms p95 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, backend, linker, sample), m in results.items():
        lines.append(
            f"| {dataset} ({sample}) | {backend} | {linker} | {m['questions']} | {m['precision']:.3f} | {m['recall']:.3f} | "
            f"{m['exact']:.3f} | {m['at_least_one']:.3f} | {m['nothing']:.3f} | {m['candidates']:.1f} | "
            f"{m.get('llm_calls', 0):.2f} | {m['ms_mean']:.1f} | {m['ms_p95']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def wrong_links(scored: list[Scored], count: int, seed: int) -> str:
    wrong = [s for s in scored if set(s.linked) != set(s.gold)]
    lines = [f"{len(wrong)} of {len(scored)} not linked exactly; {min(count, len(wrong))} drawn with random.Random({seed}):", ""]
    for s in random.Random(seed).sample(wrong, min(count, len(wrong))):
        top = ", ".join(f"{c['name']} ({c['how']} '{c['span']}' {c['score']:.2f})" for c in s.shown[:4])
        lines += [f"- **{s.question}**", f"  gold {s.gold}; linked {s.linked}", f"  best candidates: {top}"]
    return "\n".join(lines) + "\n"


def write_records(path: Path, scored: list[Scored]) -> None:
    """Each question's linking as one JSON line, gzipped (`path` ends in .jsonl.gz): kept in bench/results."""
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for s in scored:
            f.write(json.dumps({"id": s.id, "question": s.question, "gold": s.gold, "linked": s.linked,
                                "candidates": s.candidates, "seconds": round(s.seconds, 4), "best": s.shown,
                                "llm_calls": s.llm_calls}) + "\n")


# -- end to end --------------------------------------------------------------------------------------


def topic_chooser(args, kg: KnowledgeGraph, linker: Linker, train: list[dspy.Example]):
    """The program's linking with the topic choice compiled on the training questions' gold topics
    (`optimizers.labels.topic_demos`), on the LM of `--lm`."""
    from kgqa.lm.adapter import ConstrainedJSONAdapter
    from kgqa.optimizers.labels import topic_demos
    from kgqa.optimizers.teleprompters import Budget
    from kgqa.programs import KGQA, WalkConfig
    from kgqa.specs import make_lm

    dspy.configure(lm=make_lm(args.lm), adapter=ConstrainedJSONAdapter())
    program = KGQA(kg, config=WalkConfig(topic_choice=True))
    program.linker = linker
    start = time.perf_counter()
    program.choose_topics.predict.demos = topic_demos(program, train, limit=Budget().topic_demos)
    print(f"topic choice compiled: {len(program.choose_topics.predict.demos)} demos in {time.perf_counter() - start:.1f} s", flush=True)
    return program


def end_to_end(args, kg: KnowledgeGraph, linker: Linker, sample: list[dspy.Example]) -> str:
    from kgqa.evaluate.runner import evaluate
    from kgqa.lm.adapter import ConstrainedJSONAdapter
    from kgqa.programs.saving import load_program
    from kgqa.specs import make_lm

    dspy.configure(lm=make_lm(args.lm), adapter=ConstrainedJSONAdapter())
    program = load_program(args.program, kg)
    program.linker = linker
    questions = sample[: args.end_to_end]
    lines = ["| topics | questions | Hits@1 | F1 | no topic found | LLM calls | s/q mean |", "|---|---|---|---|---|---|---|"]
    for name, examples in (("given", questions), ("linked", [ex.copy(topic_entities=[]) for ex in questions])):
        summary = evaluate(program, examples, out=args.out / f"end-to-end-{name}.jsonl")
        records = [json.loads(line) for line in (args.out / f"end-to-end-{name}.jsonl").read_text().splitlines()]
        lost = sum(r["trace"]["stop_reason"] == "no_topic_entity" for r in records)
        lines.append(f"| {name} | {summary.questions} | {summary.hits1:.3f} | {summary.f1:.3f} | {lost} | "
                     f"{summary.llm_calls:.1f} | {summary.seconds:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=200, help="CWQ-mini test questions in the seeded sample")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--datasets", default="cwq-mini,metaqa")
    parser.add_argument("--metaqa-per-hop", type=int, default=100)
    parser.add_argument("--metaqa-train", type=int, default=1500)
    parser.add_argument("--cwq-mini", type=Path, default=SHARED / "cwq_mini")
    parser.add_argument("--metaqa", type=Path, default=SHARED / "metaqa")
    parser.add_argument("--split", choices=("test", "dev"), default="test", help="dev: CWQ-mini's linker compiled on "
                        "two thirds of the dev rows and scored on the rest, for tuning (MetaQA's rows are dev already)")
    parser.add_argument("--end-to-end", type=int, default=0, help="questions answered with given and linked topics")
    parser.add_argument("--program", type=Path, help="a compiled CWQ-mini program for --end-to-end")
    parser.add_argument("--lm", default="local")
    parser.add_argument("--topic-choice", action="store_true", help="also the compiled linker followed by the "
                        "program's topic choice (the LM, compiled on the training questions' gold topics), on the "
                        "embedded store's seeded samples")
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "runs" / "linking-local")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run still stops its Virtuoso
    backends = [b for b in args.backends.split(",") if b]
    if set(backends) - set(BACKENDS):
        parser.error(f"backends are {', '.join(BACKENDS)}")
    if args.end_to_end and not args.program:
        parser.error("--end-to-end needs --program")
    if args.end_to_end and args.split == "dev":
        parser.error("--end-to-end answers test questions: leave out --split dev")
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    report = []
    dev, test, cwq_triples = cwq_rows(args.cwq_mini)
    cwq_train, cwq_samples = cwq_split(dev, test, split=args.split, size=args.size, seed=args.seed)
    m_train, m_scored, m_triples = metaqa_rows(args.metaqa, args.metaqa_per_hop, args.metaqa_train, args.seed)
    datasets = {
        "cwq-mini": (cwq_triples, ROG, cwq_train, cwq_samples),
        "metaqa": (m_triples, "metaqa", m_train, {f"{3 * args.metaqa_per_hop} dev, no brackets": m_scored}),
    }
    chosen = [d for d in args.datasets.split(",") if d]
    if set(chosen) - set(datasets):
        parser.error(f"datasets are {', '.join(datasets)}")
    with tempfile.TemporaryDirectory(prefix="kgqa-linking-") as tmp:
        for dataset in chosen:
            triples, profile, train, samples = datasets[dataset]
            for backend in backends:
                kg, server = knowledge_graph(backend, triples, profile, Path(tmp) / f"{dataset}-{backend}")
                try:
                    start = time.perf_counter()
                    index = kg.name_index()
                    built = time.perf_counter() - start
                    start = time.perf_counter()
                    vectors = kg.name_index(encode=Embedder().encode)
                    embedded = time.perf_counter() - start
                    start = time.perf_counter()
                    linker = Linker.fit(train, vectors, graph=kg)
                    fitted = time.perf_counter() - start
                    unlexed = Linker.from_dict({**linker.to_dict(), "stats": {**linker.to_dict()["stats"], "lexicon": {}}})
                    ungraphed = Linker.fit(train, vectors)
                    unvectored = Linker.fit(train, index, graph=kg)
                    report.append(f"{dataset} on {backend}: {len(index):,} names indexed in {built:.1f} s, their sentence "
                                  f"vectors in {embedded:.1f} s; linker compiled on {len(train):,} questions in {fitted:.1f} s "
                                  f"(thresholds {linker.threshold} for names, {linker.common_threshold} for common words)")
                    print(report[-1], flush=True)
                    for name, examples in samples.items():
                        linkers = (("uncompiled", Linker()), ("compiled", linker), ("compiled, no label vectors", unvectored),
                                   ("compiled, no graph", ungraphed), ("compiled, no lexicon", unlexed))
                        for label, model in linkers:
                            scored = link_all(model, vectors if model.uses_vectors else index, as_rows(examples), graph=kg)
                            results[(dataset, backend, label, name)] = metrics(scored)
                            print(table({(dataset, backend, label, name): results[(dataset, backend, label, name)]}).splitlines()[-1], flush=True)
                            if backend == "embedded" and label == "compiled":
                                slug = f"{dataset}-{name.split(',')[0].replace(' ', '-')}"
                                write_records(args.out / f"links-{slug}.jsonl.gz", scored)
                                if name == next(iter(samples)):  # the seeded sample
                                    (args.out / f"wrong-{dataset}.md").write_text(wrong_links(scored, 20, args.seed))
                    if backend == "embedded" and args.topic_choice:
                        program = topic_chooser(args, kg, linker, train)
                        name, examples = next(iter(samples.items()))
                        scored = choose_all(program, as_rows(examples))
                        results[(dataset, backend, "compiled + topic choice (LM)", name)] = metrics(scored)
                        print(table({(dataset, backend, "+choice", name): results[(dataset, backend, "compiled + topic choice (LM)", name)]}).splitlines()[-1], flush=True)
                        write_records(args.out / f"links-{dataset}-topic-choice.jsonl.gz", scored)
                        (args.out / f"wrong-{dataset}-topic-choice.md").write_text(wrong_links(scored, 20, args.seed))
                    if dataset == "cwq-mini" and backend == "embedded" and args.end_to_end:
                        e2e = end_to_end(args, kg, linker, samples["sample"])
                        (args.out / "end-to-end.md").write_text(e2e)
                        print(e2e, flush=True)
                finally:
                    if server:
                        server.stop()
    everything = chosen == list(datasets) and backends == list(BACKENDS) and args.split == "test"
    suffix = "" if everything else "-" + "-".join(chosen + backends + ([args.split] if args.split == "dev" else []))
    (args.out / f"table{suffix}.md").write_text(table(results) + "\n" + "\n".join(f"- {line}" for line in report) + "\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
