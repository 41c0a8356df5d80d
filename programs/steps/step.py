"""A step of the walk: one `dspy.Module` that says why it has nothing to decide, or decides.

A step reads the question as the walk knows it (`Asking`, frozen) and the one typed input it is
handed (`given`: a hop's `Reach`, the `Ranked` candidates, ...), and nothing else. The walk runs each step through `Step.run`, which records the outcome in the
question's `Ledger` (ran; skipped, and why; fell back, and why; what the step shows of its work)
and counts the fallbacks, so no step keeps its own bookkeeping. An `LMStep` holds its one
predictor (`predict`) and asks the LM through the program's `LMCalls`, which count the call in
the ledger."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import dspy

from kgqa.programs.state import Asking, Ledger
from kgqa.programs.steps.calls import LMCalls

STATUSES = ("ran", "skipped", "fell_back")


@dataclass(frozen=True)
class Outcome:
    """What a step gave (`value`) and how: it `ran`, was `skipped` (nothing to decide) or `fell_back`
    (its reply was unusable); `why` says which reason, where there is one. `traced`: trace fields
    the step fills (the plan's raw reply, the facts kept), written by `Step.run`."""

    value: Any
    status: str = "ran"
    why: str = ""
    traced: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"a step's status is one of {', '.join(STATUSES)}, not {self.status!r}")


class Step(dspy.Module):
    """One step of the walk. `skip` says why it has nothing to decide for its input (None: it
    decides), `skipped` is what it gives then, and `forward` decides, returning an `Outcome`; the
    three take the same input (`given`: one typed value, None for a step that reads only the
    question), and `forward` the ledger its LM calls are counted in too."""

    name: ClassVar[str]  # the step's name in the trace and in `WalkConfig`'s switches

    def skip(self, asking: Asking, given: Any) -> str | None:
        return None

    def skipped(self, asking: Asking, given: Any) -> Any:
        raise NotImplementedError

    def forward(self, asking: Asking, ledger: Ledger, given: Any) -> Outcome:
        raise NotImplementedError

    def run(self, asking: Asking, ledger: Ledger, given: Any = None) -> Any:
        """The step's value for `given`, its outcome recorded in the `ledger`'s trace."""
        why = self.skip(asking, given)
        outcome = Outcome(self.skipped(asking, given), "skipped", why) if why is not None else self(asking, ledger, given)
        if outcome.status == "fell_back":
            ledger.trace.fallbacks += 1
        ledger.trace.record(self.name, outcome.status, outcome.why)
        for name, value in outcome.traced.items():
            setattr(ledger.trace, name, value)
        return outcome.value


class LMStep(Step):
    """A step that asks the LM: its signature's one predictor (`predict`, what compiling tunes), and
    the program's `LMCalls`. `usage` names it in the trace's `step_usage`."""

    signature: ClassVar[type[dspy.Signature]]
    usage: ClassVar[str]

    def __init__(self, calls: LMCalls) -> None:
        super().__init__()
        self.predict = dspy.Predict(self.signature)
        self.calls = calls

    @property
    def embedder(self):
        return self.calls.embedder

    def ask(self, asking: Asking, ledger: Ledger, **inputs) -> dspy.Prediction | None:
        """One call of the predictor (`LMCalls.call`)."""
        return self.calls.call(asking, ledger, self.predict, name=self.usage, **inputs)

    def choose(self, asking: Asking, ledger: Ledger, **inputs) -> list[str] | None:
        """One checked choice among candidates (`LMCalls.choice`)."""
        return self.calls.choice(asking, ledger, self.predict, name=self.usage, **inputs)

    def pick(self, asking: Asking, ledger: Ledger, **inputs) -> tuple[list[tuple[str, float]], bool]:
        """Ranked choices with the similarity fallback (`LMCalls.pick`), and whether they fell back."""
        return self.calls.pick(asking, ledger, self.predict, name=self.usage, **inputs)
