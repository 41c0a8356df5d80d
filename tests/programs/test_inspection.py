"""What a program's steps would be shown, without answering (`programs.inspection`): the one way the
compile's labels and the benches read a walk."""

from __future__ import annotations

import dspy

from kgqa.programs import KGQA, WalkConfig
from kgqa.programs.inspection import before_extraction, labeling_inputs, link_question, topic_choice_inputs
from tests.programs.oracle import oracle


def calls(lm) -> list[str]:
    return [key for key, _ in lm.scripted.calls]


def test_a_walk_stopped_before_extraction_gives_its_ranked_candidates_and_state(kg, ids):
    lm = oracle(["film.film.directed_by"])
    with dspy.context(lm=lm):
        ranked, state = before_extraction(KGQA(kg), "Who directed Pulp Fiction?", [ids["Pulp Fiction"]])
        inputs = labeling_inputs(KGQA(kg), "Who directed Pulp Fiction?", [ids["Pulp Fiction"]])
    assert ranked.candidates[0].label == "Quentin Tarantino" and ranked.shown[0] is ranked.candidates[0]
    assert state.ranked is ranked and state.final == []  # extraction never ran
    assert "extracted_answers" not in calls(lm)
    assert inputs["extraction"]["candidates"] == [c.label for c in ranked.shown]
    assert inputs["scorer"]["candidates"][0] == "Quentin Tarantino"
    assert inputs["sufficiency"]["ends"][0] == "Quentin Tarantino" and inputs["sufficiency"]["cut_paths"][0] is None
    assert before_extraction(KGQA(kg), "   ") == (None, None)  # a bad question: nothing walked


def test_a_question_is_linked_alone_as_the_walk_links_it(kg):
    lm = oracle([], entities_meant=lambda i: {"entities_meant": [c for c in i["candidate_entities"] if c.startswith("Australia")]})
    program = KGQA(kg, config=WalkConfig(topic_choice=True))
    with dspy.context(lm=lm):
        linking, trace = link_question(program, "What is the capital of Austria?")
    assert [c.name for c in linking.linked] == ["Australia"] and trace.llm_calls == 1 and calls(lm) == ["entities_meant"]
    shown = topic_choice_inputs(program, "What is the capital of Austria?")
    assert any(label.startswith("Australia") for label in shown["candidate_entities"])
    assert len(shown["candidate_entities"]) == len(shown["candidates"]) >= 2
    assert topic_choice_inputs(program, "Who directed Pulp Fiction?") is None  # one plausible candidate: no choice
