"""The program on the demo KG under a scripted model: behaviour, grounding and exact trace counts."""

from __future__ import annotations

from dataclasses import replace

import dspy
import pytest

from kgqa.kg import KnowledgeGraph
from kgqa.programs import KGQA, SKIPPED_IS_OFF, STEPS, WalkConfig
from tests.programs.oracle import oracle
from tests.programs.walk import ask, metaqa_kg, statuses


def calls(lm) -> list[str]:
    return [key for key, _ in lm.scripted.calls]


def test_one_hop_walks_every_step_and_the_trace_says_what_each_did(kg, ids):
    lm = oracle(["film.film.directed_by"])
    pred = ask(kg, lm, "Who directed Pulp Fiction?", [ids["Pulp Fiction"]])
    assert pred.answers == ["Quentin Tarantino"]
    assert pred.paths[0].startswith("# Reasoning Path:\nPulp Fiction -> film.") and pred.paths[0].endswith("# Answer:\nQuentin Tarantino")
    trace = pred.trace
    assert trace.stop_reason == "chosen" and trace.planned_hops == 1
    # a Freebase-shaped graph is retrieved 2 hops deep however short the plan: the relation prune
    # chooses the chains of hop 1 to go on by; extraction chooses among the ends of both hops
    assert trace.depth == 2 and calls(lm) == ["topic_kind", "relations_to_follow", "extracted_answers"]
    steps = statuses(trace)
    assert steps["plan"] == ["ran"] and steps["relation_prune"][0] == "ran" and steps["extraction"] == ["ran"]
    assert steps["relation_prune"][1] == "skipped: hop 2 is the plan's last: extraction chooses among its ends"
    assert steps["entity_prune"][0] == "skipped: the plan sets no condition"
    assert steps["fact_filter"] == ["skipped: the question sets no condition"]
    assert steps["memory_update"] == ["skipped: the question names one entity"]
    assert steps["sufficiency"] == ["skipped: the walk already retrieved a hop past the plan"]
    assert "Quentin Tarantino" in trace.candidates and trace.llm_calls == 3
    assert trace.input_tokens > 0 and trace.output_tokens > 0 and trace.fallbacks == 0
    # what each predictor spent, adding up to the question's totals
    assert {name: calls for name, (calls, _, _) in trace.step_usage.items()} == {"plan": 1, "prune_relations": 1, "extract_answers": 1}
    assert sum(u[1] for u in trace.step_usage.values()) == trace.input_tokens
    assert sum(u[2] for u in trace.step_usage.values()) == trace.output_tokens
    assert all(u[1] > 0 for u in trace.step_usage.values())


@pytest.mark.parametrize("step", STEPS)
def test_a_step_switched_off_makes_no_call_and_the_trace_says_so(kg, ids, step):
    handlers = {"relation_prune": "relations_to_follow", "entity_prune": "entities_to_keep", "fact_filter": "relevant_facts",
                "memory_update": "memory_notes", "sufficiency": "evidence_sufficient", "extraction": "extracted_answers"}
    question, topics = "Which films released before 2000 did James Cameron and Kate Winslet make?", [ids["James Cameron"], ids["Titanic"]]
    walk = {"entities_per_relation": 1, "min_depth": 1, "depth": 3, "clear_similarity": 1.0}
    every = oracle(["film.film.directed_by (reverse)"], hops=2, conditions=["released before 2000"])
    ask(kg, every, question, topics, **walk)
    lm = oracle(["film.film.directed_by (reverse)"], hops=2, conditions=["released before 2000"])
    off = ask(kg, lm, question, topics, **walk, **{step: False})
    assert handlers[step] in calls(every) and handlers[step] not in calls(lm)
    assert "ran" not in statuses(off.trace)[step] and any(s.startswith("skipped: switched off") for s in statuses(off.trace)[step])
    assert off.answers  # the walk still answers


@pytest.mark.parametrize("step", SKIPPED_IS_OFF)
def test_a_step_skipped_walks_as_it_does_switched_off(kg, ids, tmp_path, step):
    # what lets the ablation keep the compiled program's record of a question where the step skipped
    def walk(**off):
        if step == "extraction":  # one relation chain reached: nothing to choose between
            one = metaqa_kg(tmp_path, ("Parasite", "directed_by", "Bong"))
            return ask(one, oracle(["directed_by"]), "who directed [Parasite]", **off), "one relation chain: every end answers"
        lm = oracle(["film.film.directed_by"])
        return ask(kg, lm, "Who directed Pulp Fiction?", [ids["Pulp Fiction"]], **off), None

    skipped, why = walk()
    assert all(s.startswith("skipped") for s in statuses(skipped.trace)[step])
    assert why is None or statuses(skipped.trace)[step] == [f"skipped: {why}"]
    off, _ = walk(**{step: False})
    assert (off.answers, off.paths) == (skipped.answers, skipped.paths)
    same = ("llm_calls", "input_tokens", "depth", "relation_path", "candidates", "facts", "memory")
    assert {k: getattr(off.trace, k) for k in same} == {k: getattr(skipped.trace, k) for k in same}


def test_the_plan_decides_the_depth_and_sufficiency_may_add_a_hop(tmp_path):
    kg = metaqa_kg(tmp_path, ("Parasite", "directed_by", "Bong"), ("Bong", "born_in", "Daegu"), ("Parasite", "release_year", "2019"))

    def short(inputs):  # the evidence is short until a path ends at the birthplace
        return any(path.endswith("Daegu") for path in inputs["best_paths"])

    lm = oracle(["directed_by", "born_in"], hops=1, reached=short,
                extracted_answers=lambda i: {"extracted_answers": [p.rsplit(" -> ", 1)[-1] for p in i["candidate_paths"] if p.count(" -> ") == 4]})
    pred = ask(kg, lm, "where was the director of [Parasite] born")
    assert pred.answers == ["Daegu"]
    assert pred.trace.planned_hops == 1 and pred.trace.extended_hops == 1 and pred.trace.depth == 2
    assert statuses(pred.trace)["sufficiency"] == ["ran", "skipped: no hop left to add"]
    told = ask(kg, oracle(["directed_by", "born_in"], hops=2), "where was the director of [Parasite] born")
    assert "Daegu" in told.answers and told.trace.extended_hops == 0  # planned 2 hops: sufficient at once


