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


def test_first_places_are_paired_walk_by_walk():
    from bench.path_scorer import firsts, paired

    walks = [ScorerGroup("q1", ["a", "b"], [False, True]), ScorerGroup("q2", ["a", "b"], [True, False]),
             ScorerGroup("q3", [], []), ScorerGroup("q4", ["a", "b"], [False, False])]
    as_given = firsts(walks, lambda walk: list(range(len(walk.paths))))
    reversed_order = firsts(walks, lambda walk: list(range(len(walk.paths)))[::-1])
    assert as_given == [False, True, False, False] and reversed_order == [True, False, False, False]
    assert paired(as_given, reversed_order) == (1, 1) and paired(as_given, as_given) == (0, 0)


def test_without_siblings_leaves_out_the_other_ends_of_a_gold_paths_own_chain():
    from bench.path_scorer import without_siblings

    walk = ScorerGroup("which film", ["Lautner -> film -> Eclipse", "Lautner -> film -> New Moon ; reached from 2 named entities",
                                      "Lautner -> award -> Teen Choice", "Slade -> film -> Eclipse"], [True, False, False, False])
    assert without_siblings(walk) == ScorerGroup("which film", ["Lautner -> film -> Eclipse", "Lautner -> award -> Teen Choice",
                                                               "Slade -> film -> Eclipse"], [True, False, False])
    unanswered = ScorerGroup("q", ["a -> r -> b", "a -> r -> c"], [False, False])
    assert without_siblings(unanswered) == unanswered  # no gold path: no sibling of one


def test_a_second_scorer_reorders_the_first_ones_top_or_is_summed_with_it_standardized():
    from bench.path_scorer import reranked, summed

    walk = ScorerGroup("q", ["a", "b", "c", "d"], [False, False, False, True])
    base = {"q": [4.0, 3.0, 2.0, 1.0]}  # a, b, c, d
    other = {"q": [0.0, 0.0, 5.0, 9.0]}  # d, c, then a and b tied
    assert reranked(base, base, 10)(walk) == [0, 1, 2, 3]
    assert reranked(base, other, 3)(walk) == [2, 0, 1, 3]  # only the first three re-ordered; ties keep the base order
    assert reranked(base, other, 4)(walk) == [3, 2, 0, 1]
    # each standardized, then summed: a 0.41, b -0.48, c -0.05, d 0.12
    assert summed(base, other)(walk) == [0, 3, 2, 1]
    assert summed({"q": []}, {"q": []})(ScorerGroup("q", [], [])) == []


def test_a_variants_seeds_are_averaged_into_one_row():
    from bench.path_scorer import mean_row, versus

    seed0 = ("teacher", "bi seed 0", {"first": 0.6, "top 3": 0.7, "top 10": 0.8, "any": 0.8}, "300", "50", None)
    seed1 = ("teacher", "bi seed 1", {"first": 0.5, "top 3": 0.7, "top 10": 0.7, "any": 0.8}, "400", "50", (3, 8))
    seed2 = ("teacher", "bi seed 2", {"first": 0.55, "top 3": 0.6, "top 10": 0.8, "any": 0.8}, "500", "50", (4, 5))
    view, name, found, fit, _, counts = mean_row("teacher", "bi, mean of 3 seeds", [seed0, seed1, seed2])
    assert (view, name, fit) == ("teacher", "bi, mean of 3 seeds", "400")
    assert found == {"first": 0.55, "top 3": 0.667, "top 10": 0.767, "any": 0.8}
    assert versus(counts) == ""  # the base is among them: no count against itself
    assert versus(mean_row("teacher", "m", [seed1, seed2])[5]) == "+3.5 / -6.5"
    assert versus(None) == "(the base)" and versus((2, 1)) == "+2 / -1"


