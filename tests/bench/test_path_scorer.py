"""bench.path_scorer: where the gold answer stands among a walk's candidates, in either order."""

from __future__ import annotations

from bench.path_scorer import places
from kgqa.programs.scorer import ScorerGroup


def test_places_count_the_walks_whose_gold_answer_is_within_each_cut_in_the_order_given():
    walks = [ScorerGroup("q1", ["a", "b", "c"], [True, False, False]),
             ScorerGroup("q2", ["a", "b", "c"], [False, False, True]),
             ScorerGroup("q3", ["a", "b"], [False, False]),
             ScorerGroup("q4", [f"p{i}" for i in range(12)], [i == 11 for i in range(12)])]
    assert places(walks) == {"first": 0.25, "top 3": 0.5, "top 10": 0.5, "any": 0.75}
    reversed_order = places(walks, lambda walk: list(range(len(walk.paths)))[::-1])
    assert reversed_order == {"first": 0.5, "top 3": 0.75, "top 10": 0.75, "any": 0.75}
    assert places([]) == dict.fromkeys(("first", "top 3", "top 10", "any"), 0.0)