def test_a_sure_chain_prior_takes_the_walk_a_hop_past_a_plan_that_stopped_on_its_way(tmp_path):
    from kgqa.programs.chains import ChainPrior
    from kgqa.programs.steps.sufficiency import GOES_ON

    kg = metaqa_kg(tmp_path, ("Parasite", "directed_by", "Bong"), ("Bong", "born_in", "Daegu"))
    question = "where was the director of [Parasite] born"
    lm = oracle(["directed_by", "born_in"], hops=1)  # plans one hop, finds the evidence sufficient
    program = KGQA(kg, config=WalkConfig(extraction=False))
    assert ask(kg, lm, question, extraction=False).answers == ["Bong"]
    program.chain_prior = ChainPrior.fit([("where was the director of [X] born", [["directed_by", "born_in"]])], key="shape")
    with dspy.context(lm=lm):
        pred = program(question=question)
    assert pred.answers[0] == "Daegu"
    assert pred.trace.planned_hops == 1 and pred.trace.extended_hops == 1
    assert statuses(pred.trace)["sufficiency"] == [f"skipped: {GOES_ON}", "skipped: no hop left to add"]
    assert "check_sufficiency" not in pred.trace.step_usage  # no call decided it
    program.chain_prior = ChainPrior.fit([("where was the director of [X] born", [["directed_by"]])], key="shape")
    with dspy.context(lm=lm):  # a prior sure of the chain the walk took has nothing to add
        assert program(question=question).answers == ["Bong"]


def test_a_plan_that_names_its_last_relation_needs_no_sufficiency_or_extraction_call(tmp_path):
    kg = metaqa_kg(tmp_path, ("Parasite", "directed_by", "Bong"), ("Mother", "directed_by", "Bong"), ("Okja", "written_by", "Bong"),
                    ("Parasite", "release_year", "2019"), ("Mother", "release_year", "2009"))

    def planned(inputs):
        return {"topic_kind": "person", "answer_kind": "movie", "hop_targets": ["movie (directed by)"], "answer_constraints": []}

    lm = oracle(["directed_by (reverse)"], topic_kind=planned)
    pred = ask(kg, lm, "which movies did [Bong] direct")
    assert sorted(pred.answers) == ["Mother", "Parasite"] and calls(lm) == ["topic_kind"]
    steps = statuses(pred.trace)
    assert steps["sufficiency"] == ["skipped: the best path ends by the relation the plan's last hop names"]
    assert steps["extraction"][0].startswith("skipped: the best path goes by the relation the plan's last hop names")
    # a condition in the question leaves extraction a decision to make
    lm = oracle(["directed_by (reverse)"], topic_kind=planned)
    pred = ask(kg, lm, "which movies did [Bong] direct after 2010")
    assert calls(lm) == ["topic_kind", "relevant_facts", "extracted_answers"] and statuses(pred.trace)["extraction"] == ["ran"]


def test_three_hops_by_the_relations_the_plan_names_answer_every_end_of_that_chain_only(tmp_path):
    # Nikita wrote Burnt and Barber and directed Barber and Other (with Ivan): the writer's films'
    # directors are Nikita alone; Ivan is reached only through a film Nikita directed, not wrote
    kg = metaqa_kg(tmp_path, ("Burnt", "written_by", "Nikita"), ("Barber", "written_by", "Nikita"), ("Barber", "directed_by", "Nikita"),
                    ("Other", "directed_by", "Nikita"), ("Other", "directed_by", "Ivan"))
    plan = {"topic_kind": "movie", "answer_kind": "director", "answer_constraints": [],
            "hop_targets": ["writer (written by)", "movie (written by)", "director (directed by)"]}
    lm = oracle([], topic_kind=lambda i: plan)
    pred = ask(kg, lm, "who directed the films written by the writer of [Burnt]")
    assert pred.answers == ["Nikita"] and "relations_to_follow" not in calls(lm)  # every hop's target named its relation
    assert pred.trace.walk[1]["target"] == "movie (written by)"


def test_the_chain_the_plan_names_ranks_first_however_unlike_the_question_its_words_are(tmp_path):
    # MetaQA seed 1: "screenwriters" is nearer "directed by" than "written by" for the sentence model,
    # but the plan names written_by at every hop: its ends rank first and answer without a call
    coyle = "The Friends of Eddie Coyle"
    kg = metaqa_kg(tmp_path, (coyle, "written_by", "George V. Higgins"), ("Killing Them Softly", "written_by", "George V. Higgins"),
                    ("Killing Them Softly", "release_year", "2012"), (coyle, "directed_by", "Peter Yates"),
                    *[(film, "directed_by", "Peter Yates") for film in ("Krull", "Suspect", "Eyewitness", "Breaking Away")],
                    ("Krull", "release_year", "1983"), ("Suspect", "release_year", "1987"), ("Eyewitness", "release_year", "1981"),
                    ("Breaking Away", "release_year", "1979"))
    plan = {"topic_kind": "movie", "answer_kind": "year", "answer_constraints": [],
            "hop_targets": ["writer (written by)", "movie (written by)", "year (release year)"]}
    lm = oracle([], topic_kind=lambda i: plan)
    pred = ask(kg, lm, f"the films that share screenwriters with [{coyle}] were released in which years")
    assert pred.answers == ["2012"] and calls(lm) == ["topic_kind"]
    assert statuses(pred.trace)["extraction"][0].startswith("skipped: the best path goes by the relation the plan's last hop names")


def test_a_plan_a_hop_too_long_does_not_lift_the_ends_past_the_answer(kg, ids):
    # "Who acted in Inception?" planned as two hops (the CVT counted): the actors are reached at
    # hop 1, their countries and birthplaces at hop 2, the plan's unpruned last hop. No target
    # names a relation there, so no chain of it takes the plan's bonus over the ends of hop 1.
    lm = oracle(["film.film.starring -> film.performance.actor"], hops=2, extracted_answers=lambda i: {"extracted_answers": []})
    pred = ask(kg, lm, "Who acted in Inception?", [ids["Inception"]])
    assert pred.trace.depth == 2 and statuses(pred.trace)["extraction"] == ["fell_back"]  # the first ranked answers
    assert [s["why"] for s in pred.trace.steps if s["step"] == "extraction"] == ["no answer chosen: the first ranked"]
    assert pred.answers[0] in {end for _, _, end, _ in pred.trace.walk[0]["edges"]}


def test_depth_caps_the_walk(kg, ids):
    lm = oracle(["film.film.directed_by", "people.person.place_of_birth"])
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]], depth=1)
    assert pred.trace.planned_hops == 1 and pred.trace.depth == 1
    assert pred.answers == ["Bong Joon-ho"]


def test_two_hops_through_a_cvt_node_are_one_hop(kg, ids):
    lm = oracle(["film.film.starring -> film.performance.actor"], hops=1)
    pred = ask(kg, lm, "Who starred in Titanic?", [ids["Titanic"]], depth=1)
    assert sorted(pred.answers) == ["Kate Winslet", "Leonardo DiCaprio"]
    assert all(" -> film.film.starring -> m.0dmc" in p and "-> film.performance.actor ->" in p for p in pred.paths)
    assert pred.trace.hops_walked == 1 and len(pred.trace.relation_path) == 2


def test_a_relation_walked_backwards(kg, ids):
    lm = oracle(["film.film.directed_by (reverse)"])
    pred = ask(kg, lm, "Which films did James Cameron direct?", [ids["James Cameron"]])
    assert sorted(pred.answers) == ["Avatar", "The Terminator", "Titanic"]
    assert "James Cameron -> film.film.directed_by (reverse) -> Avatar" in "\n".join(pred.paths) or \
        "James Cameron -> film.director.film -> Avatar" in "\n".join(pred.paths)