def test_each_scorer_gets_its_own_row_and_with_rerank_its_combinations_with_the_first_paired_against_it():
    from bench.path_scorer import scorer_rows
    from kgqa.programs.scorer import FitReport

    class Fixed:  # scores fixed by path: what a fitted scorer returns, without fitting one
        def __init__(self, by_path: dict[str, float], seconds: float) -> None:
            self.by_path, self.report = by_path, FitReport(seconds=seconds)

        def scores(self, question, paths):
            return [self.by_path[p] for p in paths]

    walks = [ScorerGroup("q1", ["a", "b", "c"], [False, True, False]), ScorerGroup("q2", ["a", "c"], [True, False])]
    first_scorer, second_scorer = Fixed({"a": 3.0, "b": 2.0, "c": 1.0}, 10), Fixed({"a": 0.0, "b": 5.0, "c": 9.0}, 20)
    base, first = {}, {}
    (only,) = scorer_rows("teacher", walks, first_scorer, "one", rerank=2, base=base, first=first, parts={})
    assert only[:2] == ("teacher", "one") and only[2]["first"] == 0.5 and only[3] == "10" and only[5] is None
    assert first == {"teacher": [False, True]} and base["teacher"][0] == "one"
    own, top, both = scorer_rows("teacher", walks, second_scorer, "two", rerank=2, base=base, first=first, parts={})
    assert own[1] == "two" and own[2]["first"] == 0.0 and own[5] == (0, 1)  # c first on both: q2's gold lost
    assert top[1] == "one, its first 2 by two" and top[2]["first"] == 0.5 and top[5] == (1, 1)  # q1: b over a; q2: c over a
    assert both[1] == "one + two, standardized" and both[5] is not None
    parted = scorer_rows("teacher", walks, second_scorer, "two", rerank=0, base=base, first=first, parts={"1 relation": {"q2"}})
    assert [row[0] for row in parted] == ["teacher", "teacher, 1 relation"]  # every row again for each part's questions
    assert parted[1][2] == {"first": 0.0, "top 3": 1.0, "top 10": 1.0, "any": 1.0} and parted[1][5] is None  # q2 alone, c first
    again = scorer_rows("teacher", walks, first_scorer, "one", rerank=0, base=base, first=first, parts={"1 relation": {"q2"}})
    assert again[1][2]["first"] == 1.0 and again[1][5] == (1, 0)  # paired within the part: q2's gold first again


def test_without_shorter_leaves_out_the_candidates_a_hop_short_of_the_shortest_gold_path():
    from bench.path_scorer import without_shorter

    walk = ScorerGroup("what currency is used where Ada was born",
                       ["Ada -> person place of birth -> France", "Ada -> person place of birth -> France -> country currency -> Euro",
                        "Ada -> person place of birth -> France -> country capital -> Paris ; reached from 2 named entities",
                        "Ada -> person nationality -> Spain"], [False, True, False, False])
    assert without_shorter(walk) == ScorerGroup(walk.question, walk.paths[1:3], [True, False])
    unanswered = ScorerGroup("q", ["a -> r -> b", "a -> r -> b -> s -> c"], [False, False])
    assert without_shorter(unanswered) == unanswered  # no gold path: nothing is shorter than one


def test_an_order_at_a_chosen_length_puts_that_lengths_candidates_first_in_its_own_order():
    from bench.path_scorer import as_given, at_length, gold_lengths, hand_length, length, reranked

    walk = ScorerGroup("what currency is used where Ada was born",
                       ["Ada -> person place of birth -> France", "Ada -> person nationality -> Spain",
                        "Ada -> person place of birth -> France -> country currency -> Euro ; reached from 2 named entities",
                        "Ada -> person nationality -> Spain -> country currency -> Euro"], [False, False, True, True])
    assert [length(p) for p in walk.paths] == [2, 2, 4, 4]  # the note is not part of the path
    scores = {walk.question: [4.0, 3.0, 1.0, 2.0]}
    by_scores = reranked(scores, scores, 4)
    assert gold_lengths(walk) == {4} and hand_length(walk) == {2}
    assert at_length(by_scores, gold_lengths)(walk) == [3, 2, 0, 1]  # the gold's length first, by the scores within
    assert at_length(by_scores, hand_length)(walk) == [0, 1, 3, 2]
    assert at_length(as_given, gold_lengths)(walk) == [2, 3, 0, 1]  # the hand-set order within
    unanswered = ScorerGroup("q", ["a -> r -> b"], [False])
    assert at_length(as_given, gold_lengths)(unanswered) == [0]  # no gold: every candidate after none


def test_with_lengths_each_scorer_row_comes_again_at_the_gold_length_and_at_the_hand_set_firsts():
    from bench.path_scorer import scorer_rows
    from kgqa.programs.scorer import FitReport

    class Longest:  # prefers the longer path, as the transfer's fit does
        report = FitReport(seconds=1)

        def scores(self, question, paths):
            return [float(len(p)) for p in paths]

    walks = [ScorerGroup("q", ["a -> r -> b", "a -> r -> b -> s -> c"], [True, False])]
    rows = scorer_rows("similarity", walks, Longest(), "fit", rerank=0, lengths=True, base={}, first={}, parts={})
    assert [(row[1], row[2]["first"]) for row in rows] == [
        ("fit", 0.0), ("fit, at the gold's length", 1.0), ("fit, at the hand-set first's length", 1.0)]
