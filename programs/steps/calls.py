"""How a step asks the LM (`LMCalls`): one call within the question's budget and deadline, a
constrained choice checked against its candidates, the embedding-similarity fallback, and the demos
nearest the question in shape. `NoLM` asks nothing: every choice falls back (the similarity walk)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import dspy
from dspy.utils.exceptions import AdapterParseError

from kgqa.errors import LMUnavailable
from kgqa.programs.embedder import Embedder
from kgqa.programs.question import question_shape
from kgqa.programs.selection import select
from kgqa.programs.state import Asking, Ledger
from kgqa.programs.tuned import SNAP_CUTOFF
from kgqa.signatures.choices import choices

log = logging.getLogger(__name__)


class LMCalls:
    """The LM calls of one program's steps. `name` is the step's key in the trace's `step_usage`."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def call(self, asking: Asking, ledger: Ledger, predictor: dspy.Predict, *, name: str, **inputs) -> dspy.Prediction | None:
        """One LLM call within the budget and the deadline, counted in the `ledger`. An answer the
        adapter cannot parse is counted and gives None (the step falls back); an LM that did not
        answer raises `LMUnavailable`, which ends the question (a fallback would pass for the
        model's answer)."""
        trace = ledger.trace
        if ledger.deadline is not None:
            ledger.deadline.check()
        if trace.llm_calls >= asking.config.max_llm_calls:
            ledger.budget_hit = True
            return None
        trace.llm_calls += 1
        with dspy.track_usage() as usage:  # rolled up into the question's total as well
            try:
                return predictor(**inputs, demos=self.shown_demos(asking, predictor))
            except AdapterParseError as exc:  # the LM answered, but not in the signature's shape
                log.info("%s: unparseable reply: %s", predictor.signature.__name__, str(exc)[:200])
                trace.parse_failures += 1
                ledger.dropped.append(f"{type(exc).__name__}: {str(exc)[:200]}")
                return None
            except Exception as exc:  # the LM did not answer: connection, timeout, server error, engine
                trace.llm_failures += 1
                raise lm_unavailable(exc) from exc
            finally:
                trace.count_call(name, usage)

    def choice(self, asking: Asking, ledger: Ledger, predictor: dspy.Predict, *, name: str, chosen: str, candidates: list[str],
               limit: int, at_least: int = 0, **inputs) -> list[str] | None:
        """One call whose `chosen` output is typed as `at_least` to `limit` of `candidates`, its
        choice checked against them (near misses snapped, the rest counted as dropped): the
        candidates kept, [] when the model chose none, None when its output is unusable
        (unparseable, nothing valid). `inputs` are the predictor's inputs, however they show the
        candidates."""
        signature = predictor.signature.with_updated_fields(chosen, type_=choices(candidates, at_least=at_least, at_most=limit))
        out = self.call(asking, ledger, predictor, name=name, signature=signature, **inputs)
        outputs = getattr(out, chosen, None) if out is not None else None
        if outputs == []:  # the model's answer is "none of these"
            return []
        selection = select(outputs if isinstance(outputs, list) else [], candidates, cutoff=SNAP_CUTOFF, limit=limit)
        ledger.dropped += selection.dropped
        return selection.kept or None

    def pick(self, asking: Asking, ledger: Ledger, predictor: dspy.Predict, *, name: str, offered: str, chosen: str,
             candidates: list[str], limit: int, query: str, **inputs) -> tuple[list[tuple[str, float]], bool]:
        """Ranked (candidate, score) choices, and whether they fell back: no call for 0 or 1
        candidate, a similarity cut above `max_candidates`, the model's checked choice, and the
        candidates most like `query` when the model gives nothing usable. An empty choice is
        respected; unusable output (unparseable, nothing valid) falls back. `offered` and `chosen`
        name the predictor's candidate input and choice output."""
        if len(candidates) <= 1:
            return [(c, 1.0) for c in candidates], False
        if len(candidates) > asking.config.max_candidates:
            candidates = self.embedder.top(query, candidates, asking.config.max_candidates)
        kept = self.choice(asking, ledger, predictor, name=name, chosen=chosen, candidates=candidates, limit=limit,
                           **inputs, **{offered: candidates})
        if kept is not None:  # the model's choice, "none of these" included
            return [(c, 1.0 / (1 + rank)) for rank, c in enumerate(kept)], False
        return [(c, 0.5 / (1 + rank)) for rank, c in enumerate(self.embedder.top(query, candidates, limit))], True

    def shown_demos(self, asking: Asking, predictor: dspy.Predict) -> list:
        """The predictor's demos, or, when it holds more than `demos_per_call`, the ones whose
        questions are nearest this one in shape (topic entities blanked out, so "who directed
        [Heat]" is near "who directed [Alien]", not near "who starred in [Heat]"), nearest last,
        next to the question; each listing at most `demo_choices` of the candidates it was offered."""
        pool, k = predictor.demos, asking.config.demos_per_call
        if len(pool) > k:
            shape = question_shape(asking.question, [t.label for t in asking.topics])
            shapes = [_demo_shape(str(demo.get("question", "")), str(demo.get("topic", ""))) for demo in pool]
            pool = [pool[i] for i in reversed(self.embedder.rank(shape, shapes)[:k])]
        return [_shortened(demo, list(predictor.signature.output_fields), asking.config.demo_choices) for demo in pool]


