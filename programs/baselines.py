"""Reference points for benchmarks: what the LM knows without the graph, and what the graph gives
without the LM."""

from __future__ import annotations

from collections.abc import Sequence

import dspy
from dspy.utils.exceptions import AdapterParseError

from kgqa.kg import KnowledgeGraph
from kgqa.programs.embedder import Embedder
from kgqa.programs.kgqa import KGQA
from kgqa.programs.steps import DepthPlan, NoLM
from kgqa.programs.steps.calls import lm_unavailable
from kgqa.programs.trace import StopReason, Trace, token_totals
from kgqa.signatures import AnswerDirectly


class LLMOnly(dspy.Module):
    """The LM answers from its own knowledge: no graph, one call."""

    def __init__(self) -> None:
        super().__init__()
        self.answer_directly = dspy.Predict(AnswerDirectly)

    def forward(self, question: str, topic_entities: Sequence[str] | None = None) -> dspy.Prediction:
        trace, answers = Trace(llm_calls=1), []
        with dspy.track_usage() as usage:
            try:
                answers = [a for a in self.answer_directly(question=question).direct_answers if isinstance(a, str) and a.strip()]
            except AdapterParseError:  # an unparseable answer is a wrong answer, not a crash
                trace.parse_failures = 1
            except Exception as exc:  # an LM that did not answer gave no answer at all: the record says so
                trace.llm_failures, trace.error = 1, str(lm_unavailable(exc))
        trace.input_tokens, trace.output_tokens = token_totals(usage)
        if trace.error:
            trace.stop_reason = StopReason.LM_ERROR
        else:
            trace.stop_reason = StopReason.ANSWERED if answers else StopReason.NO_ANSWER
        return dspy.Prediction(answers=answers, paths=[], trace=trace)


class SimilarityWalk(KGQA):
    """The walk with no LM at all: told the hop count (its plan is `config.depth` hops), every
    choice is the embedding-similarity fallback (the trace counts them as fallbacks), and it
    answers with the ends of its best trails."""

    def __init__(self, kg: KnowledgeGraph | None = None, *, embedder: Embedder | None = None, **parts) -> None:
        embedder = embedder or Embedder()
        super().__init__(kg, embedder=embedder, calls=NoLM(embedder), **parts)
        self.plan = DepthPlan()
