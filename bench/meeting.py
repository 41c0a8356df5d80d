"""Where a conjunction's topic entities meet, measured without an LLM on CWQ-mini dev questions.

A question naming several entities ("the David Slade film that starred Taylor Lautner") is answered
where the paths from all of them meet. The walk ranks those meetings first (`programs.ranking.rank`); which of
them answers? For every `cwq_mini_dev` row whose own graph holds two topic entities or more, each
node is given its distance from each topic entity (edges walked either way, the profile's hidden
relations left out, 3 hops at most), and the nodes every topic entity reaches are ranked by those
distances summed (the nearest meeting first). Reported: how often a gold answer is among the
meetings at all, how many meetings there are, the Hits@1 of a pick among all of them and among the
nearest ones, and how often one meeting is nearer than every other and is a gold answer (what lets
the walk answer there without asking the model). No test question is read and no LLM is called.

    .venv/bin/python -m bench.meeting [--out DIR]
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

import dspy  # noqa: E402

from kgqa.data.rog import load_rog  # noqa: E402
from kgqa.kg.profiles import ROG  # noqa: E402
from kgqa.optimizers.labels import gold_among, hops_from  # noqa: E402

CWQ_MINI = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cwq_mini"
LONGEST = 3


def meetings(example: dspy.Example) -> dict[str, int] | None:
    """Every node all the example's topic entities reach in its own graph, with the hops summed over
    them; None when fewer than two topic entities are in the graph."""
    distances = hops_from(example, skips=ROG.skips, longest=LONGEST)
    if len(distances) < 2:
        return None
    common = set.intersection(*(set(reached) for reached in distances.values())) - set(distances)
    return {node: sum(reached[node] for reached in distances.values()) for node in common}


@dataclass(frozen=True)
class Score:
    questions: int  # rows with two topic entities or more in their graph
    met: int  # ... where the topic entities meet at all
    gold_met: int  # ... and a gold answer is one of the meetings
    meetings: float  # meetings per question of gold_met
    pick_any: float  # Hits@1 of a pick among all meetings (their gold share), over gold_met
    nearest_holds_gold: float  # a gold answer among the nearest meetings, over gold_met
    pick_nearest: float  # Hits@1 of a pick among the nearest meetings, over gold_met
    one_nearest: int  # questions of `met` where one meeting is nearer than every other
    one_nearest_gold: float  # ... and it is a gold answer, over one_nearest


def score(examples: Iterable[dspy.Example]) -> Score:
    questions = met = gold_met = one = one_gold = 0
    size = pick_any = holds = pick_nearest = 0.0
    for example in examples:
        meets = meetings(example)
        if meets is None:
            continue
        questions += 1
        if not meets:
            continue
        met += 1
        nearest = [n for n, hops in meets.items() if hops == min(meets.values())]
        if len(nearest) == 1:
            one += 1
            one_gold += gold_among(example, nearest)
        gold = {n for n in meets if gold_among(example, [n])}
        if not gold:
            continue
        gold_met += 1
        size += len(meets)
        pick_any += len(gold) / len(meets)
        holds += bool(gold & set(nearest))
        pick_nearest += len(gold & set(nearest)) / len(nearest)
    n = max(gold_met, 1)
    return Score(questions, met, gold_met, size / n, pick_any / n, holds / n, pick_nearest / n, one, one_gold / max(one, 1))


def table(s: Score) -> str:
    return "\n".join([
        "| dev rows with >= 2 topic entities | they meet | a gold answer among the meetings | meetings (mean) "
        "| Hits@1, any meeting | gold among the nearest | Hits@1, a nearest meeting | one meeting nearest | it is gold |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {s.questions} | {s.met} | {s.gold_met} | {s.meetings:.1f} | {s.pick_any:.3f} | {s.nearest_holds_gold:.3f} "
        f"| {s.pick_nearest:.3f} | {s.one_nearest} | {s.one_nearest_gold:.3f} |",
    ]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cwq-mini", type=Path, default=CWQ_MINI)
    parser.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "runs" / "meeting-dev")
    args = parser.parse_args(argv)
    text = table(score(load_rog(args.cwq_mini / "cwq_mini_dev.jsonl.gz")))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.md").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
