"""Answer sufficiency: do the best paths reach the answer, or stop a hop short?"""

from __future__ import annotations

from kgqa.programs.base import WalkState
from kgqa.programs.ranking import Candidate
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.signatures import CheckSufficiency


class Sufficiency(LMStep):
    """True (walk one hop further) only when the model says the best `sufficiency_shown` paths stop
    short and the walk may still go deeper. Nothing to decide where the walk cannot or need not go
    further. Falls back to the plan's hops."""

    name, usage, signature = "sufficiency", "check_sufficiency", CheckSufficiency

    def skip(self, state: WalkState, candidates: list[Candidate]) -> str | None:
        if not state.config.sufficiency:
            return "switched off: the plan's hops only"
        if not candidates:
            return "nothing reached"
        if state.depth >= state.config.depth or state.trace.extended_hops >= state.config.max_extensions:
            return "no hop left to add"
        if state.depth > len(state.hop_targets):
            return "the walk already retrieved a hop past the plan"
        if state.on_named_chain(candidates[0].trail):
            return "the best path ends by the relation the plan's last hop names"
        return None

    def skipped(self, state: WalkState, candidates: list[Candidate]) -> bool:
        return False

    def forward(self, state: WalkState, candidates: list[Candidate]) -> Outcome:
        out = self.ask(state, question=state.question, memory_notes=state.memory,
                       best_paths=[c.path for c in candidates[: state.config.sufficiency_shown]])
        verdict = getattr(out, "evidence_sufficient", None) if out is not None else None
        if not isinstance(verdict, bool):
            return Outcome(False, "fell_back", "no usable verdict: the plan's hops only")
        return Outcome(not verdict, "ran", "sufficient" if verdict else "one hop short")
