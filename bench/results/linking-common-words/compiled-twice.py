"""All CWQ-mini test questions linked by two linkers compiled in one process on every dev row, seed 0:
one threshold (is_common_word switched off) and the common words' own; output: compiled-twice.txt.
    .venv/bin/python bench/results/linking-common-words/compiled-twice.py   # ~11 min, no LLM
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
common = linking.is_common_word
res = {}
for label in ("one", "two"):
    linking.is_common_word = common if label == "two" else (lambda c: False)
    linker = linking.Linker.fit(dev, vectors, graph=kg, seed=0)
    scored = link_all(linker, vectors, as_rows(test), graph=kg)
    res[label] = {s.id: (s.question, s.gold, s.linked) for s in scored}
    print(label, linker.threshold, linker.common_threshold, {k: round(v, 4) for k, v in metrics(scored).items() if k in ("exact", "at_least_one", "precision", "recall")}, flush=True)


def ex(r):
    return set(r[2]) == set(r[1])


for i in res["one"]:
    a, b = res["one"][i], res["two"][i]
    if set(a[2]) != set(b[2]):
        print("+" if ex(b) else "-" if ex(a) else " ", a[0][:80], "| gold", a[1], "| one", a[2], "| two", b[2])
