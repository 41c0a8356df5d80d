"""Intermediate labels: the gold-path teacher's decisions as demo pools of the walk's steps."""

from __future__ import annotations

import dspy

from kgqa.lm.adapter import ConstrainedJSONAdapter
from kgqa.lm.scripted import scripted_lm
from kgqa.optimizers.labels import STEP_POOLS, labeled_teacher, step_demos
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
    verdicts = pools["check_sufficiency"]
    assert verdicts and all(isinstance(d["evidence_sufficient"], bool) for d in verdicts)
    for demo in verdicts:  # sufficient exactly when a gold answer ends one of the best paths
        ends = {p.rsplit(" -> ", 1)[-1] for p in demo["best_paths"]}
        assert demo["evidence_sufficient"] == bool(ends & set(by_question[demo["question"]].answers))


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
