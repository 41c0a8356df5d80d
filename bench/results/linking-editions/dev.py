"""The dev table of this directory's README: the linker compiled on two thirds of the CWQ-mini dev rows
and scored on the other third, for three splits and two seeds each, with the dated-name rule
(`linking._edition_of`) off and on; every question whose links it changes is printed.

    .venv/bin/python bench/results/linking-editions/dev.py [SPLIT ...]   # ~13 min a split, no LLM
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "linking-common-words"))

from dev import Remembered  # noqa: E402  (each question's mentions found once)

from bench.linking import SHARED, as_rows, cwq_rows, cwq_split, knowledge_graph, link_all, metrics  # noqa: E402
from kgqa.kg.profiles import ROG  # noqa: E402
from kgqa.programs import linking  # noqa: E402
from kgqa.programs.embedder import Embedder  # noqa: E402


def main(splits: list[int]) -> None:
    dev, test, triples = cwq_rows(SHARED / "cwq_mini")
    kg, _ = knowledge_graph("embedded", triples, ROG, Path("."))
    index = Remembered(kg.name_index(encode=Embedder().encode))
    rule = linking._edition_of
    print("| split | seed | rule off: exact, >= 1 gold (thresholds) | rule on: exact, >= 1 gold (thresholds) |")
    print("|---|---|---|---|")
    changed = []
    for split in splits:
        train, samples = cwq_split(dev, test, split="dev", size=0, seed=split)
        held = samples["dev held out"]
        for seed in (0, 1):
            row, links = [], []
            for on in (False, True):
                linking._edition_of = rule if on else (lambda *args: False)
                linker = linking.Linker.fit(train, index, graph=kg, seed=seed)
                scored = link_all(linker, index, as_rows(held), graph=kg)
                m = metrics(scored)
                row.append(f"{m['exact']:.4f}, {m['at_least_one']:.4f} ({linker.threshold}, {linker.common_threshold})")
                links.append({s.id: s for s in scored})
            linking._edition_of = rule
            print(f"| {split} | {seed} | " + " | ".join(row) + " |", flush=True)
            changed += [(split, seed, s.question, s.gold, links[0][i].linked, s.linked)
                        for i, s in links[1].items() if set(s.linked) != set(links[0][i].linked)]
    print("\nLinks changed (split, seed, question, gold, rule off, rule on):")
    for change in changed:
        print("-", change)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [0, 1, 2])
