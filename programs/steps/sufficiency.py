"""Answer sufficiency: do the best paths reach the answer, or stop a hop short?"""

from __future__ import annotations

from kgqa.programs.ranking import Candidate, Ranked
from kgqa.programs.state import Asking, Ledger
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.signatures import CheckSufficiency

GOES_ON = "the chain prior is sure of a longer chain the walk stopped on"


class Sufficiency(LMStep):
    """True (walk one hop further) only when the model says the best `sufficiency_shown` paths stop
    short and the walk may still go deeper. Nothing to decide where the walk cannot or need not go
    further, or where the compiled chain prior is sure it goes on (`short`, worked out with the
    ranking: one hop further, no call). Falls back to the plan's hops."""

    name, usage, signature = "sufficiency", "check_sufficiency", CheckSufficiency

    def skip(self, asking: Asking, given: Ranked) -> str | None:
        return given.short

    def skipped(self, asking: Asking, given: Ranked) -> bool:
        return given.short == GOES_ON

    def forward(self, asking: Asking, ledger: Ledger, given: Ranked) -> Outcome:
        out = self.ask(asking, ledger, question=asking.question, memory_notes=list(given.notes),
                       best_paths=[c.path for c in given.candidates[: asking.config.sufficiency_shown]])
        verdict = getattr(out, "evidence_sufficient", None) if out is not None else None
        if not isinstance(verdict, bool):
            return Outcome(False, "fell_back", "no usable verdict: the plan's hops only")
        return Outcome(not verdict, "ran", "sufficient" if verdict else "one hop short")


def short(asking: Asking, candidates: list[Candidate], *, depth: int, extensions: int, onward: bool = False) -> str | None:
    """Why sufficiency has nothing to decide: the walk cannot or need not go further, or goes on
    (`GOES_ON`: `onward`, the chain prior's sure chain goes on from trails the walk reached); None
    when it asks the model. `depth`: the hops walked, `extensions` of them past the plan."""
    config = asking.config
    if not config.sufficiency:
        return "switched off: the plan's hops only"
    if not candidates:
        return "nothing reached"
    if depth >= config.depth or extensions >= config.max_extensions:
        return "no hop left to add"
    if onward:
        return GOES_ON
    if depth > len(asking.hop_targets):
        return "the walk already retrieved a hop past the plan"
    if candidates[0].named:
        return "the best path ends by the relation the plan's last hop names"
    return None