def test_the_fact_filter_keeps_values_that_decide_and_extraction_reads_them(kg, ids):
    def before_2000(inputs):
        return {"relevant_facts": [f for f in inputs["candidate_facts"] if "release date" in f and f.split(" | ")[2] < "2000"]}

    def chosen(inputs):
        assert inputs["known_facts"]  # the kept facts reach the answer step
        return {"extracted_answers": [f.split(" | ")[0] for f in inputs["known_facts"]]}

    lm = oracle(["film.film.directed_by (reverse)"], relevant_facts=before_2000, extracted_answers=chosen)
    pred = ask(kg, lm, "Which films did James Cameron direct before 2000?", [ids["James Cameron"]], depth=1)
    (offered,) = [i["candidate_facts"] for key, i in lm.scripted.calls if key == "relevant_facts"]
    assert any(f.startswith("Avatar | film initial release date | 2009") for f in offered)
    assert {f.split(" | ")[0] for f in pred.trace.facts} == {"Titanic", "The Terminator"}
    assert set(pred.answers[:2]) == {"Titanic", "The Terminator"}
    assert statuses(pred.trace)["fact_filter"] == ["ran"]


def test_one_fact_about_the_candidates_is_kept_without_a_call(tmp_path):
    kg = metaqa_kg(tmp_path, ("Heat", "directed_by", "Michael Mann"), ("Michael Mann", "born_in", "1943"), ("Heat", "release_year", "1995"))
    lm = oracle(["directed_by"])
    pred = ask(kg, lm, "who directed [Heat] before 2000")
    assert statuses(pred.trace)["fact_filter"] == ["skipped: one fact about the candidates: it is kept"]
    assert pred.trace.facts == ["Michael Mann | born in | 1943"] and "relevant_facts" not in calls(lm)
    (extraction,) = [i for key, i in lm.scripted.calls if key == "extracted_answers"]
    assert extraction["known_facts"] == ["Michael Mann | born in | 1943"] and pred.answers == ["Michael Mann"]


def test_no_fact_filter_call_when_extraction_has_nothing_to_decide(tmp_path):
    # one relation chain reached: every end answers, and no step would read the facts kept
    kg = metaqa_kg(tmp_path, ("Heat", "directed_by", "Michael Mann"), ("Michael Mann", "born_in", "1943"),
                    ("Michael Mann", "born_in", "Chicago"), ("Heat", "directed_by", "Dante Spinotti"))
    lm = oracle(["directed_by"])
    pred = ask(kg, lm, "who directed [Heat] before 2000", depth=1)
    assert statuses(pred.trace)["fact_filter"] == [
        "skipped: no step reads the facts: extraction is skipped (one relation chain: every end answers)"]
    assert statuses(pred.trace)["extraction"] == ["skipped: one relation chain: every end answers"]
    assert calls(lm) == ["topic_kind"] and pred.trace.facts == []
    assert sorted(pred.answers) == ["Dante Spinotti", "Michael Mann"]


def test_a_value_word_in_a_topic_s_name_sets_no_condition(tmp_path):
    kg = metaqa_kg(tmp_path, ("The First Wives Club", "has_genre", "Comedy"), ("Comedy", "genre_of", "Airplane"),
                    ("Airplane", "release_year", "1980"))
    pred = ask(kg, oracle(["has_genre"]), "what genre is [The First Wives Club]")
    assert statuses(pred.trace)["fact_filter"] == ["skipped: the question sets no condition"]
    assert pred.answers == ["Comedy"]
    dated = ask(kg, oracle(["has_genre"]), "what genre is [The First Wives Club], first of all")  # "first" outside the name
    assert statuses(dated.trace)["fact_filter"] != ["skipped: the question sets no condition"]


def test_the_entity_prune_chooses_the_entities_to_go_on_from(kg, ids):
    def before_2000(inputs):
        return [c for c in inputs["candidate_entities"] if c in {"Titanic", "The Terminator"}]

    lm = oracle(["film.film.directed_by (reverse)", "film.film.genre"], conditions=["released before 2000"], keep=before_2000)
    pred = ask(kg, lm, "What genres are the films James Cameron directed before 2000?", [ids["James Cameron"]],
               entities_per_relation=2, beam_width=1)
    (prune,) = [i for key, i in lm.scripted.calls if key == "entities_to_keep"]
    assert prune["conditions"] == ["released before 2000"] and len(prune["candidate_entities"]) == 3
    second = pred.trace.walk[1]
    assert {edge[0] for edge in second["edges"]} <= {"Titanic", "The Terminator"}  # Avatar was not gone on from


def test_memory_update_notes_what_each_named_entity_reached(tmp_path):
    kg = metaqa_kg(tmp_path, ("Lala", "born_in", "New York"), ("Lala", "lived_in", "Brooklyn"),
                    ("Seymour", "born_in", "Chicago"), ("Seymour", "lived_in", "Brooklyn"))

    def notes(inputs):
        return {"memory_notes": [f"{p.split(' -> ')[0]} reached {p.rsplit(' -> ', 1)[-1]}" for p in inputs["new_evidence"]][:2]}

    def chosen(inputs):
        assert inputs["memory_notes"]
        return {"extracted_answers": ["Brooklyn"]}

    lm = oracle(["lived_in"], memory_notes=notes, extracted_answers=chosen)
    pred = ask(kg, lm, "which city is home to [Lala] and [Seymour]")
    (call,) = [i for key, i in lm.scripted.calls if key == "memory_notes"]
    assert call["memory"] == [] and {p.split(" -> ")[0] for p in call["new_evidence"]} == {"Lala", "Seymour"}
    assert pred.answers[0] == "Brooklyn" and len(pred.trace.memory) == 2 and statuses(pred.trace)["memory_update"] == ["ran"]
    silent = ask(kg, oracle(["lived_in"], memory_notes=lambda i: {"memory_notes": []}), "which city is home to [Lala] and [Seymour]")
    assert statuses(silent.trace)["memory_update"] == ["fell_back"]  # no notes: what the graph says each reached
    assert any(note.startswith("Lala reaches") for note in silent.trace.memory)


def test_no_memory_call_where_the_topic_entities_meet_nowhere_and_only_extraction_would_read_it(tmp_path):
    # Lala reaches Brooklyn, Seymour Queens: no candidate both reach, so a note could only repeat
    # each one's own paths, which extraction is shown beside the notes
    kg = metaqa_kg(tmp_path, ("Lala", "lived_in", "Brooklyn"), ("Seymour", "born_in", "Queens"))
    lm = oracle(["lived_in", "born_in"], hops=1)
    pred = ask(kg, lm, "which city is home to [Lala] and [Seymour]", depth=1)
    steps = statuses(pred.trace)
    assert steps["memory_update"] == ["skipped: the named entities' paths meet at no candidate and sufficiency is skipped "
                                      "(no hop left to add): each entity's note could only repeat its own paths, which "
                                      "extraction is shown"]
    assert steps["extraction"] == ["ran"] and "memory_notes" not in calls(lm) and pred.trace.memory == []
    # with a hop left to add, sufficiency reads the notes (an entity with no answer yet may need it): they are written
    deeper = oracle(["lived_in", "born_in"], hops=1)
    ask(kg, deeper, "which city is home to [Lala] and [Seymour]", depth=2, min_depth=1)
    assert "memory_notes" in calls(deeper)