class NoLM(LMCalls):
    """No LM at all: no call is made, and every step falls back to its choice by similarity."""

    def call(self, asking: Asking, ledger: Ledger, predictor: dspy.Predict, *, name: str, **inputs) -> None:
        return None


def lm_unavailable(failure: BaseException) -> LMUnavailable:
    """An LM call's failure as the one outage error: the `LMUnavailable` it wraps (DSPy wraps an
    engine's errors in its own), else its root cause, with the LM's name."""
    root = failure
    while not isinstance(root, LMUnavailable) and root.__cause__ is not None:
        root = root.__cause__
    if isinstance(root, LMUnavailable):
        return root
    lm = dspy.settings.lm
    name = getattr(lm, "model", None) or type(lm).__name__
    return LMUnavailable(f"the LM {name} did not answer: {type(root).__name__}: {str(root)[:300]}")


def demo_topic(asking: Asking) -> str:
    """A question's topic names as a demo keeps them, for matching by shape (`_demo_shape` splits them)."""
    return ", ".join(asking.topic_names)


def _shortened(demo, outputs: Sequence[str], most: int):
    """A demo with each list of candidates it offered (inputs named `candidate_*`) cut to `most`
    items, the ones its outputs chose kept and the others in their order: a demo shows the kind of
    choice made, and the 32 relations of one CVT-rich Freebase node cost every call they are shown in
    about 400 tokens."""
    chosen = set()
    for name in outputs:
        value = demo.get(name)
        chosen |= {str(v) for v in (value if isinstance(value, list) else [value]) if v is not None}
    cut = {}
    for name, value in demo.items():
        if name.startswith("candidate_") and isinstance(value, list) and len(value) > most:
            picked = {i for i, item in enumerate(value) if _chose(str(item), chosen)}
            kept = picked | set([i for i in range(len(value)) if i not in picked][: max(0, most - len(picked))])
            cut[name] = [item for i, item in enumerate(value) if i in kept]
    if not cut:
        return demo
    return demo.copy(**cut) if isinstance(demo, dspy.Example) else {**demo, **cut}


def _chose(item: str, chosen: set[str]) -> bool:
    """An offered item names a chosen one: itself, or a path that ends at it ("X -> r -> Y" for Y)."""
    return item in chosen or any(item.endswith(f" -> {c}") for c in chosen)


@functools.lru_cache(maxsize=100_000)
def _demo_shape(question: str, topic: str) -> str:
    """A demo's question shape, its topic names (joined by ", ") blanked out. Cached: a pool of
    1,500 demos is matched against every question, and shaping it anew took ~0.1 s a call."""
    return question_shape(question, topic.split(", "))
