"""Reflection: at a dead end, the entities passed one hop before to resume from (Plan-on-Graph)."""

from __future__ import annotations

from dataclasses import dataclass

from kgqa.programs import render
from kgqa.programs.state import Asking, Ledger, Reach
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.programs.trails import Trail
from kgqa.signatures import Reflect


@dataclass(frozen=True)
class DeadEnd:
    """A hop that reached nothing: the trails it went from (`trails`), the entities passed a hop
    before that the walk has not stood on (`earlier`, by label), and the reflections made so far."""

    trails: list[Trail]
    earlier: dict[str, Trail]
    made: int

    @classmethod
    def of(cls, reach: Reach, seen: dict[str, Trail], made: int) -> DeadEnd:
        """The dead end of hop `reach`, its earlier entities read off `seen` (the walk's first trail to each)."""
        return cls(list(reach.frontier), earlier(seen, list(reach.frontier), reach.depth), made)


class Reflection(LMStep):
    """Run only at a dead end (a hop that reached nothing): the entities passed one hop before that
    the walk has not stood on, to take the hop again from; at most `max_reflections` a question.
    Its value: the trails to resume from, and the reflections made. Falls back to the entities most
    like the question."""

    name, usage, signature = "reflection", "reflect", Reflect

    def skip(self, asking: Asking, given: DeadEnd) -> str | None:
        if given.made >= asking.config.max_reflections:
            return f"{given.made} reflections made: the walk stops here"
        if not given.earlier:
            return "no entity passed a hop before: the walk stops here"
        return None

    def skipped(self, asking: Asking, given: DeadEnd) -> tuple[list[Trail], int]:
        return [], given.made

    def forward(self, asking: Asking, ledger: Ledger, given: DeadEnd) -> Outcome:
        earlier, made = given.earlier, given.made + 1
        if len(earlier) == 1:
            return Outcome((list(earlier.values()), made), "skipped", "one entity passed a hop before: the walk resumes from it")
        picked, fell_back = self.pick(
            asking, ledger, offered="earlier_entities", chosen="entities_to_resume", candidates=list(earlier),
            limit=asking.config.beam_width, query=asking.question, question=asking.question, plan=list(asking.hop_targets),
            dead_end=render.several([render.node_label(t.end) for t in given.trails]),
        )
        return Outcome(([earlier[label] for label, _ in picked], made), "fell_back" if fell_back else "ran")


def earlier(seen: dict[str, Trail], dead_end: list[Trail], depth: int) -> dict[str, Trail]:
    """The entities the walk passed one hop before the dead end at hop `depth` and has not stood on, by label."""
    stood = {t.end.id for t in dead_end}
    return {render.node_label(t.end): t for e, t in seen.items()
            if e not in stood and t.steps == depth - 1 and not t.end.literal}
