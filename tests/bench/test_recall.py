"""Where a walk leaves the gold answer, without the LLM: shown (and where), reached, left behind."""

from __future__ import annotations

from bench.recall import PLACES, paired, place, walk_all
from kgqa.programs import WalkConfig
from kgqa.programs.baselines import SimilarityWalk
from kgqa.programs.ranking import SCORED


def test_a_gold_answer_is_placed_where_the_walk_left_it():
    shown = ["Paris", "Lyon", "Nice", "Lille"]
    assert place(shown, shown, ["paris"], within=1, hops=2) == "first"  # answers compare as names do
    assert place(shown, shown, ["Nice"], within=1, hops=2) == "2nd-3rd"
    assert place(shown, shown, ["Lille"], within=1, hops=2) == "4th-shown"
    ranked = shown + [f"town {n}" for n in range(SCORED)]
    assert place(ranked, shown, ["town 3"], within=1, hops=2) == "scored, not shown"
    assert place(ranked, shown, [f"town {SCORED - 1}"], within=1, hops=2) == "reached, not scored"
    # not reached: within the walk's hops in the graph, a hop further, or further still
    assert [place(shown, shown, ["Rome"], within=n, hops=2) for n in (1, 2, 3, 99)] == [
        "left behind", "left behind", "3 hops away", "beyond 3 hops"]
    assert paired([True, True, False, False], [True, False, True, True]) == "+2 / -1"


def test_a_walk_that_shows_fewer_choices_moves_the_gold_answer_down(embedded_demo_kg, demo_train):
    within = {ex.id: 1 for ex in demo_train}
    wide = walk_all(SimilarityWalk(embedded_demo_kg, config=WalkConfig(depth=1)), demo_train, within)
    narrow = walk_all(SimilarityWalk(embedded_demo_kg, config=WalkConfig(depth=1, choices_shown=1)), demo_train, within)
    assert {o.place for o in wide + narrow} <= set(PLACES) and any(o.shown for o in wide)
    assert all(o.place in ("first", "scored, not shown") for o in narrow if o.place not in PLACES[5:])
    assert sum(o.shown for o in narrow) <= sum(o.shown for o in wide)
    assert all(o.place != "first" or w.place == "first" for o, w in zip(narrow, wide))  # one choice: the same first
