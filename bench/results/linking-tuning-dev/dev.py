"""The dev table of this directory's README: the linker compiled on two thirds of the CWQ-mini dev rows
and scored on the other third, with one of its settings changed (a module constant of
`kgqa.programs.linking`), for the splits and seeds given. Every question's mentions are found once
(the first compile, ~3.5 min); each further compile and scoring takes ~30 s. No LLM call.

    .venv/bin/python bench/results/linking-tuning-dev/dev.py base,fine,folds5 0,1,2 0,1
"""
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "linking-common-words"))

from dev import Remembered  # noqa: E402  (each question's mentions found once)

from bench.linking import SHARED, as_rows, cwq_rows, cwq_split, knowledge_graph, link_all, metrics  # noqa: E402
from kgqa.kg.profiles import ROG  # noqa: E402
from kgqa.programs import linking  # noqa: E402
from kgqa.programs.embedder import Embedder  # noqa: E402

# name -> the module constants of kgqa.programs.linking it sets
VARIANTS = {
    "base": {},  # as shipped
    "fine": {"THRESHOLDS": tuple(round(0.05 * i, 2) for i in range(1, 17))},  # thresholds tried in steps of 0.05
    "folds5": {"FOLDS": 5},
    "h32": {"HIDDEN_UNITS": 32},
    "a1": {"L2": 0.1},
    "lex2": {"LEXICON_MIN_QUESTIONS": 2},
    "lexp4": {"LEXICON_MIN_PRECISION": 0.4},
    "lexp7": {"LEXICON_MIN_PRECISION": 0.7},
    "share1": {"KEPT_SHARE_MIN": 1},
}


def main(names: list[str], splits: list[int], seeds: list[int]) -> None:
    dev, test, triples = cwq_rows(SHARED / "cwq_mini")
    kg, _ = knowledge_graph("embedded", triples, ROG, Path("."))
    index = Remembered(kg.name_index(encode=Embedder().encode))
    for name in names:
        saved = {key: getattr(linking, key) for key in VARIANTS[name]}
        for key, value in VARIANTS[name].items():
            setattr(linking, key, value)
        exacts = []
        for split in splits:
            train, samples = cwq_split(dev, test, split="dev", size=0, seed=split)
            for seed in seeds:
                linker = linking.Linker.fit(train, index, graph=kg, seed=seed)
                m = metrics(link_all(linker, index, as_rows(samples["dev held out"]), graph=kg))
                exacts.append(m["exact"])
                print(f"{name} split {split} seed {seed}: exact {m['exact']:.4f}, >= 1 gold {m['at_least_one']:.4f}, "
                      f"thresholds ({linker.threshold}, {linker.common_threshold})", flush=True)
        print(f"== {name}: mean exact {statistics.mean(exacts):.4f} over {len(exacts)}", flush=True)
        for key, value in saved.items():
            setattr(linking, key, value)


if __name__ == "__main__":
    main(sys.argv[1].split(","), [int(a) for a in sys.argv[2].split(",")], [int(a) for a in sys.argv[3].split(",")])
