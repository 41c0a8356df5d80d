"""The chain prior, measured without an LLM: does the chain it weighs most answer the question?

The prior (`programs/chains.py`) ranks a question's candidate answers by the relation chains its
nearest training questions were answered by. It is fitted here as compiling fits it, on the
compile sample of a `bench.reproduce` row (`--train` questions of seed `--seed`, over the same
graph), with the labels compiling gives them (`optimizers.paths.label_trainset`): the data's own
paths where they hold (`given`), or, with them removed, the paths found from the answers alone
(`found`); and with the training questions keyed two ways: as written, or by their shape (topic
names blanked out, `programs.question.question_shape`), each neighbour weighing its similarity;
and as compiling fits it: by the key and the neighbours' temperature under which the training
questions, each asked of the others, are answered best (`ChainPrior.fit_best`).

Each is asked about `--size` other dev questions: CWQ-mini dev rows outside the compile sample (the
`cwq_bench(split="dev")` sample), MetaQA dev questions outside the compile sample and the row's test
sample (`--size` split over the hops). A scored question's answering chains are the ones that fit
its answers best in the graph (`optimizers.paths.label_paths`, its given paths removed): is the
heaviest voted chain one of them, one of the 3 heaviest, is any chain voted for at all, and where
the heaviest weighs at least 0.6, has it an answering chain's length? No LLM is called.

    .venv/bin/python -m bench.chain_prior [--datasets cwq-mini,metaqa] [--size 300] [--train 1500] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

import dspy  # noqa: E402

from bench.accuracy import CWQ_MINI, HOPS, METAQA, Bench, answers_alone, cwq_bench, metaqa_bench  # noqa: E402
from kgqa.data.jsonl import load_jsonl  # noqa: E402
from kgqa.optimizers.paths import label_paths, label_trainset, prior_labels, topic_names  # noqa: E402
from kgqa.programs.chains import KEYS, ChainPrior, Key  # noqa: E402
from kgqa.programs.embedder import Embedder  # noqa: E402

Chain = tuple[str, ...]
SURE = 0.6  # a heaviest chain weighing this much: is its length the answer's?


@dataclass(frozen=True)
class Score:
    labeled: int  # training questions with a label
    first: float  # scored questions whose heaviest voted chain is one of their answering chains
    first3: float  # ... one of the 3 heaviest
    voted: float  # ... for which the prior votes for any chain
    sure: float  # ... whose heaviest chain weighs at least `SURE`
    sure_length: float  # of those, the share whose heaviest chain has an answering chain's length


def answering(examples: Sequence[dspy.Example], kg) -> list[set[Chain]]:
    """Each example's answering chains: those that fit its answers best in `kg`, found from its
    answers alone (its given paths removed)."""
    chains = []
    for example in answers_alone(examples):
        label = label_paths(example, kg)
        chains.append({tuple(relation for relation, _ in path) for path in label.paths[: label.tied]})
    return chains


def fitted(trainset: Sequence[dspy.Example], *, key: Key | str, encode: Callable) -> ChainPrior:
    """The prior fitted on the labeled `trainset`, keyed by `key`; "chosen": as compiling fits it,
    by the key and temperature that answer the training questions best (`ChainPrior.fit_best`)."""
    if key == "chosen":
        return ChainPrior.fit_best(prior_labels(trainset), encode)
    return ChainPrior.fit_keyed(prior_labels(trainset), key=key)


def score(prior: ChainPrior, scored: Sequence[dspy.Example], good: Sequence[set[Chain]], encode: Callable) -> Score:
    first = first3 = voted = sure = sure_length = 0
    for example, chains in zip(scored, good):
        votes = prior.ask(example.question, topic_names(example), encode)
        ranked = sorted(votes.chains, key=lambda c: (-votes.chains[c], c))
        first += bool(ranked) and ranked[0] in chains
        first3 += any(c in chains for c in ranked[:3])
        voted += bool(ranked)
        if ranked and votes.chains[ranked[0]] >= SURE:
            sure += 1
            sure_length += len(ranked[0]) in {len(c) for c in chains}
    n = max(len(scored), 1)
    return Score(len(prior.questions), first / n, first3 / n, voted / n, sure / n, sure_length / max(sure, 1))


def metaqa_scored(bench: Bench, size: int, seed: int, metaqa: Path) -> list[dspy.Example]:
    """`size` MetaQA dev questions (a third per hop) outside the row's compile and test samples."""
    taken = {ex.id for ex in bench.train} | {ex.id for sample in bench.test.values() for ex in sample}
    rng, scored = random.Random(f"prior-{seed}"), []
    for hop in HOPS:
        rows = [ex for ex in load_jsonl(metaqa / "qa" / f"metaqa_{hop}hop_dev.jsonl") if ex.kb_exact and ex.id not in taken]
        scored += rng.sample(rows, size // len(HOPS))
    return scored


def measure(bench: Bench, scored: Sequence[dspy.Example], encode: Callable) -> dict[tuple[str, str], Score]:
    good = answering(scored, bench.kg)
    scores = {}
    for labels, trainset in (("given", bench.train), ("found", answers_alone(bench.train))):
        start = time.perf_counter()
        labeled, _ = label_trainset(trainset, bench.kg, encode=encode)
        for key in (*KEYS, "chosen"):
            prior = fitted(labeled, key=key, encode=encode)
            key = key if key in KEYS else f"{key} ({prior.key}, temperature {prior.temperature})"
            scores[labels, key] = score(prior, scored, good, encode)
            print(f"{bench.dataset} {labels} by {key}: {scores[labels, key]} ({time.perf_counter() - start:.0f} s)", flush=True)
    return scores


def table(rows: dict[str, dict[tuple[str, str], Score]], sizes: dict[str, int]) -> str:
    lines = ["| dataset | labels | keyed by | labeled | heaviest chain answers | in the 3 heaviest | any chain voted | "
             f"heaviest weighs >= {SURE} | of those, its length an answering chain's |", "|---|---|---|---|---|---|---|---|---|"]
    for dataset, scores in rows.items():
        lines += [f"| {dataset} ({sizes[dataset]} scored) | {labels} | {key} | {s.labeled} | {s.first:.3f} | {s.first3:.3f} | "
                  f"{s.voted:.3f} | {s.sure:.3f} | {s.sure_length:.3f} |" for (labels, key), s in scores.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="cwq-mini,metaqa")
    parser.add_argument("--size", type=int, default=300, help="dev questions scored")
    parser.add_argument("--train", type=int, default=1500, help="dev questions the prior is fitted on")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cwq-mini", type=Path, default=CWQ_MINI)
    parser.add_argument("--metaqa", type=Path, default=METAQA)
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "runs" / "chain-prior-dev")
    args = parser.parse_args(argv)
    encode = Embedder().encode
    rows, sizes = {}, {}
    for dataset in args.datasets.split(","):
        if dataset == "cwq-mini":
            bench = cwq_bench(args.size, args.train, args.seed, args.cwq_mini, split="dev")
            scored = bench.test["dev"]
        elif dataset == "metaqa":
            bench = metaqa_bench(30, args.train, args.seed, args.metaqa)
            scored = metaqa_scored(bench, args.size, args.seed, args.metaqa)
        else:
            parser.error(f"unknown dataset {dataset!r} (cwq-mini, metaqa)")
        rows[dataset], sizes[dataset] = measure(bench, scored, encode), len(scored)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.md").write_text(table(rows, sizes))
    print(table(rows, sizes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
