"""Intermediate labels: the gold-path teacher's decisions as demo pools of the walk's steps."""

from __future__ import annotations

import dspy

from kgqa.kg.profiles import ROG
from kgqa.lm.adapter import ConstrainedJSONAdapter
from kgqa.lm.scripted import scripted_lm
from kgqa.optimizers.labels import STEP_POOLS, gold_labels, hops_from, labeled_teacher, step_demos
from kgqa.programs import KGQA


def test_the_teachers_decisions_become_pools_of_the_intermediate_steps(embedded_demo_kg, demo_train):
    teacher = labeled_teacher(demo_train, kg=embedded_demo_kg)
    with dspy.context(adapter=ConstrainedJSONAdapter()):
        pools = step_demos(KGQA(embedded_demo_kg), demo_train, teacher=teacher, limit=50)
    assert set(pools) == set(STEP_POOLS)
    by_question = {ex.question: ex for ex in demo_train}
    relations = pools["prune_relations"]
    assert len(relations) >= 3 and len({d["question"] for d in relations}) >= 3  # several questions, not one walk's
    for demo in relations:  # the inputs the step was shown, the gold relation chosen among them, the topic for matching
        gold = {r for r, _ in by_question[demo["question"]].path}
        assert demo["relations_to_follow"] and set(demo["relations_to_follow"]) <= set(demo["candidate_relations"])
        assert {part.removesuffix(" (reverse)") for r in demo["relations_to_follow"] for part in r.split(" -> ")} <= gold
        assert demo["topic"] and demo["topic"].split(", ")[0].lower() in demo["question"].lower()
        assert set(demo.inputs().keys()) == {"question", "plan", "hop", "entity", "candidate_relations"}


def test_compiling_walks_at_most_limit_questions_and_keeps_at_most_limit_demos_a_step(embedded_demo_kg, demo_train):
    teacher = labeled_teacher(demo_train, kg=embedded_demo_kg)
    with dspy.context(adapter=ConstrainedJSONAdapter()):
        pools = step_demos(KGQA(embedded_demo_kg), demo_train, teacher=teacher, limit=len(demo_train) - 10)
    assert teacher.scripted.count("topic_kind") == len(demo_train) - 10  # a walk (one plan) each, though entity prune never ran
    assert pools["prune_entities"] == [] and all(len(pool) <= len(demo_train) - 10 for pool in pools.values())


def test_an_empty_label_makes_no_demo(embedded_demo_kg, demo_train):
    """A teacher that chooses no relation teaches nothing: the relation prune's pool stays empty."""
    teacher = labeled_teacher(demo_train, kg=embedded_demo_kg)
    handlers = dict(teacher.scripted.handlers)
    handlers["relations_to_follow"] = lambda inputs: {"relations_to_follow": []}
    empty = scripted_lm(handlers)
    with dspy.context(adapter=ConstrainedJSONAdapter()):
        pools = step_demos(KGQA(embedded_demo_kg), demo_train, teacher=empty, limit=50)
    assert empty.scripted.count("relations_to_follow") >= 3 and pools["prune_relations"] == []


def test_sufficiency_demos_pair_best_paths_reaching_a_gold_answer_with_the_same_paths_a_hop_short(embedded_demo_kg, demo_train):
    teacher = labeled_teacher(demo_train, kg=embedded_demo_kg)
    with dspy.context(adapter=ConstrainedJSONAdapter()):
        labels = gold_labels(KGQA(embedded_demo_kg), demo_train, teacher=teacher, answers=0, sufficiency=11)
    none, pool = labels.extraction, labels.sufficiency
    assert none == [] and labels.scorer == []
    assert 4 <= len(pool) <= 10 and len(pool) % 2 == 0  # pairs, within the limit
    answers = {ex.question: set(ex.answers) for ex in demo_train}
    for reached, short in zip(pool[::2], pool[1::2]):
        assert reached["question"] == short["question"] and reached["topic"] == short["topic"]
        assert reached["evidence_sufficient"] is True and short["evidence_sufficient"] is False
        gold = answers[reached["question"]]
        assert {p.rsplit(" -> ", 1)[-1] for p in reached["best_paths"]} & gold
        for path in short["best_paths"]:  # a path to a gold answer, cut back to the named entity before it
            assert path.rsplit(" -> ", 1)[-1] not in gold and " -> " in path
            assert any(p.startswith(path + " -> ") and p.rsplit(" -> ", 1)[-1] in gold for p in reached["best_paths"])
        assert set(short.inputs().keys()) == {"question", "memory_notes", "best_paths"} and short["memory_notes"] == []


def test_one_walk_of_each_question_feeds_the_gold_answer_pools_and_the_scorers_walks(embedded_demo_kg, demo_train):
    teacher = labeled_teacher(demo_train, kg=embedded_demo_kg)
    with dspy.context(adapter=ConstrainedJSONAdapter()):
        labels = gold_labels(KGQA(embedded_demo_kg), demo_train, teacher=teacher, answers=100, sufficiency=100, scorer=100)
    extraction, sufficiency = labels.extraction, labels.sufficiency
    assert teacher.scripted.count("topic_kind") == len(demo_train)  # one plan, so one walk, a question
    answers = {ex.question: set(ex.answers) for ex in demo_train}
    assert len(labels.scorer) >= len(demo_train) - 2 and any(any(walk.gold) for walk in labels.scorer)
    for walk in labels.scorer:  # each candidate's path as the scorer reads it, labeled by the gold answers
        assert len(walk.paths) == len(walk.gold) and walk.question in answers
        for path, gold in zip(walk.paths, walk.gold):
            end = path.split(" ; reached from ")[0].rsplit(" -> ", 1)[-1]
            assert gold == (end in answers[walk.question])
    assert len(extraction) >= 5 and sufficiency
    for demo in extraction:  # the gold answer chosen among two or more candidates shown
        assert len(demo["candidate_paths"]) >= 2 and set(demo["extracted_answers"]) <= answers[demo["question"]]
        assert any(p.rsplit(" -> ", 1)[-1] == demo["extracted_answers"][0] for p in demo["candidate_paths"])
    teacher = labeled_teacher(demo_train, kg=embedded_demo_kg)
    with dspy.context(adapter=ConstrainedJSONAdapter()):
        labels = gold_labels(KGQA(embedded_demo_kg), demo_train, teacher=teacher, answers=2, sufficiency=0)
    assert len(labels.extraction) == 2 and labels.sufficiency == [] and labels.scorer == []
    assert teacher.scripted.count("topic_kind") < len(demo_train)  # stops walking once the pools are full


def test_hops_from_each_topic_entity_walk_edges_either_way_and_leave_hidden_relations_out():
    row = dspy.Example(topic_entities=["Slade", "Lautner", "Nobody"], graph=[
        ["Slade", "film.director.film", "Eclipse"], ["Lautner", "film.actor.film", "Eclipse"],
        ["Eclipse", "film.film.sequel", "Breaking Dawn"], ["Breaking Dawn", "film.film.sequel", "Midnight Sun"],
        ["Eclipse", "common.topic.notable_types", "Film"]])
    reached = hops_from(row, skips=ROG.skips, longest=2)
    assert set(reached) == {"Slade", "Lautner"}  # a topic entity outside the graph reaches nothing
    assert reached["Slade"] == {"Slade": 0, "Eclipse": 1, "Lautner": 2, "Breaking Dawn": 2}
    assert hops_from(row, longest=1)["Lautner"] == {"Lautner": 0, "Eclipse": 1}
    assert "Film" in hops_from(row, longest=2)["Lautner"]  # nothing skipped unless asked
