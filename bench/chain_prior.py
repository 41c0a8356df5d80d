"""The chain prior's labels, measured without an LLM on CWQ-mini dev questions.

The prior (`programs/chains.py`) ranks a question's candidate answers by the relation chains its
nearest training questions were answered by. Which chains a training question teaches is its label:
RoG's `ground_paths` as the data gives them (shortest paths in the whole of Freebase), those of
them that reach a gold answer in the row's own graph, or the shortest chains to a gold answer in the
row's own graph (what compiling used before it labeled questions in the program's graph,
`optimizers.paths`). For each labeling the prior is fitted on
`--train` dev questions, drawn as `bench.accuracy --split dev` draws its compile sample
(`random.Random("compile-SEED")`), and scored on `--size` other dev questions
(`random.Random(SEED)`): of the relation chains (at most 3 relations, the profile's hidden ones
left out) that each scored question's own graph offers from its topic entities, is the chain the
prior weighs most one that reaches a gold answer? No test question is read and no LLM is called.

    .venv/bin/python -m bench.chain_prior [--size 300] [--train 1500] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

import dspy  # noqa: E402

from kgqa.data.rog import load_rog  # noqa: E402
from kgqa.evaluate.metrics import gold_relation_paths  # noqa: E402
from kgqa.kg.profiles import ROG  # noqa: E402
from kgqa.optimizers.labels import gold_among, graph_chains  # noqa: E402
from kgqa.programs.chains import ChainPrior  # noqa: E402
from kgqa.programs.embedder import Embedder  # noqa: E402

CWQ_MINI = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cwq_mini"
Chains = dict[tuple[str, ...], set[str]]


def reached(example: dspy.Example) -> Chains:
    """Every chain the example's own graph offers from its topic entities, with the nodes it ends at."""
    offered: Chains = {}
    for layer in graph_chains(example, skips=ROG.skips):
        offered.update(layer)
    return offered


def holding_ground_paths(example: dspy.Example) -> list[list[str]]:
    """RoG's ground paths that reach a gold answer in the row's own graph."""
    offered = reached(example)
    return [path for path in gold_relation_paths(example) if gold_among(example, offered.get(tuple(path), set()))]


def shortest_hits(example: dspy.Example) -> list[list[str]]:
    """The shortest chains of the example's own graph that reach a gold answer."""
    for layer in graph_chains(example, skips=ROG.skips):
        hits = [chain for chain, ends in layer.items() if gold_among(example, ends)]
        if hits:
            return [list(chain) for chain in sorted(hits)]
    return []


LABELINGS: dict[str, Callable[[dspy.Example], list[list[str]]]] = {
    "RoG ground_paths": gold_relation_paths,
    "ground_paths that hold in the row's graph": holding_ground_paths,
    "shortest chains to a gold answer in the row's graph": shortest_hits,
}


@dataclass(frozen=True)
class Score:
    labeled: int  # training questions with a label
    first: float  # scored questions whose heaviest voted chain reaches a gold answer
    first3: float  # ... one of the 3 heaviest
    voted: float  # ... whose graph offers any chain the prior votes for


def score(prior: ChainPrior, scored: Sequence[dspy.Example], offered: Sequence[Chains], encode: Callable) -> Score:
    first = first3 = voted = 0
    for example, chains in zip(scored, offered):
        votes = prior.votes(example.question, encode)
        ranked = sorted((c for c in chains if votes.chain(c) > 0), key=lambda c: (-votes.chain(c), c))
        good = [gold_among(example, chains[c]) for c in ranked]
        first += bool(good) and good[0]
        first3 += any(good[:3])
        voted += bool(ranked)
    n = max(len(scored), 1)
    return Score(len(prior.questions), first / n, first3 / n, voted / n)


def table(scores: dict[str, Score], size: int) -> str:
    lines = ["| labels of the training questions | labeled | heaviest chain reaches gold | in the 3 heaviest | any voted chain offered |",
             "|---|---|---|---|---|"]
    lines += [f"| {name} | {s.labeled} | {s.first:.3f} | {s.first3:.3f} | {s.voted:.3f} |" for name, s in scores.items()]
    return "\n".join(lines) + f"\n\n{size} scored dev questions.\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=300, help="dev questions scored")
    parser.add_argument("--train", type=int, default=1500, help="dev questions the prior is fitted on")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cwq-mini", type=Path, default=CWQ_MINI)
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "runs" / "chain-labels-dev")
    args = parser.parse_args(argv)
    dev = list(load_rog(args.cwq_mini / "cwq_mini_dev.jsonl.gz"))
    train = random.Random(f"compile-{args.seed}").sample(dev, args.train)
    taken = {ex.id for ex in train}
    scored = random.Random(args.seed).sample([ex for ex in dev if ex.id not in taken], args.size)
    offered = [reached(ex) for ex in scored]
    embedder = Embedder()
    scores = {}
    for name, label in LABELINGS.items():
        start = time.perf_counter()
        prior = ChainPrior.fit((ex.question, label(ex)) for ex in train)
        scores[name] = score(prior, scored, offered, embedder.encode)
        print(f"{name}: {scores[name]} ({time.perf_counter() - start:.0f} s)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.md").write_text(table(scores, len(scored)))
    print(table(scores, len(scored)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
