"""Answer metrics: Hits@1, Hit@any and answer-set precision / recall / F1; and the walk metric
that also rewards the right relation path and depth where the data has them.

Strings are compared as GCR and SQuAD compare them: lower-cased, punctuation and the articles
a/an/the removed, whitespace collapsed; a prediction matches a gold answer (or one of its
aliases) when the normalized gold occurs in the normalized prediction as whole words.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import dspy

from kgqa.programs.trace import Trace

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation})


def normalize(text: str) -> str:
    text = _ARTICLES.sub(" ", str(text).lower().replace("<pad>", " ").translate(_PUNCT))
    return " ".join(text.split())


def matches(prediction: str, gold: str) -> bool:
    p, g = normalize(prediction), normalize(gold)
    return bool(p and g) and f" {g} " in f" {p} "


def same_answer(a: str, b: str) -> bool:
    """The two name the same thing once normalized: the whole string, not a part of it (as `matches` allows)."""
    return normalize(a) == normalize(b) != ""


@dataclass(frozen=True)
class AnswerScores:
    hits1: float
    hit_any: float
    precision: float
    recall: float
    f1: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def score_answers(predicted: Sequence[str], gold: Sequence[str], aliases: Mapping[str, Iterable[str]] | None = None) -> AnswerScores:
    """Scores of a ranked answer list against gold answers, each gold counting with its aliases."""
    aliases = aliases or {}
    golds = [[g, *aliases.get(g, ())] for g in dict.fromkeys(gold)]
    predicted = list({normalize(p): p for p in reversed(predicted) if normalize(p)}.values())[::-1]  # first of each form
    if not golds:
        return AnswerScores(0.0, 0.0, 0.0, 0.0, 0.0)

    def hit(p: str) -> bool:
        return any(matches(p, form) for forms in golds for form in forms)

    correct = [hit(p) for p in predicted]
    found = [any(matches(p, form) for p in predicted for form in forms) for forms in golds]
    precision = sum(correct) / len(predicted) if predicted else 0.0
    recall = sum(found) / len(golds)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return AnswerScores(
        hits1=float(bool(correct) and correct[0]),
        hit_any=float(any(correct)),
        precision=precision,
        recall=recall,
        f1=f1,
    )


def example_scores(example: dspy.Example, prediction: dspy.Prediction) -> AnswerScores:
    return score_answers(prediction.answers, example.answers, getattr(example, "aliases", None) or {})


def hits_at_1(example: dspy.Example, prediction: dspy.Prediction, trace=None) -> float | bool:
    """Hits@1; a bool while bootstrapping (`trace` given), as BootstrapFewShot wants."""
    score = example_scores(example, prediction).hits1
    return score == 1.0 if trace is not None else score


def feedback(example, prediction, trace=None, pred_name=None, pred_trace=None) -> dspy.Prediction:
    """GEPA's metric: the Hits@1 score and a sentence on what went wrong, for the reflection LM."""
    scores = example_scores(example, prediction)
    walk = _trace(prediction)
    gold = ", ".join(example.answers[:5])
    if scores.hits1:
        text = f"Correct: the first answer matches the gold answer ({gold})."
    elif scores.hit_any:
        text = f"The right answer ({gold}) was found but not ranked first; first was {prediction.answers[0]!r}."
    else:
        found = ", ".join(prediction.answers[:3]) or "nothing"
        text = f"Wrong: answered {found}; the gold answer is {gold}. The walk stopped: {walk.stop_reason.value if walk.stop_reason else '?'}."
        path = getattr(example, "path", None) or getattr(example, "qtype", None)
        if path:
            text += f" The gold relation path is {path}."
    return dspy.Prediction(score=scores.hits1, feedback=text)



def gold_paths(example: dspy.Example) -> list[list[tuple[str, str | None]]]:
    """The gold relation paths of an example as (relation, direction) pairs, direction "out", "in"
    or None where the data does not say: the paths the compile labeled it with (`teacher_paths`,
    `optimizers.paths`: given ones that hold in its graph, or found there from its answers), else the
    demo's `path`, MetaQA's `qtype`, RoG/CWQ's `ground_paths`; none when the data has none."""
    labeled = getattr(example, "teacher_paths", None)
    if labeled is not None:
        return [[(relation, direction) for relation, direction in path] for path in labeled]
    path = getattr(example, "path", None)
    if path:
        return [[(relation, direction) for relation, direction in path]]
    qtype = getattr(example, "qtype", None)
    if qtype:
        from kgqa.data.metaqa import qtype_path

        try:
            return [qtype_path(qtype)]
        except ValueError:
            return []
    ground = getattr(example, "ground_paths", None) or []
    return [[(relation, None) for relation in p] for p in ground if isinstance(p, (list, tuple)) and p]


def gold_relation_paths(example: dspy.Example) -> list[list[str]]:
    """The gold relation paths, relation ids only (directions differ between graphs)."""
    return [[relation for relation, _ in path] for path in gold_paths(example)]


@dataclass(frozen=True)
class WalkScores:
    hits1: float
    path: float | None  # the answer's relation path is a gold one; None without gold paths
    depth: float | None  # it has a gold path's length


def walk_scores(example: dspy.Example, prediction: dspy.Prediction) -> WalkScores:
    hits1 = example_scores(example, prediction).hits1
    gold = gold_relation_paths(example)
    if not gold:
        return WalkScores(hits1, None, None)
    walked = [relation for relation, _ in _trace(prediction).relation_path]
    return WalkScores(hits1, float(walked in gold), float(len(walked) in {len(g) for g in gold}))


def _trace(prediction: dspy.Prediction) -> Trace:
    trace = getattr(prediction, "trace", None)
    return trace if isinstance(trace, Trace) else Trace.from_dict(trace)


def walk_metric(example: dspy.Example, prediction: dspy.Prediction, trace=None) -> float | bool:
    """Hits@1 with intermediate labels. While bootstrapping (`trace` given) a walk counts only if it
    is right all the way: the answer, the relation path and its depth, so the demos it leaves teach
    the steps, when to stop included. Otherwise a graded score: half the answer, a quarter each
    the path and the depth (just Hits@1 where the data has no gold path)."""
    s = walk_scores(example, prediction)
    if trace is not None:
        return bool(s.hits1) and s.path in (None, 1.0)
    if s.path is None:
        return s.hits1
    return 0.5 * s.hits1 + 0.25 * s.path + 0.25 * s.depth
