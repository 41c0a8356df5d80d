"""Runner (not part of the package), from the repository root: a compiled program given the
candidate ranking that `kgqa compile` now fits, without compiling the rest again (~4 min, not ~12; no
LLM). The program is copied to OUT and `ranking.json` written beside it by the function compiling
calls (`optimizers.teleprompters.fit_ranker`, with `Budget(ranking_questions=300)`), on the same
trainset in the same order: the rest of a fresh compile is the old one, since no other compiled part
changed.

    .venv/bin/python bench/results/learned-ranking-cwq-dev/fit.py PROGRAM OUT cwq-mini SPLIT SEED
    .venv/bin/python bench/results/learned-ranking-cwq-dev/fit.py PROGRAM OUT metaqa dev SEED

The benches are `bench.accuracy`'s: CWQ-mini 100 questions and 1,500 compile rows, MetaQA 30 a hop and
1,500 compile questions.
"""
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, ".")  # the repository root
from bench.accuracy import CWQ_MINI, METAQA, cwq_bench, metaqa_bench  # noqa: E402
from kgqa.optimizers.labels import interleave_depths, labeled_teacher  # noqa: E402
from kgqa.optimizers.teleprompters import fit_ranker  # noqa: E402
from kgqa.programs.ranking import FEATURES  # noqa: E402
from kgqa.programs.saving import RANKING_FILE, load_program  # noqa: E402

source, out, dataset, split, seed = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
bench = metaqa_bench(30, 1500, seed, METAQA) if dataset == "metaqa" else cwq_bench(100, 1500, seed, CWQ_MINI, split=split)
shutil.copytree(source, out)
program = load_program(out, bench.kg)
train = interleave_depths(bench.train)  # as compile_program orders it
ranker = fit_ranker(program, train, teacher=labeled_teacher(bench.train, kg=bench.kg),
                    questions=300, skips=bench.kg.profile.skips)
(out / RANKING_FILE).write_text(json.dumps(ranker.to_dict(), ensure_ascii=False))
print(f"fitted on {ranker.questions} walks;", ", ".join(f"{name} {w:+.2f}" for name, w in zip(FEATURES, ranker.weights)))
