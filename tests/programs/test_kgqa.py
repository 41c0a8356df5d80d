"""The program on the demo KG under a scripted model: behaviour, grounding and exact trace counts."""

from __future__ import annotations

import dspy
import pytest

from kg import KnowledgeGraph
from programs import KGQA, WalkConfig
from tests.programs.oracle import oracle


@pytest.fixture(scope="module")
def kg(demo_store) -> KnowledgeGraph:
    return KnowledgeGraph(demo_store, profile="freebase")


@pytest.fixture(scope="module")
def ids(kg):
    names = ["Pulp Fiction", "Titanic", "James Cameron", "Ang Lee", "Parasite", "Science Fiction"]
    return {name: kg.link([name])[name][0] for name in names}


def ask(kg, lm, question, topics=None, **config):
    program = KGQA(kg, config=WalkConfig(**config))
    with dspy.context(lm=lm):
        return program(question=question, topic_entities=topics)


def test_one_hop(kg, ids):
    lm = oracle(["film.film.directed_by"], ["Quentin Tarantino"])
    pred = ask(kg, lm, "Who directed Pulp Fiction?", [ids["Pulp Fiction"]])
    assert pred.answers == ["Quentin Tarantino"]
    assert pred.paths == ["# Reasoning Path:\nPulp Fiction -> film.film.directed_by -> Quentin Tarantino\n# Answer:\nQuentin Tarantino"]
    trace = pred.trace
    assert trace["stop_reason"] == "sufficient" and trace["depth"] == 1  # stopped early, depth 3 allowed
    # decompose, relation prune, memory, judge; one candidate entity and few facts need no call
    assert trace["llm_calls"] == 4
    assert [key for key, _ in lm.scripted.calls] == ["sub_objectives", "relations_to_follow", "updated_memory", "answer_names"]
    assert trace["sparql_queries"] == 3  # topic names, topic relations, neighbours (+ their relations)
    assert trace["input_tokens"] > 0 and trace["output_tokens"] > 0
    assert trace["dropped_selections"] == 0 and trace["fallbacks"] == 0


def test_two_hops_through_a_cvt_node(kg, ids):
    def actors_only(inputs):
        return inputs["candidate_entities"] if "film.performance.actor" in inputs["relation_walked"] else []

    lm = oracle(["film.film.starring"], ["Kate Winslet", "Leonardo DiCaprio"], keep=actors_only)
    pred = ask(kg, lm, "Who starred in Titanic?", [ids["Titanic"]])
    assert sorted(pred.answers) == ["Kate Winslet", "Leonardo DiCaprio"]
    assert all(" -> film.film.starring -> m.0dmc" in p and "-> film.performance.actor ->" in p for p in pred.paths)
    # after following starring, the nameless performances were stepped through: one entity prune per onward relation
    walked = sorted(i["relation_walked"] for key, i in lm.scripted.calls if key == "entities_to_keep")
    assert walked == [
        "Titanic -> film.film.starring -> film.performance.actor",
        "Titanic -> film.film.starring -> film.performance.character",
    ]
    assert pred.trace["llm_calls"] == 6 and pred.trace["sparql_queries"] == 4


def test_a_relation_walked_backwards(kg, ids):
    lm = oracle(["film.film.directed_by (reverse)"], ["Titanic", "Avatar"])
    pred = ask(kg, lm, "Which films did James Cameron direct?", [ids["James Cameron"]])
    assert pred.trace["stop_reason"] == "sufficient"
    assert pred.answers == ["Titanic", "Avatar"]  # what the judge named, in its order
    assert len(pred.paths) == 2 and "James Cameron -> film.film.directed_by (reverse) -> Avatar" in "\n".join(pred.paths)


def test_a_year_literal_answer(kg, ids):
    lm = oracle(["award.award_winner.awards_won"], ["2013"])
    pred = ask(kg, lm, "In what year did Ang Lee win an Academy Award?", [ids["Ang Lee"]])
    assert pred.answers[0] == "2013"
    assert lm.scripted.count("entities_to_keep") == 0  # one award, one film, and a literal: no decision


def test_half_stop_still_answers(kg, ids):
    lm = oracle(["film.film.directed_by"], ["Daegu"])  # never offered place_of_birth choice at depth 2
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]])
    assert pred.trace["stop_reason"] == "half_stop" and pred.trace["depth"] == 2
    assert pred.answers == ["Bong Joon-ho"]  # what was found: the walk's last kept entity


