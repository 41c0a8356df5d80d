"""What training walks teach about ranking candidate answers: a compiled, learned ranking.

The walk's own order of candidate answers is hand-set (most topic entities first, nearest meeting
first, then similarity to the question and the chain prior; `KGQA._rank`). On CWQ-mini that order
decides most answers: extraction mostly answers with the first choice shown. Compiling on request
(`Budget.ranking_questions`, `kgqa compile --ranking-questions N`) walks training questions with
the gold-path teacher (as it does for extraction's demos), describes each
candidate those walks rank by a few numbers (`FEATURES`: its rank in the hand-set order, how it is
reached, the chain prior's weight, and similarities of its chain and name to the question and to
the plan's answer kind) and fits a logistic regression of "is a gold answer" on them. At answer
time the first `RERANKED` candidates are ordered by that model's score: no LLM call.

Fitted on 300 CWQ-mini training questions' teacher walks, it made a gold answer the first choice
shown on 40 of 100 dev questions (35 with the hand-set order), yet answered one fewer right: where
it moved a gold answer first, extraction had mostly found it already (1e132b4:bench/results/
learned-ranking-cwq-dev/). Hence off by default. Saved as `ranking.json` beside the program
(`programs.saving`); a program compiled without it has none and keeps the hand-set order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

# What describes one candidate (`KGQA.ranking_features` computes them):
FEATURES = (
    "log_rank",  # log(1 + its place in the hand-set order)
    "most_topics",  # reached from as many topic entities as any candidate
    "meets",  # hops in all where the topic entities' paths meet at it (0: one reaches it)
    "steps",  # hops of its best trail
    "prior",  # the chain prior's weight for its relation chain
    "log_chain_ends",  # log(1 + candidates that end the same chain)
    "literal",  # a value, not an entity
    "question_chain",  # similarity of its relation chain's words to the question
    "question_path",  # ... of "chain words : its name" to the question
    "kind_chain",  # ... of its chain's words to the plan's answer kind
    "kind_relation",  # ... of its last relation's words to the answer kind
    "kind_name",  # ... of its name to the answer kind
)
RERANKED = 60  # candidates the learned ranking orders (the hand-set order's first); the rest follow
L2 = 1.0  # the fit's ridge penalty on standardized features
_NEWTON_STEPS = 50


@dataclass
class CandidateRanker:
    """Standardization and logistic weights over `FEATURES`; `order(rows)` puts the best first."""

    means: list[float] = field(default_factory=list)
    scales: list[float] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    questions: int = 0  # training walks it was fitted on

    @property
    def trained(self) -> bool:
        return bool(self.weights)

    @classmethod
    def fit(cls, walks: Sequence[tuple[Sequence[Mapping[str, float]], Sequence[bool]]]) -> CandidateRanker:
        """From training walks, each its candidates' features and whether each is a gold answer; a
        walk with no gold candidate teaches nothing about order and is left out. Untrained when no
        walk has both a gold and another candidate."""
        useful = [(rows, gold) for rows, gold in walks if any(gold) and not all(gold)]
        if not useful:
            return cls()
        X = np.array([[row[name] for name in FEATURES] for rows, _ in useful for row in rows], dtype=float)
        y = np.array([bool(g) for _, gold in useful for g in gold], dtype=float)
        means, scales = X.mean(axis=0), X.std(axis=0)
        scales[scales == 0] = 1.0
        weights = _logistic((X - means) / scales, y, l2=L2)
        return cls(means.tolist(), scales.tolist(), weights.tolist(), len(useful))

    def scores(self, rows: Sequence[Mapping[str, float]]) -> list[float]:
        """Each candidate's score (log-odds of being a gold answer)."""
        X = (np.array([[row[name] for name in FEATURES] for row in rows], dtype=float) - self.means) / self.scales
        return (X @ np.array(self.weights[:-1]) + self.weights[-1]).tolist()

    def order(self, rows: Sequence[Mapping[str, float]]) -> list[int]:
        """The indices of `rows`, best scored first (ties keep their order)."""
        if not self.trained or not rows:
            return list(range(len(rows)))
        scores = self.scores(rows)
        return sorted(range(len(rows)), key=lambda i: -scores[i])

    def to_dict(self) -> dict:
        return {"version": 1, "features": list(FEATURES), "means": self.means, "scales": self.scales,
                "weights": self.weights, "questions": self.questions}

    @classmethod
    def from_dict(cls, state: object) -> CandidateRanker:
        """A saved ranking, its shape checked (a tampered or stale file is a clear error)."""
        if not isinstance(state, dict) or state.get("version") != 1:
            raise ValueError("not a kgqa candidate ranking (version 1)")
        if state.get("features") != list(FEATURES):
            raise ValueError(f"its features {state.get('features')} are not this kgqa's {list(FEATURES)}: recompile the program")
        n = len(FEATURES)
        parts = {name: state.get(name) for name in ("means", "scales", "weights")}
        for name, values in parts.items():
            size = n + 1 if name == "weights" else n
            if not (isinstance(values, list) and len(values) == size
                    and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)):
                raise ValueError(f"{name} must be {size} finite numbers")
        if any(v <= 0 for v in parts["scales"]):
            raise ValueError("scales must be positive")
        questions = state.get("questions", 0)
        if not isinstance(questions, int) or questions < 0:
            raise ValueError("questions must be a count")
        return cls(list(map(float, parts["means"])), list(map(float, parts["scales"])), list(map(float, parts["weights"])), questions)


def _logistic(X: np.ndarray, y: np.ndarray, *, l2: float) -> np.ndarray:
    """Ridge-penalized logistic regression by Newton's method: the weights, then the intercept."""
    X1 = np.hstack([X, np.ones((len(X), 1))])
    penalty = np.full(X1.shape[1], l2)
    penalty[-1] = 0.0  # the intercept is not penalized
    w = np.zeros(X1.shape[1])
    for _ in range(_NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-np.clip(X1 @ w, -30, 30)))
        gradient = X1.T @ (p - y) + penalty * w
        hessian = (X1 * (p * (1 - p))[:, None]).T @ X1 + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w
