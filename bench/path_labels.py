"""Where the compile's gold paths come from, per dataset: the share of training questions labeled
by paths the data gives that hold in the program's graph, by paths found there from the answers
alone (`optimizers.paths`), and by none; with the given paths as they are, and removed (what a
user who brings questions and answers has). With them removed, how often the first found path (the
one the teacher walks) is one of the given paths that hold, where those hold: with ties between
equally fitting paths broken by relation name, and by the vote of the training questions worded
alike (`optimizers.paths.break_ties`, as compiling breaks them). No LLM is called.

The questions are the compile samples `bench.reproduce` rows compile on, over the same graphs:
CWQ-mini's 1,500 dev questions of seed `--seed` over the store of its row (`bench.accuracy.cwq_bench`),
MetaQA's 1,500 over its whole KB (`metaqa_bench`). `reachable` bounds what any labeler of chains
could find: the questions labeled, and those whose own graph (RoG rows keep theirs) holds a gold
answer other than a topic entity within 3 edges of one, whichever way each edge goes
(`bench.accuracy.answerable` without `topics`: the README's answerable@3 counts a topic entity that
is its own answer too). With `--dev N`,
CWQ-mini's questions are N seeded rows of its dev file instead, over the union of their graphs:
`--dev 300` is the sample issue 83's baseline table was measured on.

    .venv/bin/python -m bench.path_labels [--datasets cwq-mini,metaqa] [--train 1500] [--seed 0]
    .venv/bin/python -m bench.path_labels --datasets cwq-mini --dev 300
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from pathlib import Path

from kgqa.env import stay_offline

stay_offline()

from bench.accuracy import CWQ_MINI, METAQA, Bench, answerable, cwq_bench, metaqa_bench, union_graph  # noqa: E402
from kgqa.data.rog import load_rog  # noqa: E402
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


def row(dataset: str, given: str, labels: list[PathLabel], seconds: float, *, reachable: float, agree: str = "-") -> str:
    counts = Counter(label.source for label in labels)
    shares = {source: counts[source] / len(labels) for source in SOURCES}
    lengths = ", ".join(f"{n}: {c}" for n, c in sorted(Counter(len(lb.paths[0]) for lb in labels if lb.paths).items()))
    return (f"| {dataset} | {given} | {len(labels)} | {shares['given'] + shares['found']:.3f} | {reachable:.3f} | "
            f"{shares['given']:.3f} | {shares['found']:.3f} | {shares['none']:.3f} | {sum(lb.tied > 1 for lb in labels)} | "
            f"{lengths} | {agree} | {seconds:.0f} |")


def dev_bench(size: int, seed: int) -> Bench:
    """`size` seeded rows of CWQ-mini's dev file as the questions to label, over the union of their graphs."""
    rows = random.Random(seed).sample(list(load_rog(CWQ_MINI / "cwq_mini_dev.jsonl.gz")), size)
    return Bench("cwq-mini", union_graph(rows), {}, rows)


def agreement(found: list[PathLabel], kept: list[PathLabel]) -> tuple[int, int]:
    """How many questions whose given paths hold have one of them as their first found path, of how many."""
    holding = [(f, k) for f, k in zip(found, kept) if k.source == "given"]
    return sum(bool(f.paths) and f.paths[0] in k.paths for f, k in holding), len(holding)


def rows(bench: Bench, encode) -> list[str]:
    """The table's two rows for one dataset: its questions labeled with their given paths kept, and
    removed (ties broken by the vote of the questions worded alike, `encode`'s sentence vectors)."""
    kept, seconds = measure(bench, given=True)
    found, found_seconds = measure(bench, given=False)
    reach = sum(label.source != "none" or answerable(ex, topics=False) for label, ex in zip(found, bench.train)) / len(found)
    start = time.perf_counter()
    voted = break_ties(question_shapes(bench.train), found, encode)
    seconds_removed = found_seconds + time.perf_counter() - start
    (by_name, holding), (by_vote, _) = agreement(found, kept), agreement(voted, kept)
    return [row(bench.dataset, "kept", kept, seconds, reachable=reach),
            row(bench.dataset, f"removed ({GIVEN[bench.dataset]})", voted, seconds_removed, reachable=reach,
                agree=f"{by_name} / {by_vote} of {holding}")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="cwq-mini,metaqa")
    parser.add_argument("--train", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dev", type=int, default=0, help="CWQ-mini: this many seeded dev rows instead of the compile sample")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here (markdown)")
    args = parser.parse_args(argv)
    lines = ["| dataset | given paths | questions | labeled | reachable | by given paths | by found paths | none | tied | first path's "
             "relations | first found path a given one: ties by name / by vote | s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    encode = Embedder().encode
    for dataset in args.datasets.split(","):
        if dataset == "cwq-mini":
            bench = dev_bench(args.dev, args.seed) if args.dev else cwq_bench(0, args.train, args.seed, CWQ_MINI)
        else:
            bench = metaqa_bench(0, args.train, args.seed, METAQA)
        for line in rows(bench, encode):
            lines.append(line)
            print(line, flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
