"""The learned candidate ranking: fitting, ordering, its file's checks."""

from __future__ import annotations

import math
import random

import pytest

from kgqa.programs.ranking import FEATURES, CandidateRanker


def walk(rng: random.Random, size: int = 8) -> tuple[list[dict], list[bool]]:
    """Candidates in a hand-set order whose gold answer is the one most like the question's answer
    kind by name, wherever the hand-set order put it."""
    rows = [{name: rng.random() for name in FEATURES} | {"log_rank": math.log1p(i)} for i in range(size)]
    best = max(range(size), key=lambda i: rows[i]["kind_name"])
    return rows, [i == best for i in range(size)]


def test_a_fitted_ranking_puts_first_what_marked_the_gold_answers_of_the_training_walks():
    rng = random.Random(0)
    ranker = CandidateRanker.fit([walk(rng) for _ in range(200)] + [([{n: 0.0 for n in FEATURES}], [False])])
    assert ranker.trained and ranker.questions == 200  # a walk without a gold candidate teaches no order
    assert max(zip(ranker.weights, FEATURES))[1] == "kind_name"
    held_out = [walk(rng) for _ in range(100)]
    first = sum(gold[ranker.order(rows)[0]] for rows, gold in held_out)
    hand_set = sum(gold[0] for _, gold in held_out)
    assert first >= 90 and hand_set < 30


def test_an_untrained_ranking_keeps_the_hand_set_order():
    assert not CandidateRanker.fit([([{n: 0.0 for n in FEATURES}] * 3, [False] * 3)]).trained
    assert CandidateRanker().order([{n: 0.0 for n in FEATURES}] * 3) == [0, 1, 2]


def test_a_saved_ranking_loads_as_it_was_and_a_tampered_one_is_a_clear_error():
    rng = random.Random(1)
    ranker = CandidateRanker.fit([walk(rng) for _ in range(50)])
    assert CandidateRanker.from_dict(ranker.to_dict()) == ranker
    state = ranker.to_dict()
    for bad, message in [({**state, "features": ["log_rank"]}, "recompile the program"),
                         ({**state, "weights": state["weights"][:-1]}, "weights must be"),
                         ({**state, "means": ["nan"] * len(FEATURES)}, "means must be"),
                         ({**state, "scales": [0.0] * len(FEATURES)}, "scales must be positive"),
                         ({**state, "version": 2}, "not a kgqa candidate ranking")]:
        with pytest.raises(ValueError, match=message):
            CandidateRanker.from_dict(bad)