def test_depth_exhausted_still_answers(kg, ids):
    lm = oracle(["film.film.directed_by", "people.person.place_of_birth"], ["Nowhere"])
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]], depth=1)
    assert pred.trace["stop_reason"] == "depth_exhausted" and pred.trace["depth"] == 1
    assert pred.answers == ["Bong Joon-ho"]


def test_reflection_brings_back_an_earlier_entity(kg, ids):
    def writer_only(inputs):  # a wrong turn: keeps the co-writer, not the director
        return ["Han Jin-won"] if "Han Jin-won" in inputs["candidate_entities"] else inputs["candidate_entities"]

    def resume(inputs):
        return ["Bong Joon-ho"] if "Bong Joon-ho" in inputs["earlier_entities"] else []

    lm = oracle(["film.film.written_by", "people.person.place_of_birth"], ["Daegu"], keep=writer_only, backtrack=resume)
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]])
    assert pred.trace["reflections"] == 1
    assert pred.trace["stop_reason"] == "sufficient"
    assert pred.answers == ["Daegu"]
    assert "Parasite -> film.film.written_by -> Bong Joon-ho -> people.person.place_of_birth -> Daegu" in pred.paths[0]


def garbage(inputs):
    return "I am not sure what you mean."


INVENTED = {
    "sub_objectives": lambda i: {"sub_objectives": ["the director"]},
    "relations_to_follow": lambda i: {"relations_to_follow": ["film.film.made_up_relation"]},
    "entities_to_keep": lambda i: {"entities_to_keep": ["Nobody Atall"]},
    "kept_facts": lambda i: {"kept_facts": [["Made", "up", "fact"]]},
    "updated_memory": lambda i: {"updated_memory": ["too", "many", "notes"]},
    "answer_names": lambda i: {"answer_names": ["Invented Person"], "is_sufficient": True},
    "should_backtrack": lambda i: {"should_backtrack": True, "entities_to_resume": ["Ghost"]},
    "answer_entity": lambda i: {"answer_entity": "Invented Person"},
}


@pytest.mark.parametrize("handlers,default", [({}, garbage), (INVENTED, None)], ids=["garbage", "invented"])
def test_a_model_that_answers_garbage_or_invents_follows_only_real_candidates(kg, ids, handlers, default):
    from kgqa.lm.scripted import scripted_lm

    lm = scripted_lm(handlers, default=default)
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]], depth=2)
    trace = pred.trace
    assert trace["stop_reason"] == "depth_exhausted" and trace["depth"] == 2
    assert trace["dropped_selections"] > 0 and trace["fallbacks"] > 0
    assert pred.answers and not {"Invented Person", "Nobody Atall", "Ghost"} & set(pred.answers)
    for path in pred.paths:  # every hop of every reasoning path is a real edge of the KG
        entities_and_relations = path.split("\n")[1].split(" -> ")
        assert entities_and_relations[0] == "Parasite"
        for subject, relation, obj in zip(entities_and_relations[::2], entities_and_relations[1::2], entities_and_relations[2::2]):
            reverse = relation.endswith(" (reverse)")
            relation = relation.removesuffix(" (reverse)")
            head, tail = (obj, subject) if reverse else (subject, obj)
            assert labelled_edge(kg, head, relation, tail), (head, relation, tail)


def labelled_edge(kg, head: str, relation: str, tail: str) -> bool:
    heads = kg.link([head])[head] if not head.startswith("m.") else (head,)
    for h in heads:
        for node in kg.neighbours([h], relation, direction="out")[h]:
            if tail in (node.id, node.label):
                return True
    return False


def test_unknown_topic_entity_is_a_clear_stop(kg):
    lm = oracle([], [])
    pred = ask(kg, lm, "Who directed it?", ["m.0nothere"])
    assert pred.answers == [] and pred.paths == []
    assert pred.trace["stop_reason"] == "no_topic_entity"
    assert "m.0nothere" in pred.trace["error"]
    assert pred.trace["llm_calls"] == 0


def test_topics_are_linked_by_label_when_not_given(kg, ids):
    lm = oracle(["film.film.directed_by"], ["Bong Joon-ho"])
    pred = ask(kg, lm, "Who directed Parasite?")
    assert pred.trace["topic_entities"] == [ids["Parasite"]]
    assert pred.answers == ["Bong Joon-ho"]
    bracketed = ask(kg, oracle(["film.film.directed_by"], ["Bong Joon-ho"]), "who directed [Parasite]")
    assert bracketed.answers == ["Bong Joon-ho"]


