"""PathKGQA (retrieve every short path, then choose the answer) under a scripted model: what it
retrieves, what the model is shown and chooses, what happens when the model fails, compiling and
saving."""

from __future__ import annotations

import gzip
import json

import dspy
import pytest

from kgqa.data.rog import load_rog, question_graph
from kgqa.kg import KnowledgeGraph
from kgqa.lm.scripted import scripted_lm
from kgqa.optimizers.teleprompters import Budget, compile_program
from kgqa.programs import STRATEGIES, PathKGQA, WalkConfig, make_program
from kgqa.programs.saving import load_program, read_settings, save_program


@pytest.fixture(scope="module")
def kg(demo_store) -> KnowledgeGraph:
    return KnowledgeGraph(demo_store, profile="freebase")


@pytest.fixture(scope="module")
def ids(kg):
    return {name: kg.link([name])[name][0] for name in ["Titanic", "Parasite"]}


def chooser(pick):
    """A scripted model whose answer step returns `pick(inputs)`."""
    return scripted_lm({"chosen_answer": lambda i: {"chosen_answer": pick(i)}})


def ends(paths: list[str]) -> list[str]:
    return [p.rsplit(" -> ", 1)[-1] for p in paths]


def rog_kg(tmp_path, triples, question="q", topics=("A",)):
    path = tmp_path / "rows.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(json.dumps({"id": "r0", "question": question, "answer": ["x"], "q_entity": list(topics), "a_entity": [],
                                 "graph": [list(t) for t in triples]}) + "\n")
    (example,) = load_rog(path)
    return question_graph(example)


def test_the_model_chooses_among_answers_shown_with_their_paths_through_cvt_nodes(kg, ids):
    lm = chooser(lambda i: ["Kate Winslet"])
    with dspy.context(lm=lm):
        pred = PathKGQA(kg, config=WalkConfig(depth=2))(question="Who starred in Titanic?", topic_entities=[ids["Titanic"]])
    assert pred.answers[:2] == ["Kate Winslet", "Leonardo DiCaprio"]  # the choice, then the other ends of its path
    assert pred.trace.llm_calls == 1 and pred.trace.stop_reason == "chosen" and pred.trace.fallbacks == 0
    (key, inputs), = lm.scripted.calls
    shown = inputs["candidate_paths"]
    # the nameless performance node is stepped through and left out of what the model reads
    assert "Titanic -> film starring -> performance actor -> Kate Winslet" in shown
    assert not any("m.0" in path for path in shown) and "Titanic" not in ends(shown)
    assert len(shown) <= WalkConfig().choices_shown
    assert pred.trace.relation_path == [["film.film.starring", "out"], ["film.performance.actor", "out"]]
    assert "-> film.performance.actor -> Kate Winslet" in pred.paths[0]
    (logged,) = pred.trace.walk  # what the picture of the walk draws: the candidates shown, the choice kept
    assert logged["offered"] == shown and logged["chosen"] == ["Titanic -> film starring -> performance actor -> Kate Winslet"]
    assert ["Titanic", "film.film.starring -> film.performance.actor", "Kate Winslet", True] in logged["edges"]


def test_an_answer_the_model_invents_falls_back_to_the_best_ranked_candidate(kg, ids):
    lm = chooser(lambda i: ["Martin Scorsese"])  # not a candidate
    with dspy.context(lm=lm):
        program = PathKGQA(kg, config=WalkConfig(depth=2))
        pred = program(question="Who directed Parasite?", topic_entities=[ids["Parasite"]])
    best = program.candidates("Who directed Parasite?", [ids["Parasite"]])[0]
    assert pred.answers[0] == best.label and pred.trace.fallbacks == 1 and pred.trace.dropped_selections == 1


def test_an_lm_that_does_not_answer_gives_an_error_not_the_best_ranked_candidate(kg, ids):
    def broken(inputs):
        raise RuntimeError("engine down")

    with dspy.context(lm=chooser(broken)):
        pred = PathKGQA(kg)(question="Who directed Parasite?", topic_entities=[ids["Parasite"]])
    assert pred.answers == [] and pred.trace.llm_failures == 1 and pred.trace.fallbacks == 0
    assert pred.trace.stop_reason == "lm_error" and "RuntimeError: engine down" in pred.trace.error