def test_reflection_at_a_dead_end_resumes_from_entities_passed_a_hop_before(tmp_path):
    kg = metaqa_kg(tmp_path, ("X", "r1", "B"), ("X", "r2", "C"), ("C", "r3", "D"))
    lm = oracle(["r1"], hops=2, extracted_answers=lambda i: {"extracted_answers": ["D"]})
    pred = ask(kg, lm, "what does [X] lead to", beam_width=1)
    # B offers only the edge back to X: a dead end; C, passed at hop 1, is the one entity to resume from (no call)
    assert pred.trace.reflections == 1 and pred.answers == ["D"]
    assert statuses(pred.trace)["reflection"] == ["skipped: one entity passed a hop before: the walk resumes from it"]
    assert "entities_to_resume" not in calls(lm)


def test_a_walk_that_reaches_nothing_stops_with_a_reason(tmp_path):
    kg = metaqa_kg(tmp_path, ("A", "same_as", "A"))
    pred = ask(kg, oracle([]), "what is [A]")
    assert pred.trace.stop_reason == "dead_end" and pred.answers == []


def garbage(inputs):
    return "I am not sure what you mean."


INVENTED = {
    "topic_kind": lambda i: {"topic_kind": "film", "answer_kind": "place", "hop_targets": ["the director", "the birthplace"], "answer_constraints": ["x"]},
    "relations_to_follow": lambda i: {"relations_to_follow": ["film.film.made_up_relation"]},
    "entities_to_keep": lambda i: {"entities_to_keep": ["Nobody Atall"]},
    "relevant_facts": lambda i: {"relevant_facts": ["Parasite | won | everything"]},
    "memory_notes": lambda i: {"memory_notes": []},
    "evidence_sufficient": lambda i: {"evidence_sufficient": True},
    "entities_to_resume": lambda i: {"entities_to_resume": ["Ghost"]},
    "extracted_answers": lambda i: {"extracted_answers": ["Invented Person"]},
}


@pytest.mark.parametrize("handlers,default", [({}, garbage), (INVENTED, None)], ids=["garbage", "invented"])
def test_a_model_that_answers_garbage_or_invents_follows_only_real_candidates(kg, ids, handlers, default):
    from kgqa.lm.scripted import scripted_lm

    lm = scripted_lm(handlers, default=default)
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]], depth=2)
    trace = pred.trace
    assert trace.stop_reason == "plan_done" and trace.depth >= 1
    assert trace.dropped_selections > 0 and trace.fallbacks > 0
    assert "fell_back" in statuses(trace)["extraction"]
    assert pred.answers and not {"Invented Person", "Nobody Atall", "Ghost"} & set(pred.answers)
    assert all("won | everything" not in fact for fact in trace.facts)
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
    lm = oracle([])
    pred = ask(kg, lm, "Who directed it?", ["m.0nothere"])
    assert pred.answers == [] and pred.paths == []
    assert pred.trace.stop_reason == "no_topic_entity"
    assert "m.0nothere" in pred.trace.error
    assert pred.trace.llm_calls == 0


def test_topics_are_linked_by_label_when_not_given(kg, ids):
    lm = oracle(["film.film.directed_by"])
    pred = ask(kg, lm, "Who directed Parasite?")
    assert pred.trace.topic_entities == [ids["Parasite"]]
    assert pred.answers == ["Bong Joon-ho"]
    bracketed = ask(kg, oracle(["film.film.directed_by"]), "who directed [Parasite]")
    assert bracketed.answers == ["Bong Joon-ho"]


def test_bad_questions_stop_with_a_reason(kg, ids):
    pred = ask(kg, oracle([]), "   ", [ids["Parasite"]])
    assert pred.trace.stop_reason == "bad_question" and pred.trace.llm_calls == 0
    pred = ask(kg, oracle([]), "why " * 2_000, [ids["Parasite"]])
    assert pred.trace.stop_reason == "bad_question" and "characters long" in pred.trace.error


def test_the_llm_call_cap_holds(kg, ids):
    lm = oracle(["film.film.directed_by", "people.person.place_of_birth"])
    pred = ask(kg, lm, "Where was the director of Parasite born?", [ids["Parasite"]], max_llm_calls=2)
    assert pred.trace.llm_calls == 2 == len(lm.scripted.calls)
    assert pred.answers  # the walk went on with similarity choices and still answered


def test_long_candidate_lists_are_cut_by_similarity_first(kg, ids):
    lm = oracle(["film.film.directed_by (reverse)"], hops=2)
    ask(kg, lm, "Which films did James Cameron direct?", [ids["James Cameron"]], max_candidates=2, clear_similarity=1.0)
    prune = [i for key, i in lm.scripted.calls if key == "relations_to_follow"][0]
    assert len(prune["candidate_relations"]) == 2  # cut to two before the model saw them


def test_kg_errors_end_the_walk_with_a_record(ids):
    from kgqa.kg import SparqlEndpoint
    from kgqa.kg.virtuoso import free_port

    down = KnowledgeGraph(SparqlEndpoint(f"http://127.0.0.1:{free_port()}/sparql", retries=0), profile="freebase")
    pred = ask(down, oracle([]), "Who directed Parasite?", [ids["Parasite"]])
    assert pred.trace.stop_reason == "kg_error" and "failed after 1 attempts" in pred.trace.error
    assert pred.answers == []


def test_a_wide_frontier_shares_decisions(kg, ids):
    lm = oracle(["film.film.directed_by (reverse)", "film.film.genre"])
    pred = ask(kg, lm, "What genres are the films directed by James Cameron?", [ids["James Cameron"]])
    assert sorted(pred.answers) == ["Romance", "Science Fiction"]
    prunes = [i for key, i in lm.scripted.calls if key == "relations_to_follow"]
    assert [i["entity"] for i in prunes] == ["James Cameron"]  # one decision for hop 1; hop 2 is the plan's last
    first = pred.trace.walk[0]  # the prune's own choice, apart from the relations the beam added to it
    assert first["pruned"] == ["film.film.directed_by (reverse)"] and set(first["pruned"]) < set(first["chosen"])
    assert calls(lm) == ["topic_kind", "relations_to_follow", "evidence_sufficient", "extracted_answers"]


