"""A model's selections checked against the candidates it was offered."""

from __future__ import annotations

from kgqa.lm.chat import grammar_safe
from kgqa.programs.selection import select

CANDIDATES = ['Concerto No. 4, RV 297 "Winter"', "AC\\DC", '"A"', "B"]


def test_a_choice_the_local_engine_respelled_for_its_grammar_snaps_back_to_its_candidate():
    respelled = grammar_safe({"enum": CANDIDATES})["enum"]
    assert respelled != CANDIDATES
    assert select(respelled, CANDIDATES, cutoff=0.85).kept == CANDIDATES


def test_made_up_choices_are_dropped_and_near_misses_snap():
    picked = select(["B", "Concerto No. 4, RV 297 Winter", "Bach", 7], CANDIDATES, cutoff=0.85, limit=3)
    assert picked.kept == ["B", CANDIDATES[0]] and picked.dropped == ["Bach", "7"]
