"""A compiled program with answer sufficiency's demo pool added, as `kgqa compile` now makes it.

The pool (`optimizers.labels.sufficiency_demos`) needs the gold-path teacher's walks of the compile
questions, and nothing else the compile made changes with it: rather than compile the whole program
again, this loads a compiled CWQ-mini (or MetaQA) program, walks its compile sample (`bench.accuracy`'s, by
seed, in the order compiling walks it) under the teacher, and saves the program with the pool.

    .venv/bin/python bench/results/sufficiency-pairs-cwq/add_pool.py --program DIR --seed 0 --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

from bench.accuracy import CWQ_MINI, METAQA, TRAIN, cwq_bench, metaqa_bench  # noqa: E402
from kgqa.optimizers.labels import interleave_depths, labeled_teacher, sufficiency_demos  # noqa: E402
from kgqa.optimizers.teleprompters import Budget  # noqa: E402
from kgqa.programs.saving import load_program, read_settings, save_program  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--program", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dataset", choices=("cwq-mini", "metaqa"), default="cwq-mini")
    parser.add_argument("--train", type=int, default=1500)
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=Budget.sufficiency_demos)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.dataset == "metaqa":
        bench = metaqa_bench(30, TRAIN["metaqa"], args.seed, METAQA)  # the compile sample is drawn around the 30 per hop
    else:
        bench = cwq_bench(1, args.train, args.seed, CWQ_MINI, split=args.split)
    settings = read_settings(args.program)
    program = load_program(args.program, bench.kg, settings=settings)
    trainset = interleave_depths(bench.train)
    start = time.perf_counter()
    pool = sufficiency_demos(program, trainset, teacher=labeled_teacher(trainset, kg=bench.kg), limit=args.limit)
    program.check_sufficiency.demos = pool
    save_program(program, args.out, settings={k: v for k, v in settings.items() if k not in ("walk", "versions")})
    verdicts = [d.evidence_sufficient for d in pool]
    print(json.dumps({"demos": len(pool), "short": verdicts.count(False), "seconds": round(time.perf_counter() - start, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
