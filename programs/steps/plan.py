"""The plan: what each hop reaches and what the answer must satisfy (decompose)."""

from __future__ import annotations

import logging
from typing import Annotated

import pydantic

from kgqa.programs import render
from kgqa.programs.question import end_at_answer, start_after_topic
from kgqa.programs.state import Asking, Ledger
from kgqa.programs.steps.step import LMStep, Outcome, Step
from kgqa.programs.tuned import CONDITIONS
from kgqa.signatures import Plan

log = logging.getLogger(__name__)


class Planning(LMStep):
    """The hop targets, at most `depth` (the topic entity's own kind left out of the first, the
    answer's kind ending the last), and the conditions on the answer. One hop, the question
    itself, when the plan is unusable."""

    name, usage, signature = "plan", "plan", Plan

    def forward(self, asking: Asking, ledger: Ledger, given: None = None) -> Outcome:
        depth = asking.config.depth
        signature = self.predict.signature.with_updated_fields(
            "hop_targets", type_=Annotated[list[str], pydantic.Field(min_length=1, max_length=depth)])
        out = self.ask(asking, ledger, signature=signature, question=asking.question,
                       topic=render.several([t.label for t in asking.topics]))
        targets = [t.strip() for t in (out.hop_targets if out else []) if isinstance(t, str) and t.strip()]
        conditions = [c.strip() for c in (out.answer_constraints if out else []) if isinstance(c, str) and c.strip()]
        topic_kind, answer_kind = (getattr(out, name, "") if out else "" for name in ("topic_kind", "answer_kind"))
        log.debug("plan for %r: %s -> %s, hops %s, conditions %s", asking.question, topic_kind, answer_kind, targets, conditions)
        planned = (end_at_answer(start_after_topic(targets, topic_kind), answer_kind)[:depth] or [asking.question],
                   conditions[:CONDITIONS])
        raw = {"raw_plan": {"topic_kind": topic_kind, "answer_kind": answer_kind, "hop_targets": targets}}
        return Outcome(planned, traced=raw) if targets else Outcome(planned, "fell_back", "no usable plan: one hop", raw)


class DepthPlan(Step):
    """No plan asked for: `depth` hops, each reaching what the question asks (the walk with no LM)."""

    name = "plan"

    def skip(self, asking: Asking, given: None = None) -> str:
        return f"no LM: {asking.config.depth} hops"

    def skipped(self, asking: Asking, given: None = None) -> tuple[list[str], list[str]]:
        return [asking.question] * asking.config.depth, []
