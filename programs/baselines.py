"""Reference points for benchmarks: what the LM knows without the graph, and what the graph gives
without the LM."""

from __future__ import annotations

from collections.abc import Sequence

import dspy

from programs.kgqa import KGQA, Run
from signatures import AnswerDirectly


class LLMOnly(dspy.Module):
    """The LM answers from its own knowledge: no graph, one call."""

    def __init__(self) -> None:
        super().__init__()
        self.answer = dspy.Predict(AnswerDirectly)

    def forward(self, question: str, topic_entities: Sequence[str] | None = None) -> dspy.Prediction:
        failures, answers = 0, []
        with dspy.track_usage() as usage:
            try:
                answers = [a for a in self.answer(question=question).direct_answers if isinstance(a, str) and a.strip()]
            except Exception:  # an unparseable answer is a wrong answer, not a crash
                failures = 1
        totals = usage.get_total_tokens().values()
        trace = {
            "llm_calls": 1,
            "llm_failures": failures,
            "input_tokens": sum(int(u.get("prompt_tokens") or 0) for u in totals),
            "output_tokens": sum(int(u.get("completion_tokens") or 0) for u in totals),
            "sparql_queries": 0,
            "stop_reason": "answered" if answers else "no_answer",
        }
        return dspy.Prediction(answers=answers, paths=[], trace=trace)


class SimilarityWalk(KGQA):
    """The walk with no LM at all: told the hop count (its plan is `config.depth` hops), every
    choice is the embedding-similarity fallback (the trace counts them as fallbacks), and it
    answers with the ends of its best trails."""

    def _plan(self, run: Run) -> tuple[list[str], list[str]]:
        return [run.question] * run.config.depth, []

    def _call(self, run: Run, predictor: dspy.Predict, **inputs) -> None:
        return None