def test_choices_go_to_a_constraining_lm_as_a_json_schema(kg, ids):
    from kgqa.lm.adapter import ConstrainedJSONAdapter

    lm = oracle(["film.film.directed_by"], constrained=True)
    program = KGQA(kg, config=WalkConfig(relations_per_entity=2, clear_similarity=1.0, min_depth=1))
    with dspy.context(lm=lm, adapter=ConstrainedJSONAdapter()):
        pred = program(question="Who directed Parasite?", topic_entities=[ids["Parasite"]])
    assert pred.answers == ["Bong Joon-ho"]
    by_key = dict(zip(calls(lm), lm.scripted.formats))
    answer_schema = by_key["extracted_answers"]["schema"]["properties"]["extracted_answers"]
    (shown,) = [i["candidate_paths"] for key, i in lm.scripted.calls if key == "extracted_answers"]
    assert sorted(answer_schema["items"]["enum"]) == sorted(pred.trace.candidates) and len(shown) == len(pred.trace.candidates)
    assert answer_schema["maxItems"] == WalkConfig().answers_chosen and answer_schema["minItems"] == 1  # "none" is no answer
    plan_schema = by_key["topic_kind"]["schema"]["properties"]["hop_targets"]
    assert plan_schema["maxItems"] == WalkConfig().depth and plan_schema["minItems"] == 1
    assert by_key["evidence_sufficient"]["schema"]["properties"]["evidence_sufficient"]["type"] == "boolean"


def test_an_lm_without_schemas_gets_the_same_prompt_and_its_near_misses_snap(kg, ids):
    from kgqa.lm.adapter import ConstrainedJSONAdapter

    lm = oracle([], relations_to_follow=lambda i: {"relations_to_follow": ["Film.Film.Directed_By "]},
                extracted_answers=lambda i: {"extracted_answers": ["bong joon-ho"]})
    with dspy.context(lm=lm, adapter=ConstrainedJSONAdapter()):
        pred = KGQA(kg, config=WalkConfig(clear_similarity=1.0))(question="Who directed Parasite?", topic_entities=[ids["Parasite"]])
    assert lm.scripted.formats == [None] * len(lm.scripted.calls)  # no schema sent
    assert pred.answers == ["Bong Joon-ho"] and pred.trace.fallbacks == 0


@pytest.mark.parametrize("target,question,answer", [("genre", "What genre is Inception?", "Science Fiction"),
                                                    ("capital", "What is the capital of Austria?", "Vienna")])
def test_a_hop_whose_target_names_its_relation_needs_no_call(kg, target, question, answer):
    lm = oracle([target], topic_kind=lambda i: {"topic_kind": "entity", "answer_kind": target, "hop_targets": [target], "answer_constraints": []},
                extracted_answers=lambda i: {"extracted_answers": [answer]})
    pred = ask(kg, lm, question)
    assert pred.answers[0] == answer
    assert "relations_to_follow" not in calls(lm)  # the plan named the relation: hop 1's prune needed no call
    assert statuses(pred.trace)["relation_prune"][0] == f"skipped: the hop's target {target!r} names its relation"


def test_a_target_close_to_two_relations_is_still_asked(kg):
    # "film maker" is about as near "director film" as "film genre": the model decides
    plan = {"topic_kind": "entity", "answer_kind": "film maker", "hop_targets": ["film maker"], "answer_constraints": []}
    lm = oracle(["film.film.directed_by"], topic_kind=lambda i: plan)
    pred = ask(kg, lm, "Who directed Parasite?")
    assert pred.answers == ["Bong Joon-ho"]
    (call,) = [i for key, i in lm.scripted.calls if key == "relations_to_follow"]
    assert call["candidate_relations"][:2] == ["film.director.film (reverse)", "film.film.genre"]  # most similar first


def test_an_entity_passed_earlier_can_be_the_answer(tmp_path):
    # who directed the films written by the writer of Burnt? The writer directed them himself.
    kg = metaqa_kg(tmp_path, ("Burnt", "written_by", "Nikita"), ("Barber", "written_by", "Nikita"), ("Barber", "directed_by", "Nikita"),
                    ("Burnt", "directed_by", "Nikita"))
    lm = oracle(["written_by", "written_by (reverse)", "directed_by"],
                extracted_answers=lambda i: {"extracted_answers": [p.rsplit(" -> ", 1)[-1] for p in i["candidate_paths"] if p.count(" -> ") == 6]})
    pred = ask(kg, lm, "who directed the films written by the writer of [Burnt]", None)
    assert pred.answers == ["Nikita"] and pred.trace.depth == 3
    assert pred.paths[0].endswith(" -> Nikita -> written_by (reverse) -> Barber -> directed_by -> Nikita\n# Answer:\nNikita")
    # walking back the edge a trail came by never reaches the entity it left, nor the topic
    back = ask(kg, oracle(["written_by", "written_by (reverse)"]), "films written by the writer of [Burnt]", None)
    assert back.answers == ["Barber"]


def test_a_large_demo_pool_shows_the_demos_nearest_the_question_s_shape(kg, ids):
    # by words, "Who directed Titanic?" is nearest the Titanic questions; by shape, the Parasite one
    def demo(question, topic, hops):
        return dspy.Example(question=question, topic=topic, topic_kind="movie", answer_kind=hops[-1], hop_targets=hops,
                            answer_constraints=[]).with_inputs("question", "topic")

    program = KGQA(kg, config=WalkConfig(demos_per_call=1))
    program.plan.predict.demos = [demo("When was Titanic released?", "Titanic", ["year (release date)"]),
                          demo("Which actors starred in Titanic?", "Titanic", ["performance (starring)", "actor (actor)"]),
                          demo("Who directed Parasite?", "Parasite", ["director (directed by)"])]
    lm = oracle(["film.film.directed_by"])
    with dspy.context(lm=lm):
        pred = program(question="Who directed Titanic?", topic_entities=[ids["Titanic"]])
    assert pred.answers == ["James Cameron"]
    plan_demos = lm.scripted.shown[0]
    assert "Who directed Parasite?" in plan_demos and "Titanic" not in plan_demos


def test_a_demo_lists_at_most_demo_choices_candidates_its_chosen_ones_kept(kg, ids):
    offered = [f"film.film.relation_{n}" for n in range(30)]
    demo = dspy.Example(question="Who wrote Titanic?", plan=["writer"], hop="hop 1 of 1: writer", entity="Titanic",
                        candidate_relations=offered, relations_to_follow=["film.film.relation_25"]).with_inputs(
                            "question", "plan", "hop", "entity", "candidate_relations")
    program = KGQA(kg, config=WalkConfig(demo_choices=4))
    program.prune_relations.predict.demos = [demo]
    lm = oracle(["film.film.directed_by"])
    with dspy.context(lm=lm):
        program(question="Who directed Pulp Fiction?", topic_entities=[ids["Pulp Fiction"]])
    (shown,) = [text for (key, _), text in zip(lm.scripted.calls, lm.scripted.shown) if key == "relations_to_follow"]
    listed = [r for r in offered if f'"{r}"' in shown]
    assert listed == ["film.film.relation_0", "film.film.relation_1", "film.film.relation_2", "film.film.relation_25"]
    assert program.prune_relations.predict.demos[0].candidate_relations == offered  # the compiled demo is kept whole
    short = offered[:5]  # lists within the limit are shown as they are
    program.prune_relations.predict.demos = [demo.copy(candidate_relations=short, relations_to_follow=[short[0]])]
    program.config = WalkConfig(demo_choices=5)
    lm = oracle(["film.film.directed_by"])
    with dspy.context(lm=lm):
        program(question="Who directed Pulp Fiction?", topic_entities=[ids["Pulp Fiction"]])
    (shown,) = [text for (key, _), text in zip(lm.scripted.calls, lm.scripted.shown) if key == "relations_to_follow"]
    assert [r for r in offered if f'"{r}"' in shown] == short


