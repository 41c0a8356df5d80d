"""All CWQ-mini test questions linked by linkers compiled on every dev row with the seeds given
(`bench.linking` compiles with seed 0): how far compiling again moves the test numbers. ~8 min a seed.

    .venv/bin/python bench/results/linking-out-relations/seeds.py 1,2,3
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from bench.linking import SHARED, as_rows, cwq_rows, knowledge_graph, link_all, metrics  # noqa: E402
from kgqa.kg.profiles import ROG  # noqa: E402
from kgqa.programs import linking  # noqa: E402
from kgqa.programs.embedder import Embedder  # noqa: E402

dev, test, triples = cwq_rows(SHARED / "cwq_mini")
kg, _ = knowledge_graph("embedded", triples, ROG, Path("."))
vectors = kg.name_index(encode=Embedder().encode)
for seed in [int(a) for a in sys.argv[1].split(",")]:
    linker = linking.Linker.fit(dev, vectors, graph=kg, seed=seed)
    m = metrics(link_all(linker, vectors, as_rows(test), graph=kg))
    print(f"seed {seed}: thresholds ({linker.threshold}, {linker.common_threshold}) " + ", ".join(f"{k} {m[k]:.4f}" for k in ("exact", "at_least_one", "nothing", "precision", "recall")), flush=True)
