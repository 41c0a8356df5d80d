"""Reflection: at a dead end, the entities passed one hop before to resume from (Plan-on-Graph)."""

from __future__ import annotations

from kgqa.programs import render
from kgqa.programs.base import WalkState
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.programs.trails import Trail
from kgqa.signatures import Reflect


class Reflection(LMStep):
    """Run only at a dead end (a hop that reached nothing): the entities passed one hop before that
    the walk has not stood on, to take the hop again from; at most `max_reflections` a question.
    Falls back to the entities most like the question."""

    name, usage, signature = "reflection", "reflect", Reflect

    def run(self, state: WalkState, dead_end: list[Trail]) -> list[Trail]:
        """The trails to resume from after the `dead_end`, chosen among `earlier`'s."""
        return super().run(state, dead_end, earlier(state, dead_end))

    def skip(self, state: WalkState, dead_end: list[Trail], earlier: dict[str, Trail]) -> str | None:
        if state.trace.reflections >= state.config.max_reflections:
            return f"{state.trace.reflections} reflections made: the walk stops here"
        if not earlier:
            return "no entity passed a hop before: the walk stops here"
        if len(earlier) == 1:
            return "one entity passed a hop before: the walk resumes from it"
        return None

    def skipped(self, state: WalkState, dead_end: list[Trail], earlier: dict[str, Trail]) -> list[Trail]:
        if len(earlier) != 1 or state.trace.reflections >= state.config.max_reflections:
            return []
        state.trace.reflections += 1
        return list(earlier.values())

    def forward(self, state: WalkState, dead_end: list[Trail], earlier: dict[str, Trail]) -> Outcome:
        state.trace.reflections += 1
        picked, fell_back = self.pick(
            state, offered="earlier_entities", chosen="entities_to_resume", candidates=list(earlier),
            limit=state.config.beam_width, query=state.question, question=state.question, plan=state.hop_targets,
            dead_end=render.several([render.node_label(t.end) for t in dead_end]),
        )
        return Outcome([earlier[label] for label, _ in picked], "fell_back" if fell_back else "ran")


def earlier(state: WalkState, dead_end: list[Trail]) -> dict[str, Trail]:
    """The entities the walk passed one hop before the dead end and has not stood on, by label."""
    stood = {t.end.id for t in dead_end}
    return {render.node_label(t.end): t for e, t in state.seen.items()
            if e not in stood and t.steps == state.depth - 1 and not t.end.literal}