def test_answers_every_topic_entity_reaches_rank_first(tmp_path):
    # "which city is home to both Lala and Seymour": each reaches cities; only Brooklyn is reached from both
    kg = metaqa_kg(tmp_path, ("Lala", "born_in", "New York"), ("Lala", "lived_in", "Brooklyn"),
                    ("Seymour", "born_in", "Chicago"), ("Seymour", "lived_in", "Brooklyn"))
    lm = oracle(["born_in", "lived_in"])
    pred = ask(kg, lm, "which city is home to [Lala] and [Seymour]", extraction=False)
    assert pred.trace.candidates[0] == "Brooklyn" and pred.answers[0] == "Brooklyn"
    assert pred.paths[0].endswith("-> lived_in -> Brooklyn\n# Answer:\nBrooklyn")


def test_extraction_chooses_among_the_answers_every_topic_entity_reaches(tmp_path):
    # "which film did Ang make with Jim": each reaches several films by several relations, two are
    # reached from both; extraction is shown those two first (the ranking puts them first), then the
    # others (a meeting may be a hub)
    kg = metaqa_kg(tmp_path, ("Ang", "directed", "Hulk"), ("Ang", "produced", "Lust"), ("Ang", "directed", "Eat"),
                    ("Jim", "wrote", "Hulk"), ("Jim", "edited", "Lust"), ("Jim", "wrote", "Ride"))
    relations = ["directed", "produced", "wrote", "edited"]
    lm = oracle(relations, hops=1, extracted_answers=lambda i: {"extracted_answers": ["Lust"]})
    pred = ask(kg, lm, "which film did [Ang] make with [Jim]")
    (shown,) = [i["candidate_paths"] for key, i in lm.scripted.calls if key == "extracted_answers"]
    ends = [path.rsplit(" -> ", 1)[-1] for path in shown]
    assert sorted(ends[:2]) == ["Hulk", "Lust"] and sorted(ends[2:]) == ["Eat", "Ride"] and ends == pred.trace.candidates
    assert pred.answers[0] == "Lust" and "Eat" not in pred.answers and "Ride" not in pred.answers  # no chain brings them


def test_where_the_topic_entities_meet_nearest_ranks_before_a_meeting_a_hop_further(tmp_path):
    # "which film did Slade direct that starred Lautner": both reach Eclipse in a hop each; both
    # reach its sequel too, Slade two hops away. The nearest meeting ranks first.
    kg = metaqa_kg(tmp_path, ("Slade", "directed", "Eclipse"), ("Lautner", "starred_in", "Eclipse"),
                    ("Lautner", "starred_in", "Breaking Dawn"), ("Eclipse", "sequel", "Breaking Dawn"),
                    ("Lautner", "starred_in", "Valentine's Day"))
    relations = ["directed", "starred_in", "sequel"]
    lm = oracle(relations, hops=1)
    pred = ask(kg, lm, "which film did [Slade] direct that starred [Lautner]", min_depth=2)
    # the sequel: 3 hops in all; then what one of them reaches, in the places left
    assert pred.trace.depth == 2 and pred.trace.candidates == ["Eclipse", "Breaking Dawn", "Valentine's Day"]
    assert pred.answers[0] == "Eclipse" and statuses(pred.trace)["extraction"] == ["ran"]
    # where they meet as near at two candidates, extraction chooses between them
    (tmp_path / "two").mkdir()
    two = metaqa_kg(tmp_path / "two", ("Slade", "directed", "Eclipse"), ("Lautner", "starred_in", "Eclipse"),
                     ("Slade", "produced", "Hard Candy"), ("Lautner", "starred_in", "Hard Candy"))
    lm = oracle([*relations, "produced"], hops=1, extracted_answers=lambda i: {"extracted_answers": ["Hard Candy"]})
    pred = ask(two, lm, "which film did [Slade] direct that starred [Lautner]", min_depth=2)
    assert "extracted_answers" in calls(lm) and pred.answers[0] == "Hard Candy"
    assert statuses(pred.trace)["extraction"] == ["ran"]


def test_a_question_without_ids_has_its_topic_chosen_among_plausible_candidates(kg, ids):
    # "Austria" names Austria exactly and Australia nearly: the model is shown both, with their relations
    lm = oracle(["location.country.capital"], entities_meant=lambda i: {"entities_meant": [c for c in i["candidate_entities"] if c.startswith("Australia")]})
    pred = ask(kg, lm, "What is the capital of Austria?", topic_choice=True)
    (call,) = [i for key, i in lm.scripted.calls if key == "entities_meant"]
    assert [c.split(" (")[0] for c in call["candidate_entities"]] == ["Austria", "Australia"]
    assert all(": " in c and "country capital" in c for c in call["candidate_entities"])  # what the graph relates each to
    assert [t["name"] for t in pred.trace.linking["linked"]] == ["Australia"] and pred.trace.topic_names == ["Australia"]
    assert statuses(pred.trace)["topic_choice"] == ["ran"] and calls(lm)[0] == "entities_meant"
    # an unusable choice falls back to the linker's; given topics and a switch skip the step
    lm = oracle(["location.country.capital"], entities_meant=lambda i: {"entities_meant": ["Atlantis"]})
    pred = ask(kg, lm, "What is the capital of Austria?", topic_choice=True)
    assert pred.trace.topic_names == ["Austria"] and statuses(pred.trace)["topic_choice"] == ["fell_back"]
    for topics, walk in (([ids["Parasite"]], {"topic_choice": True}), (None, {})):  # off by default
        lm = oracle(["location.country.capital"])
        pred = ask(kg, lm, "What is the capital of Austria?", topics, **walk)
        assert "entities_meant" not in calls(lm)
    assert statuses(pred.trace)["topic_choice"] == ["skipped: switched off: the linker's choice"]


def test_one_plausible_topic_needs_no_choice(kg):
    lm = oracle(["film.film.directed_by"])
    pred = ask(kg, lm, "Who directed Pulp Fiction?", topic_choice=True)
    assert "entities_meant" not in calls(lm) and pred.trace.topic_names == ["Pulp Fiction"]
    assert statuses(pred.trace)["topic_choice"] == ["skipped: 1 plausible candidate: the linker's choice"]


