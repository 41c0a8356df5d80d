"""The dev table of this directory's README: the linker compiled on two thirds of the CWQ-mini dev rows
and scored on the other third, for three splits and four seeds each, with one threshold for every
candidate ("one": no candidate counts as a common word) and with the common words' own ("two").

    .venv/bin/python bench/results/linking-common-words/dev.py [SPLIT ...]   # ~8 min a split, no LLM
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from bench.linking import SHARED, as_rows, cwq_rows, cwq_split, knowledge_graph, link_all, metrics  # noqa: E402
from kgqa.kg.names import LabelVectors  # noqa: E402
from kgqa.kg.profiles import ROG  # noqa: E402
from kgqa.programs import linking  # noqa: E402
from kgqa.programs.embedder import Embedder  # noqa: E402


class Remembered(LabelVectors):
    """The store's names and their vectors, each question's mentions found once (the spans' vectors
    are the slow part, and every split and seed links the same questions)."""

    def __init__(self, vectors: LabelVectors):
        self.__dict__.update(vectors.__dict__)
        self.found = {}

    def mentions(self, question):
        if question not in self.found:
            self.found[question] = super().mentions(question)
        return self.found[question]


def main(splits: list[int]) -> None:
    dev, test, triples = cwq_rows(SHARED / "cwq_mini")
    kg, _ = knowledge_graph("embedded", triples, ROG, Path("."))
    vectors = kg.name_index(encode=Embedder().encode)
    index = Remembered(vectors)
    common = linking.is_common_word
    print("| split | seed | one threshold | exact | two thresholds (names, common words) | exact |")
    print("|---|---|---|---|---|---|")
    for split in splits:
        train, samples = cwq_split(dev, test, split="dev", size=0, seed=split)
        held = samples["dev held out"]
        for seed in range(4):
            row = []
            for two in (False, True):
                linking.is_common_word = common if two else (lambda candidate: False)
                linker = linking.Linker.fit(train, index, graph=kg, seed=seed)
                exact = metrics(link_all(linker, index, as_rows(held), graph=kg))["exact"]
                row += [f"{linker.threshold}" + (f", {linker.common_threshold}" if two else ""), f"{exact:.4f}"]
            linking.is_common_word = common
            print(f"| {split} | {seed} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [0, 1, 2])