def test_bad_questions_stop_with_a_reason(kg, ids):
    pred = ask(kg, oracle([], []), "   ", [ids["Parasite"]])
    assert pred.trace["stop_reason"] == "bad_question" and pred.trace["llm_calls"] == 0
    pred = ask(kg, oracle([], []), "why " * 2_000, [ids["Parasite"]])
    assert pred.trace["stop_reason"] == "bad_question" and "characters long" in pred.trace["error"]


def test_the_llm_call_cap_holds(kg, ids):
    lm = oracle(["film.film.directed_by", "people.person.place_of_birth"], ["Nowhere"])
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]], max_llm_calls=3)
    assert pred.trace["llm_calls"] == 3 == len(lm.scripted.calls)
    assert pred.trace["stop_reason"] == "llm_budget"


def test_long_candidate_lists_are_cut_by_similarity_first(kg, ids):
    lm = oracle(["film.film.genre (reverse)"], ["Inception"])
    pred = ask(kg, lm, "Which films are science fiction?", [ids["Science Fiction"]], max_candidates=2)
    (prune,) = [i for key, i in lm.scripted.calls if key == "entities_to_keep"]
    assert len(prune["candidate_entities"]) == 2  # five films, cut to two before the model saw them
    assert pred.trace["stop_reason"] in {"sufficient", "depth_exhausted", "half_stop"}


def test_kg_errors_end_the_walk_with_a_record(ids):
    from kg import SparqlEndpoint
    from kg.virtuoso import free_port

    down = KnowledgeGraph(SparqlEndpoint(f"http://127.0.0.1:{free_port()}/sparql", retries=0), profile="freebase")
    pred = ask(down, oracle([], []), "Who directed Parasite?", [ids["Parasite"]])
    assert pred.trace["stop_reason"] == "kg_error" and "failed after 1 attempts" in pred.trace["error"]
    assert pred.answers == []


def test_the_fact_filter_runs_only_when_facts_are_many(kg, ids):
    lm = oracle(["film.film.genre (reverse)"], ["Inception"])
    pred = ask(kg, lm, "Which films are science fiction?", [ids["Science Fiction"]], facts_kept=2)
    (call,) = [i for key, i in lm.scripted.calls if key == "kept_facts"]
    assert len(call["candidate_facts"]) == 5 and call["max_facts"] == 2
    (memory,) = [i for key, i in lm.scripted.calls if key == "updated_memory"]
    assert memory["new_facts"] == [" | ".join(fact) for fact in call["candidate_facts"][:2]]
    assert pred.trace["fallbacks"] == 0


def test_an_unusable_fact_filter_falls_back_to_similarity(kg, ids):
    lm = oracle(["film.film.genre (reverse)"], ["Inception"], kept_facts=lambda i: {"kept_facts": [["Not", "a", "fact"]]})
    pred = ask(kg, lm, "Which films are science fiction?", [ids["Science Fiction"]], facts_kept=2)
    (memory,) = [i for key, i in lm.scripted.calls if key == "updated_memory"]
    assert len(memory["new_facts"]) == 2  # the two facts most similar to the question, not nothing
    assert all(fact.endswith("| film.film.genre | Science Fiction") for fact in memory["new_facts"])
    assert pred.trace["fallbacks"] == 1 and pred.trace["dropped_selections"] == 1


def test_a_wide_frontier_shares_decisions(kg, ids):
    lm = oracle(["film.film.directed_by (reverse)", "film.film.genre"], ["Romance", "Science Fiction"])
    pred = ask(kg, lm, "What genres are the films directed by James Cameron?", [ids["James Cameron"]])
    assert sorted(pred.answers) == ["Romance", "Science Fiction"]
    prunes = [i["entity"] for key, i in lm.scripted.calls if key == "relations_to_follow"]
    # depth 1: Cameron; depth 2: Avatar and The Terminator are offered the same relations, Titanic more (an award)
    assert prunes[0] == "James Cameron" and sorted(prunes[1:]) == ["Avatar, The Terminator", "Titanic"]
    walked = [i["relation_walked"] for key, i in lm.scripted.calls if key == "entities_to_keep"]
    assert walked[0] == "James Cameron -> film.film.directed_by (reverse)"
    assert len(walked) == 2 and walked[1].endswith(" -> film.film.genre")
    assert sorted(walked[1].removesuffix(" -> film.film.genre").split(", ")) == ["Avatar", "The Terminator", "Titanic"]