def test_extraction_is_shown_other_chains_than_the_one_with_most_ends(tmp_path):
    # "where did Lauren live": twelve friends, one place lived, one birthplace; with places for
    # three, one end a chain, each chain is shown (and the chosen one answers)
    friends = [f"Friend {n}" for n in range(12)]
    kg = metaqa_kg(tmp_path, *[("Lauren", "friend", name) for name in friends], ("Lauren", "lived_in", "Los Angeles"),
                    ("Lauren", "born_in", "Laguna Beach"))
    lm = oracle(["friend", "lived_in", "born_in"], hops=1, extracted_answers=lambda i: {"extracted_answers": ["Los Angeles"]})
    pred = ask(kg, lm, "which friend of [Lauren] lived where", choices_shown=3, choices_per_chain=1)
    (shown,) = [i["candidate_paths"] for key, i in lm.scripted.calls if key == "extracted_answers"]
    ends = [path.rsplit(" -> ", 1)[-1] for path in shown]
    assert {"Los Angeles", "Laguna Beach"} <= set(ends) and sum(end in friends for end in ends) == 1
    assert pred.answers == ["Los Angeles"] and pred.trace.candidates == ends


def test_chains_spread_keeps_rank_order_and_fills_the_places_left():
    from kgqa.kg import Node
    from kgqa.programs.ranking import Candidate, chains_spread
    from kgqa.programs.trails import Hop, Trail

    def candidate(label: str, relation: str) -> Candidate:
        return Candidate(label, Trail(Node("t", name="T")).extend((Hop(relation, "out", Node(label, name=label)),), 1.0), 1, 0,
                         f"T -> {relation} -> {label}")

    ranked = [candidate("a1", "r"), candidate("a2", "r"), candidate("a3", "r"), candidate("b1", "s"), candidate("a4", "r")]
    assert [c.label for c in chains_spread(ranked, 2, 1)] == ["a1", "b1"]
    assert [c.label for c in chains_spread(ranked, 3, 1)] == ["a1", "a2", "b1"]  # a2 fills the place left; rank order kept
    assert [c.label for c in chains_spread(ranked, 3, 3)] == ["a1", "a2", "a3"]
    assert [c.label for c in chains_spread(ranked, 10, 1)] == ["a1", "a2", "a3", "b1", "a4"]


def test_the_compiled_chain_prior_ranks_the_chain_questions_like_this_one_went_by_first(tmp_path):
    # "what is the home town of Lauren": the words fit home_town; the training questions asked like
    # it all went by moved_to (as the data labels them), and the prior lifts that chain's end first
    from kgqa.programs.chains import ChainPrior
    from kgqa.programs.question import question_shape

    kg = metaqa_kg(tmp_path, ("Lauren", "home_town", "Laguna Beach"), ("Lauren", "moved_to", "Los Angeles"))
    question = "what is the home town of [Lauren]"
    train = [(f"what is the home town of [{name}]", [["moved_to"]]) for name in ("Ann", "Bob", "Carl")]
    plain = ask(kg, oracle(["home_town", "moved_to"], hops=1), question, extraction=False)
    assert plain.answers[0] == "Laguna Beach" and plain.trace.prior_chains == []
    program = KGQA(kg, config=WalkConfig(extraction=False))
    program.chain_prior = ChainPrior.fit(((question_shape(q, []), paths) for q, paths in train), key="shape")  # as compiled
    with dspy.context(lm=oracle(["home_town", "moved_to"], hops=1)):
        lifted = program(question=question)
    assert lifted.answers[0] == "Los Angeles" and lifted.trace.candidates[0] == "Los Angeles"
    assert lifted.trace.prior_chains == [["moved_to", pytest.approx(1.0)]]
    program.config = program.config.without("chain_prior")  # the ablation: as uncompiled
    with dspy.context(lm=oracle(["home_town", "moved_to"], hops=1)):
        assert program(question=question).answers[0] == "Laguna Beach"


def test_the_path_scorer_orders_the_candidates_and_its_switch_restores_the_hand_set_order(tmp_path):
    from kgqa.programs.scorer import PathScorer, ScorerGroup, ScorerSettings

    kg = metaqa_kg(tmp_path, ("Lauren", "home_town", "Laguna Beach"), ("Lauren", "moved_to", "Los Angeles"))
    question = "what is the home town of [Lauren]"
    program = KGQA(kg, config=WalkConfig(extraction=False))
    with dspy.context(lm=oracle(["home_town", "moved_to"], hops=1)):
        plain = program(question=question)
    assert plain.answers[0] == "Laguna Beach" and not plain.trace.path_scorer  # uncompiled: the hand-set order
    # training walks in which the gold answer of such a question is where the person moved to: what the
    # hand-set order (question similarity) puts second
    names = ["Ana", "Bea", "Cy", "Dov", "Eli", "Fay", "Gus", "Ida", "Jo", "Kai", "Lou", "Max"]
    walks = [ScorerGroup(f"what is the home town of [{n}]", [f"{n} -> home town -> {c}1", f"{n} -> moved to -> {c}2"], [False, True])
             for n, c in zip(names, ["Ames", "Bath", "Cork", "Doha", "Elko", "Fife", "Gary", "Hull", "Ives", "Jena", "Kiel", "Lodi"])]
    program.path_scorer = PathScorer.fit(walks, settings=ScorerSettings(layers=1, epochs=6, learning_rate=3e-4, group=2, hard=1))
    with dspy.context(lm=oracle(["home_town", "moved_to"], hops=1)):
        scored = program(question=question)
    assert scored.answers[0] == "Los Angeles" and scored.trace.candidates[:2] == ["Los Angeles", "Laguna Beach"]
    assert scored.trace.path_scorer
    program.config = program.config.without("path_scorer")  # the ablation: as uncompiled
    with dspy.context(lm=oracle(["home_town", "moved_to"], hops=1)):
        assert program(question=question).answers[0] == "Laguna Beach"


