"""Where the compile's gold paths come from, per dataset: the share of training questions labeled
by paths the data gives that hold in the program's graph, by paths found there from the answers
alone (`optimizers.paths`), and by none; with the given paths as they are, and removed (what a
user who brings questions and answers has). No LLM is called.

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
from kgqa.optimizers.paths import SOURCES, label_trainset  # noqa: E402

GIVEN = {"cwq-mini": "ground_paths", "metaqa": "qtype"}  # the field that carries a dataset's given paths


def measure(bench, *, given: bool) -> dict:
    """The shares of `bench.train` by source, the paths' lengths, and the seconds labeling took."""
    field = GIVEN[bench.dataset]
    examples = bench.train if given else [ex.copy(**{field: None}) for ex in bench.train]
    start = time.perf_counter()
    labeled, counts = label_trainset(examples, bench.kg)
    seconds = time.perf_counter() - start
    lengths = Counter(len(ex.teacher_paths[0]) for ex in labeled if ex.teacher_paths)
    return {"questions": len(labeled), **{s: counts[s] / len(labeled) for s in SOURCES}, "seconds": seconds,
            "lengths": dict(sorted(lengths.items()))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="cwq-mini,metaqa")
    parser.add_argument("--train", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="also write the table here (markdown)")
    args = parser.parse_args(argv)
    lines = ["| dataset | given paths | questions | labeled | by given paths | by found paths | none | first path's relations | s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for dataset in args.datasets.split(","):
        bench = (cwq_bench(0, args.train, args.seed, CWQ_MINI) if dataset == "cwq-mini"
                 else metaqa_bench(0, args.train, args.seed, METAQA))
        for given in (True, False):
            m = measure(bench, given=given)
            lengths = ", ".join(f"{n}: {c}" for n, c in m["lengths"].items())
            lines.append(f"| {dataset} | {'kept' if given else f'removed ({GIVEN[dataset]})'} | {m['questions']} | "
                         f"{m['given'] + m['found']:.3f} | {m['given']:.3f} | {m['found']:.3f} | {m['none']:.3f} | {lengths} | "
                         f"{m['seconds']:.0f} |")
            print(lines[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
