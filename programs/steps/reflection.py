"""Reflection: at a dead end, the entities passed one hop before to resume from (Plan-on-Graph)."""

from __future__ import annotations

from kgqa.programs import render
from kgqa.programs.state import Asking, Ledger
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.programs.trails import Trail
from kgqa.signatures import Reflect


class Reflection(LMStep):
    """Run only at a dead end (a hop that reached nothing): the entities passed one hop before that
    the walk has not stood on, to take the hop again from; at most `max_reflections` a question.
    Falls back to the entities most like the question."""

    name, usage, signature = "reflection", "reflect", Reflect

    def run(self, asking: Asking, ledger: Ledger, dead_end: list[Trail], *, seen: dict[str, Trail], depth: int,
            made: int) -> list[Trail]:
        """The trails to resume from after the `dead_end` at hop `depth`, chosen among the entities
        passed a hop before (`earlier`, of the walk's first trail to each entity, `seen`); `made`:
        the reflections made so far for the question."""
        return super().run(asking, ledger, dead_end, earlier(seen, dead_end, depth), made=made)

    def skip(self, asking: Asking, dead_end: list[Trail], earlier: dict[str, Trail], *, made: int) -> str | None:
        if made >= asking.config.max_reflections:
            return f"{made} reflections made: the walk stops here"
        if not earlier:
            return "no entity passed a hop before: the walk stops here"
        return None

    def skipped(self, asking: Asking, dead_end: list[Trail], earlier: dict[str, Trail], *, made: int) -> list[Trail]:
        return []

    def forward(self, asking: Asking, ledger: Ledger, dead_end: list[Trail], earlier: dict[str, Trail], *, made: int) -> Outcome:
        if len(earlier) == 1:
            return Outcome(list(earlier.values()), "skipped", "one entity passed a hop before: the walk resumes from it",
                           {"reflections": made + 1})
        picked, fell_back = self.pick(
            asking, ledger, offered="earlier_entities", chosen="entities_to_resume", candidates=list(earlier),
            limit=asking.config.beam_width, query=asking.question, question=asking.question, plan=list(asking.hop_targets),
            dead_end=render.several([render.node_label(t.end) for t in dead_end]),
        )
        return Outcome([earlier[label] for label, _ in picked], "fell_back" if fell_back else "ran",
                       traced={"reflections": made + 1})


def earlier(seen: dict[str, Trail], dead_end: list[Trail], depth: int) -> dict[str, Trail]:
    """The entities the walk passed one hop before the dead end at hop `depth` and has not stood on, by label."""
    stood = {t.end.id for t in dead_end}
    return {render.node_label(t.end): t for e, t in seen.items()
            if e not in stood and t.steps == depth - 1 and not t.end.literal}
