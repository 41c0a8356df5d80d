"""The trace of one answered question: what the walk spent, what it decided and why it stopped.

Programs write a `Trace`; evaluation, metrics, the picture and the CLI read it. On disk (evaluation
records, `kgqa ask --json`) it is the JSON object `Trace.to_dict()` gives, the shape records have
always had; `Trace.from_dict` reads records written by any kgqa version (missing keys default).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field


class StopReason(str, enum.Enum):
    """Why a question's run ended."""

    PLAN_DONE = "plan_done"  # the walk took every hop of its plan, and its one relation chain answered
    PLAN_SHORTENED = "plan_shortened"  # the plan's last hop found nothing: the hop before it answered
    DEAD_END = "dead_end"  # a hop found nothing and nothing was left to resume from
    LLM_BUDGET = "llm_budget"  # the cap on LLM calls ran out before any answer
    KG_ERROR = "kg_error"  # the knowledge graph failed (endpoint down, query rejected)
    LM_ERROR = "lm_error"  # the LM did not answer (connection, timeout, server error after retries): no answer, resumable
    CUT = "cut"  # the run was cut before its end: its deadline passed, its client went away, the server stopped
    NO_TOPIC_ENTITY = "no_topic_entity"  # no topic entity was given or found in the KG
    BAD_QUESTION = "bad_question"  # empty, not text, or too long
    CHOSEN = "chosen"  # path answer extraction chose the answers among the candidates the paths reached
    ANSWERED = "answered"  # (LLM-only) the model gave answers
    NO_ANSWER = "no_answer"  # (LLM-only) the model gave none
    # written by the walk before the plan-driven one (an open sufficiency check at every depth); read from old records
    SUFFICIENT = "sufficient"
    DEPTH_EXHAUSTED = "depth_exhausted"

    @property
    def failed(self) -> bool:
        """The run ended on an error the user can act on, not on an answer the walk found or missed."""
        return self in {StopReason.KG_ERROR, StopReason.LM_ERROR, StopReason.CUT, StopReason.NO_TOPIC_ENTITY,
                        StopReason.BAD_QUESTION}

    @property
    def unfinished(self) -> bool:
        """The question was not answered for a reason outside it (the LM was down, the run was cut):
        asked again, it may well be answered. Evaluation resumes such records."""
        return self in {StopReason.LM_ERROR, StopReason.CUT}


@dataclass
class Trace:
    stop_reason: StopReason | None = None
    error: str | None = None
    llm_calls: int = 0
    llm_failures: int = 0  # calls the LM did not answer: connection, timeout, engine errors (the question then ends)
    parse_failures: int = 0  # calls it answered with something the adapter could not parse
    input_tokens: int = 0
    output_tokens: int = 0
    sparql_queries: int = 0
    kg_seconds: float = 0.0
    depth: int = 0
    planned_hops: int = 0
    plan: list[str] = field(default_factory=list)
    raw_plan: dict = field(default_factory=dict)  # the plan step's output before its hops were trimmed
    conditions: list[str] = field(default_factory=list)
    extended_hops: int = 0
    hops_walked: int = 0
    relation_path: list[list[str]] = field(default_factory=list)  # [relation, "out"|"in"] of the best trail
    prior_chains: list[list] = field(default_factory=list)  # [chain, weight]: the compiled chain prior's votes, heaviest first
    path_scorer: bool = False  # the candidates were ordered by the compiled path scorer (`programs.scorer`)
    # per hop: its target, the relations offered, the relation prune's choice ("pruned"), the relations
    # gone on by ("chosen": that choice and the beam's), the edges reached
    walk: list[dict] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)  # each step as it came: {"step", "status": ran|skipped|fell_back, "why"}
    step_usage: dict[str, list[int]] = field(default_factory=dict)  # predictor -> [LLM calls, input tokens, output tokens]
    candidates: list[str] = field(default_factory=list)  # the candidate answers shown to path answer extraction
    first_share: float | None = None  # the path scorer's softmax share of the first candidate shown, when it ordered them
    facts: list[str] = field(default_factory=list)  # the facts the fact filter kept
    memory: list[str] = field(default_factory=list)  # the notes of memory update, at the end
    reflections: int = 0
    topic_entities: list[str] = field(default_factory=list)
    topic_names: list[str] = field(default_factory=list)
    linking: dict = field(default_factory=dict)  # a question without ids: its mentions, candidates and linked entities
    dropped_selections: int = 0
    dropped_examples: list[str] = field(default_factory=list)
    fallbacks: int = 0

    def record(self, step: str, status: str, why: str = "") -> None:
        """One step's outcome: it `ran` (made its call), was `skipped` (no decision to make, or
        switched off; `why` says which) or `fell_back` (its reply was unusable)."""
        self.steps.append({"step": step, "status": status, "why": why})

    def count_call(self, predictor: str, usage) -> None:
        """One LLM call of `predictor`, with the tokens `usage` (its `dspy.track_usage()`) saw."""
        calls, tokens_in, tokens_out = self.step_usage.get(predictor, (0, 0, 0))
        more_in, more_out = token_totals(usage)
        self.step_usage[predictor] = [calls + 1, tokens_in + more_in, tokens_out + more_out]

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["stop_reason"] = self.stop_reason.value if self.stop_reason else None
        return data

    @classmethod
    def from_dict(cls, data: dict | None) -> Trace:
        """A trace from its JSON object; keys it does not know are ignored, missing ones default."""
        data = data or {}
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        reason = values.get("stop_reason")
        values["stop_reason"] = StopReason(reason) if reason in StopReason._value2member_map_ else None
        return cls(**values)


def token_totals(usage) -> tuple[int, int]:
    """(input, output) tokens from `dspy.track_usage()`'s tracker, summed over the LMs it saw."""
    totals = usage.get_total_tokens().values()
    return (sum(int(u.get("prompt_tokens") or 0) for u in totals), sum(int(u.get("completion_tokens") or 0) for u in totals))
