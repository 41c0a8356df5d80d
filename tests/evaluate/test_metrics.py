"""Metrics on hand-computed cases."""

from __future__ import annotations

import dspy
import pytest

from kgqa.evaluate.metrics import feedback, hits_at_1, matches, normalize, score_answers


def test_normalization_follows_squad_and_gcr():
    assert normalize("The Lord of the Rings: The Return of the King!") == "lord of rings return of king"
    assert normalize("  U.S.A.  ") == "u s"
    assert normalize("<pad>An apple") == "apple"


def test_matching_is_whole_words_after_normalization():
    assert matches("Steven Spielberg", "steven spielberg")
    assert matches("The film 1941 (1979)", "1941")
    assert not matches("19410", "1941")
    assert not matches("", "x") and not matches("the", "the")


def test_scores_by_hand():
    # predicted: Alpha (right), Xi (wrong), Beta (right); gold: Alpha, Beta, Gamma
    s = score_answers(["Alpha", "Xi", "Beta"], ["Alpha", "Beta", "Gamma"])
    assert s.hits1 == 1.0 and s.hit_any == 1.0
    assert s.precision == pytest.approx(2 / 3) and s.recall == pytest.approx(2 / 3) and s.f1 == pytest.approx(2 / 3)
    s = score_answers(["Xi", "Gamma"], ["Alpha", "Beta", "Gamma"])
    assert s.hits1 == 0.0 and s.hit_any == 1.0
    assert s.precision == 0.5 and s.recall == pytest.approx(1 / 3) and s.f1 == pytest.approx(0.4)
    assert score_answers([], ["Alpha"]).as_dict() == {"hits1": 0.0, "hit_any": 0.0, "precision": 0.0, "recall": 0.0, "f1": 0.0}
    duplicates = score_answers(["Alpha", "alpha", "Alpha.", "Xi"], ["Alpha"])  # one answer in three spellings
    assert duplicates.precision == 0.5 and duplicates.hits1 == 1.0
    assert score_answers(["Alpha"], []).f1 == 0.0
    assert score_answers(["A"], ["A"]).hit_any == 0.0  # "a" is an article: nothing left to compare


def test_aliases_count_for_their_answer():
    s = score_answers(["USA"], ["United States of America"], {"United States of America": ["USA", "United States"]})
    assert s.hits1 == 1.0 and s.recall == 1.0
    assert score_answers(["USA"], ["United States of America"]).hits1 == 0.0


def test_bool_while_bootstrapping_float_while_evaluating():
    example = dspy.Example(question="q", answers=["Bong Joon-ho"], aliases={})
    right = dspy.Prediction(answers=["Bong Joon-ho"], trace={})
    wrong = dspy.Prediction(answers=["Park Chan-wook", "Bong Joon-ho"], trace={"stop_reason": "depth_exhausted"})
    assert hits_at_1(example, right) == 1.0 and hits_at_1(example, right, trace=[]) is True
    assert hits_at_1(example, wrong) == 0.0 and hits_at_1(example, wrong, trace=[]) is False
    fb = feedback(example, wrong)
    assert fb.score == 0.0 and "not ranked first" in fb.feedback


def test_same_answer_is_the_whole_name_not_a_part():
    from kgqa.evaluate.metrics import same_answer

    assert same_answer("The Swiss franc", "swiss franc!") and same_answer("Rome", "rome")
    assert not same_answer("Rome, Italy", "Rome") and not same_answer("Rome", "Rome, Italy")
    assert not same_answer("", "") and not same_answer("the", "a")  # nothing left once normalized
