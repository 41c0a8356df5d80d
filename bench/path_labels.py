"""Where the compile's gold paths come from, per dataset: the share of training questions labeled
by paths the data gives that hold in the program's graph, by paths found there from the answers
alone (`optimizers.paths`), and by none; with the given paths as they are, and removed (what a
user who brings questions and answers has). With them removed, how often the first found path (the
one the teacher walks) is one of the given paths that hold, where those hold: with ties between
equally fitting paths broken by relation name, and by the vote of the training questions worded
alike (`optimizers.paths.break_ties`, as compiling breaks them). No LLM is called.

The questions are the compile samples `bench.reproduce` rows compile on, over the same graphs:
CWQ-mini's 1,500 dev questions of seed `--seed` over the store of its row (`bench.accuracy.cwq_bench`),
MetaQA's 1,500 over its whole KB (`metaqa_bench`).

    .venv/bin/python -m bench.path_labels [--datasets cwq-mini,metaqa] [--train 1500] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from kgqa.env import stay_offline

stay_offline()

from bench.accuracy import CWQ_MINI, METAQA, cwq_bench, metaqa_bench  # noqa: E402
from kgqa.optimizers.paths import SOURCES, PathLabel, break_ties, label_paths, question_shapes  # noqa: E402
from kgqa.programs.embedder import Embedder  # noqa: E402

GIVEN = {"cwq-mini": "ground_paths", "metaqa": "qtype"}  # the field that carries a dataset's given paths


def measure(bench, *, given: bool) -> tuple[list[PathLabel], float]:
    """Each question of `bench.train` labeled (ties by name), with the given paths or without, and the
    seconds labeling took."""
    field = GIVEN[bench.dataset]
    examples = bench.train if given else [ex.copy(**{field: None}) for ex in bench.train]
    start = time.perf_counter()
    labels = [label_paths(ex, bench.kg) for ex in examples]
    return labels, time.perf_counter() - start


def row(dataset: str, given: str, labels: list[PathLabel], seconds: float, *, agree: str = "-") -> str:
    counts = Counter(label.source for label in labels)
    shares = {source: counts[source] / len(labels) for source in SOURCES}
    lengths = ", ".join(f"{n}: {c}" for n, c in sorted(Counter(len(lb.paths[0]) for lb in labels if lb.paths).items()))
    return (f"| {dataset} | {given} | {len(labels)} | {shares['given'] + shares['found']:.3f} | {shares['given']:.3f} | "
            f"{shares['found']:.3f} | {shares['none']:.3f} | {sum(lb.tied > 1 for lb in labels)} | {lengths} | {agree} | "
            f"{seconds:.0f} |")


def agreement(found: list[PathLabel], kept: list[PathLabel]) -> tuple[int, int]:
    """How many questions whose given paths hold have one of them as their first found path, of how many."""
    holding = [(f, k) for f, k in zip(found, kept) if k.source == "given"]
    return sum(bool(f.paths) and f.paths[0] in k.paths for f, k in holding), len(holding)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="cwq-mini,metaqa")
    parser.add_argument("--train", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="also write the table here (markdown)")
    args = parser.parse_args(argv)
    lines = ["| dataset | given paths | questions | labeled | by given paths | by found paths | none | tied | first path's "
             "relations | first found path a given one: ties by name / by vote | s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    encode = Embedder().encode
    for dataset in args.datasets.split(","):
        bench = (cwq_bench(0, args.train, args.seed, CWQ_MINI) if dataset == "cwq-mini"
                 else metaqa_bench(0, args.train, args.seed, METAQA))
        kept, seconds = measure(bench, given=True)
        lines.append(row(dataset, "kept", kept, seconds))
        print(lines[-1], flush=True)
        found, seconds = measure(bench, given=False)
        start = time.perf_counter()
        voted = break_ties(question_shapes(bench.train), found, encode)
        seconds += time.perf_counter() - start
        (by_name, holding), (by_vote, _) = agreement(found, kept), agreement(voted, kept)
        lines.append(row(dataset, f"removed ({GIVEN[dataset]})", voted, seconds, agree=f"{by_name} / {by_vote} of {holding}"))
        print(lines[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