def test_where_the_path_scorer_is_sure_its_first_answers_without_the_extraction_call(tmp_path):
    from kgqa.programs.scorer import Calibration, PathScorer, ScorerGroup, ScorerSettings

    kg = metaqa_kg(tmp_path, ("Lauren", "home_town", "Laguna Beach"), ("Lauren", "moved_to", "Los Angeles"))
    question = "what is the home town of [Lauren]"
    names = ["Ana", "Bea", "Cy", "Dov", "Eli", "Fay", "Gus", "Ida", "Jo", "Kai", "Lou", "Max"]
    walks = [ScorerGroup(f"what is the home town of [{n}]", [f"{n} -> home town -> {c}1", f"{n} -> moved to -> {c}2"], [False, True])
             for n, c in zip(names, ["Ames", "Bath", "Cork", "Doha", "Elko", "Fife", "Gary", "Hull", "Ives", "Jena", "Kiel", "Lodi"])]
    lm = oracle(["home_town", "moved_to"], hops=1, extracted_answers=lambda i: {"extracted_answers": ["Laguna Beach"]})
    program = KGQA(kg, config=WalkConfig(scorer_sure=0.0))
    with dspy.context(lm=lm):
        unscored = program(question=question)  # no scorer: extraction decides, whatever the threshold
    assert unscored.answers[0] == "Laguna Beach" and unscored.trace.first_share is None
    program.config = WalkConfig()
    program.path_scorer = PathScorer.fit(walks, settings=ScorerSettings(layers=1, epochs=6, learning_rate=3e-4, group=2, hard=1))
    with dspy.context(lm=lm):
        asked = program(question=question)  # by default the compile's calibration decides: this one has none
    share = asked.trace.first_share
    assert program.path_scorer.sure_at is None
    assert asked.trace.candidates[0] == "Los Angeles" and 0.5 < share < 1.0
    assert asked.answers[0] == "Laguna Beach" and statuses(asked.trace)["extraction"] == ["ran"]
    program.path_scorer.calibration = Calibration(held_out=40, precision=0.4, sure_at=round(share - 0.01, 2), measured=30, right=20)
    with dspy.context(lm=lm):
        sure = program(question=question)  # sure from the share its calibration measured
    assert sure.answers[0] == "Los Angeles" and "extract_answers" not in sure.trace.step_usage
    assert statuses(sure.trace)["extraction"] == [
        f"skipped: the path scorer is sure of the first ({share:.2f} of its softmax, at least {share - 0.01:.2f}): it answers"]
    program.config = replace(program.config, scorer_sure=1.0)
    with dspy.context(lm=lm):
        assert program(question=question).answers[0] == "Laguna Beach"  # 1.0: extraction decides, whatever was measured
    program.config = replace(program.config, scorer_sure=round(share + 0.01, 2) if share < 0.99 else 1.0)
    with dspy.context(lm=lm):
        assert program(question=question).answers[0] == "Laguna Beach"  # not sure enough: extraction decides
    program.config = replace(program.config, scorer_sure=0.0)
    with dspy.context(lm=lm):
        assert program(question=question).answers[0] == "Los Angeles"  # 0.0: wherever the scorer ordered them


def test_the_path_scorer_fills_the_beam_with_the_relations_it_scores_best(tmp_path):
    from kgqa.programs.scorer import PathScorer, ScorerGroup, ScorerSettings

    kg = metaqa_kg(tmp_path, ("Lauren", "friend", "Ann"), ("Lauren", "neighbor", "Bob"), ("Ann", "born_in", "Ames"),
                    ("Bob", "born_in", "Bath"))
    question = "where was the pal of [Lauren] born"
    program = KGQA(kg, config=WalkConfig(relation_prune=False, beam_width=1, extraction=False))
    with dspy.context(lm=oracle(["born_in"], hops=2)):
        plain = program(question=question)
    assert plain.trace.walk[0]["chosen"] == ["neighbor"] and not plain.trace.path_scorer  # the chain whose words are most like the question
    # training walks in which a pal was a friend, never a neighbor
    names = ["Ana", "Bea", "Cy", "Dov", "Eli", "Fay", "Gus", "Ida", "Jo", "Kai", "Lou", "Max"]
    walks = [ScorerGroup(f"where was the pal of [{n}] born", [f"{n} -> neighbor -> Sam", f"{n} -> friend -> Pat"], [False, True])
             for n in names]
    program.path_scorer = PathScorer.fit(walks, settings=ScorerSettings(layers=1, epochs=6, learning_rate=3e-4, group=2, hard=1))
    with dspy.context(lm=oracle(["born_in"], hops=2)):
        scored = program(question=question)
    assert scored.trace.walk[0]["chosen"] == ["friend"] and scored.trace.path_scorer
    assert scored.trace.candidates[0] == "Ames"  # reached past the relation the beam kept
    program.config = program.config.without("path_scorer")
    with dspy.context(lm=oracle(["born_in"], hops=2)):
        assert program(question=question).trace.walk[0]["chosen"] == ["neighbor"]


def test_an_answer_brings_the_ends_of_its_chain_stored_by_the_inverse_relations(tmp_path):
    # RoG graphs keep an actor's films by film.actor.film -> film.performance.film in one question's
    # graph and by film.performance.actor -> film.film.starring (the same facts the other way round)
    # in the next; Kristen's films, stated both ways, tell the store which relations are inverses
    from kgqa.data.rog import question_graph

    graph = [("Taylor", "film.actor.film", "m.01"), ("m.01", "film.performance.film", "Abduction"),
             ("Taylor", "film.actor.film", "m.02"), ("m.02", "film.performance.film", "Eclipse"),
             ("Valentine's Day", "film.film.starring", "m.03"), ("m.03", "film.performance.actor", "Taylor")]
    for n, film in enumerate(["Twilight", "Zathura", "Panic Room"]):
        cvt = f"m.1{n}"
        graph += [("Kristen", "film.actor.film", cvt), (cvt, "film.performance.actor", "Kristen"),
                  (cvt, "film.performance.film", film), (film, "film.film.starring", cvt)]
    kg = question_graph(dspy.Example(graph=graph))
    assert kg.inverse_relations()["film.performance.film"] == kg.inverse_relations()["film.film.starring"]
    lm = oracle(["film.actor.film -> film.performance.film"], hops=1, extracted_answers=lambda i: {"extracted_answers": ["Abduction"]})
    pred = ask(kg, lm, "Which films did Taylor act in?", ["Taylor"])
    assert pred.answers[0] == "Abduction" and sorted(pred.answers) == ["Abduction", "Eclipse", "Valentine's Day"]
    off = ask(kg, lm, "Which films did Taylor act in?", ["Taylor"], inverse_chains=False)
    assert sorted(off.answers) == ["Abduction", "Eclipse"]


def test_inverse_relations_of_two_kinds_are_one_chain_and_of_one_kind_are_not():
    from kgqa.kg import FREEBASE, Direction, Node
    from kgqa.programs.steps.extraction import same_chain
    from kgqa.programs.trails import Hop, Trail

    out, back = Direction.OUT, Direction.IN
    inverse = {"film.film.starring": "film.film.starring", "film.performance.film": "film.film.starring",
               "location.location.containedby": "location.location.containedby", "location.location.contains": "location.location.containedby"}
    actor, france = Node("Taylor", name="Taylor"), Node("France", name="France")

    def trail(topic, *hops):
        return Trail(topic, tuple(Hop(r, d, Node(n, name=n)) for r, d, n in hops))

    chosen = trail(actor, ("film.actor.film", out, "m.1"), ("film.performance.film", out, "Abduction"))
    assert same_chain(trail(actor, ("film.actor.film", out, "m.2"), ("film.film.starring", back, "Eclipse")), chosen, inverse, FREEBASE)
    assert same_chain(trail(actor, ("film.actor.film", out, "m.2"), ("film.film.starring", out, "Eclipse")), chosen, inverse, FREEBASE)
    assert not same_chain(trail(actor, ("film.actor.film", out, "m.2"), ("film.film.starring", back, "Eclipse")), chosen, {}, FREEBASE)
    assert not same_chain(trail(actor, ("film.actor.film", out, "m.2")), chosen, inverse, FREEBASE)
    # a pair of one kind is never merged: what contains France is not what France contains
    europe = trail(france, ("location.location.containedby", out, "Europe"))
    assert not same_chain(trail(france, ("location.location.contains", out, "Paris")), europe, inverse, FREEBASE)
    assert not same_chain(trail(france, ("location.location.contains", back, "Europe")), europe, inverse, FREEBASE)