def test_answers_every_topic_entity_reaches_rank_first_and_a_lone_candidate_needs_no_call(tmp_path):
    kg = rog_kg(tmp_path, [("Lala", "people.person.places_lived", "Brooklyn"), ("Lala", "people.person.place_of_birth", "New York"),
                           ("Seymour", "people.person.places_lived", "Brooklyn"), ("Seymour", "people.person.place_of_birth", "Chicago")],
                topics=("Lala", "Seymour"))
    lm = chooser(lambda i: [ends(i["candidate_paths"])[0]])
    with dspy.context(lm=lm):
        pred = PathKGQA(kg, config=WalkConfig(depth=1))(question="Which city is home to Lala and Seymour?", topic_entities=["Lala", "Seymour"])
    assert ends(lm.scripted.calls[0][1]["candidate_paths"])[0] == "Brooklyn"  # reached from both, shown first
    assert pred.answers[0] == "Brooklyn"

    alone = rog_kg(tmp_path, [("A", "location.country.currency_used", "Euro")])
    lm = chooser(lambda i: [])
    with dspy.context(lm=lm):
        pred = PathKGQA(alone)(question="What currency does A use?", topic_entities=["A"])
    assert pred.answers == ["Euro"] and pred.trace.llm_calls == 0


def test_nameless_nodes_are_never_answers_and_bad_input_stops_clearly(tmp_path):
    kg = rog_kg(tmp_path, [("A", "government.governmental_jurisdiction.governing_officials", "m.0cvt1"),
                           ("m.0cvt1", "government.government_position_held.office_holder", "Holness"),
                           ("m.0cvt1", "government.government_position_held.basic_title", "Prime minister")])
    with dspy.context(lm=chooser(lambda i: ["Holness"])):
        program = PathKGQA(kg)
        pred = program(question="Who governs A?", topic_entities=["A"])
        assert pred.answers[0] == "Holness" and "m.0cvt1" not in pred.answers
        assert program(question="Who governs A?", topic_entities=["Nowhere"]).trace.stop_reason == "no_topic_entity"
        assert program(question="   ", topic_entities=["A"]).trace.stop_reason == "bad_question"


def test_compiling_labels_the_answer_step_with_gold_answers_and_the_program_saves_and_loads(kg, ids, tmp_path):
    def example(question, topic, answer):
        return dspy.Example(question=question, topic_entities=[ids[topic]], topic_names=[topic], answers=[answer],
                            ground_paths=[]).with_inputs("question", "topic_entities")

    trainset = [example("Who directed Parasite?", "Parasite", "Bong Joon-ho"), example("Who starred in Titanic?", "Titanic", "Kate Winslet"),
                example("Who directed Titanic?", "Titanic", "Nobody Of That Name")]  # gold not reached: no demo
    compiled = compile_program(PathKGQA(kg, config=WalkConfig(depth=2)), "bootstrap", trainset=trainset, budget=Budget(demos=1))
    demos = compiled.choose_answer.demos
    assert [d.question for d in demos] == ["Who directed Parasite?", "Who starred in Titanic?"]
    assert [d.chosen_answer for d in demos] == [["Bong Joon-ho"], ["Kate Winslet"]]
    assert all(d.chosen_answer[0] in ends(d.candidate_paths) for d in demos)

    save_program(compiled, tmp_path / "prog", settings={"kg": "demo"})
    assert read_settings(tmp_path / "prog")["strategy"] == "paths"
    loaded = load_program(tmp_path / "prog", kg)
    assert isinstance(loaded, PathKGQA) and len(loaded.choose_answer.demos) == 2
    lm = chooser(lambda i: ["Bong Joon-ho"] if "Bong Joon-ho" in ends(i["candidate_paths"]) else [])
    with dspy.context(lm=lm):
        assert loaded(question="Who directed Parasite?", topic_entities=[ids["Parasite"]]).answers[0] == "Bong Joon-ho"
    assert "Who directed Parasite?" in lm.scripted.shown[0]  # the demo was shown


def test_strategies_by_name():
    assert set(STRATEGIES) == {"plan", "paths"}
    assert isinstance(make_program("paths"), PathKGQA)
    with pytest.raises(ValueError, match="unknown strategy"):
        make_program("beam")
