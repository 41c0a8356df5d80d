"""A step of the walk: one `dspy.Module` that says why it has nothing to decide, or decides.

The walk runs each step through `Step.run`, which records the outcome in the trace (ran; skipped,
and why; fell back, and why), so no step keeps its own bookkeeping."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import dspy

from kgqa.programs.base import WalkState

STATUSES = ("ran", "skipped", "fell_back")


@dataclass(frozen=True)
class Outcome:
    """What a step gave (`value`) and how: it `ran`, was `skipped` (nothing to decide) or `fell_back`
    (its reply was unusable); `why` says which reason, where there is one."""

    value: Any
    status: str = "ran"
    why: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"a step's status is one of {', '.join(STATUSES)}, not {self.status!r}")


class Step(dspy.Module):
    """One step of the walk. `skip` says why it has nothing to decide for its inputs (None: it
    decides), `skipped` is what it gives then, and `forward` decides, returning an `Outcome`."""

    name: ClassVar[str]  # the step's name in the trace and in `WalkConfig`'s switches

    def skip(self, state: WalkState, *inputs: Any) -> str | None:
        return None

    def skipped(self, state: WalkState, *inputs: Any) -> Any:
        raise NotImplementedError

    def forward(self, state: WalkState, *inputs: Any) -> Outcome:
        raise NotImplementedError

    def run(self, state: WalkState, *inputs: Any) -> Any:
        """The step's value for `inputs`, its outcome recorded in `state.trace`."""
        why = self.skip(state, *inputs)
        outcome = Outcome(self.skipped(state, *inputs), "skipped", why) if why is not None else self(state, *inputs)
        state.trace.record(self.name, outcome.status, outcome.why)
        return outcome.value
