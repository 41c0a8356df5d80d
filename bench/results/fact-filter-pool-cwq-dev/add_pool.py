"""Analysis runner (not part of the package), run from the repository root: a copy of a compiled CWQ-mini
program whose named steps get a pool of the gold-path teacher's decisions on the first 300 training
questions (`kgqa.optimizers.labels.step_demos`, as `kgqa compile --step-demos 300` makes for every step).

    .venv/bin/python bench/results/fact-filter-pool-cwq-dev/add_pool.py SOURCE_PROGRAM OUT_PROGRAM SPLIT SEED filter_facts
"""
import shutil
import sys
from pathlib import Path

sys.path.insert(0, ".")  # the repository root
import dspy  # noqa: E402

from bench.accuracy import CWQ_MINI, cwq_bench  # noqa: E402
from kgqa.lm.adapter import ConstrainedJSONAdapter  # noqa: E402
from kgqa.optimizers.labels import labeled_teacher, step_demos  # noqa: E402
from kgqa.programs.saving import load_program  # noqa: E402

if __name__ == "__main__":
    source, out, split, seed, steps = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5].split(",")
    bench = cwq_bench(100, 1500, seed, CWQ_MINI, split=split)
    program = load_program(source, bench.kg)
    with dspy.context(adapter=ConstrainedJSONAdapter()):
        pools = step_demos(program, bench.train, teacher=labeled_teacher(bench.train, kg=bench.kg), limit=300)
    shutil.copytree(source, out)
    for step in steps:
        getattr(program, step).demos = pools[step]
        print(step, len(pools[step]), "demos")
    program.save(str(out / "program.json"))  # the other files (config, linker, chain prior) as compiled
