"""The LLM steps as modules (`programs/steps/`): each holds its one predictor, says why it has nothing
to decide, decides through the scripted LM, and falls back on an unusable reply, recorded by `Step.run`."""

from __future__ import annotations

import dspy
import pytest

from kgqa.kg import Direction, Node
from kgqa.lm.scripted import scripted_lm
from kgqa.programs import KGQA, WalkConfig
from kgqa.programs.question import Question
from kgqa.programs.ranking import Candidate
from kgqa.programs.steps import (
    EntityPrune,
    Extraction,
    FactFilter,
    LMCalls,
    LMStep,
    MemoryUpdate,
    NoLM,
    Planning,
    Reflection,
    RelationPrune,
    Sufficiency,
)
from kgqa.programs.trails import Hop, Trail
from kgqa.signatures import Plan
from tests.programs.walk import statuses

OUT = Direction.OUT


@pytest.fixture(scope="module")
def program(kg):
    return KGQA(kg)


def walk_state(program, question="Which films did James Cameron direct?", *, topics=("James Cameron",), **config):
    state = program._new_state(question)
    state.config = WalkConfig(**config)
    state.topics = [Node(f"m.{name}", name=name) for name in topics]
    return state


def trail(topic: str, *hops: tuple[str, str]) -> Trail:
    return Trail(Node(f"m.{topic}", name=topic), tuple(Hop(relation, OUT, Node(f"m.{end}", name=end)) for relation, end in hops))


def candidate(topic: str, *hops: tuple[str, str], topics: int = 1, meets: int = 0) -> Candidate:
    t = trail(topic, *hops)
    return Candidate(t.end.name, t, topics, meets, " -> ".join([topic, *(f"{r} -> {e}" for r, e in hops)]))


def test_each_llm_step_holds_its_one_predictor_and_counts_its_calls_under_its_name(program):
    steps = {name: step for name, step in program.named_sub_modules() if isinstance(step, LMStep)}
    assert len(steps) == 9 and all(isinstance(step.predict, dspy.Predict) for step in steps.values())
    assert program.plan.predict.signature.__name__ == Plan.__name__
    state = walk_state(program)
    lm = scripted_lm({"topic_kind": lambda i: {"topic_kind": "person", "answer_kind": "film", "hop_targets": ["film (directed)"],
                                               "answer_constraints": ["released before 2000"]}})
    with dspy.context(lm=lm):
        planned = program.plan.run(state)
    assert planned == (["film (directed)"], ["released before 2000"])
    assert state.trace.step_usage["plan"][0] == 1 and statuses(state.trace) == {"plan": ["ran"]}


def test_a_step_with_no_lm_falls_back_and_the_wrapper_counts_it(program):
    calls = NoLM(program.embedder)
    state = walk_state(program)
    assert Planning(calls).run(state) == ([state.question], [])  # one hop, the question itself
    state.hop_targets, state.depth = ["hop 1"], 1  # a target that names no relation
    relations = RelationPrune(calls).run(state, ["film.film.genre", "film.director.film"], [trail("James Cameron")], last=False)
    assert relations[0] == "film.director.film"  # the most like the target and the question
    assert statuses(state.trace) == {"plan": ["fell_back"], "relation_prune": ["fell_back"]}
    assert state.trace.fallbacks == 2 and state.trace.llm_calls == 0


def test_the_relation_prune_has_nothing_to_decide_at_the_last_hop_or_for_one_relation(program):
    prune, state = RelationPrune(LMCalls(program.embedder)), walk_state(program)
    state.depth = 1
    frontier = [trail("James Cameron")]
    assert prune.run(state, ["a.b.c", "a.b.d"], frontier, last=True) == []
    assert prune.run(state, ["a.b.c"], frontier, last=False) == ["a.b.c"]
    state.config = WalkConfig(relation_prune=False)
    assert prune.run(state, ["a.b.c", "a.b.d"], frontier, last=False) == []  # the beam goes on by the most similar
    assert statuses(state.trace)["relation_prune"] == ["skipped: hop 1 is the plan's last: extraction chooses among its ends",
                                                       "skipped: 1 relation reached",
                                                       "skipped: switched off: the chains most like the question"]


def test_the_entity_prune_keeps_the_entities_the_model_keeps_and_every_value(program):
    state = walk_state(program, entities_per_relation=1)
    trails = [trail("James Cameron", ("film.director.film", "Titanic")), trail("James Cameron", ("film.director.film", "Avatar")),
              Trail(Node("m.James Cameron", name="James Cameron"), (Hop("x.y.year", OUT, Node('"1997"', literal=True)),))]
    prune = EntityPrune(LMCalls(program.embedder))
    assert prune.run(state, trails, last=False) == trails  # no condition: every entity
    state.conditions = ["released before 2000"]
    lm = scripted_lm({"entities_to_keep": lambda i: {"entities_to_keep": ["Titanic"]}})
    with dspy.context(lm=lm):
        kept = prune.run(state, trails, last=False)
    assert [t.end.name or t.end.id for t in kept] == ["Titanic", '"1997"']
    assert statuses(state.trace)["entity_prune"] == ["skipped: the plan sets no condition", "ran"]


def test_sufficiency_asks_for_a_hop_more_only_when_the_model_says_the_paths_stop_short(program):
    step = Sufficiency(LMCalls(program.embedder))
    state = walk_state(program, depth=3)
    state.depth, state.hop_targets = 1, ["film"]
    best = [candidate("James Cameron", ("film.director.film", "Titanic"))]
    with dspy.context(lm=scripted_lm({"evidence_sufficient": lambda i: {"evidence_sufficient": False}})):
        assert step.run(state, best) is True
    with dspy.context(lm=scripted_lm({"evidence_sufficient": lambda i: "no verdict at all"})):
        assert step.run(state, best) is False  # an unusable verdict: the plan's hops only
    state.depth = 3
    assert step.run(state, best) is False
    assert statuses(state.trace)["sufficiency"] == ["ran", "fell_back", "skipped: no hop left to add"]


def test_extraction_chooses_among_its_choices_and_brings_the_other_ends_of_the_chain(program):
    step = Extraction(LMCalls(program.embedder))
    state = walk_state(program)
    titanic = candidate("James Cameron", ("film.director.film", "Titanic"))
    avatar = candidate("James Cameron", ("film.director.film", "Avatar"))
    born = candidate("James Cameron", ("people.person.place_of_birth", "Kapuskasing"))
    state.reached = [c.trail for c in (titanic, avatar, born)]
    ranked = [born, titanic, avatar]
    shown = step.choices(state, ranked)
    assert shown == ranked and step.skip(state, ranked, shown) is None
    with dspy.context(lm=scripted_lm({"extracted_answers": lambda i: {"extracted_answers": ["Titanic"]}})):
        answers, chose = step.run(state, ranked, shown)
    assert chose and [t.end.name for t in answers] == ["Titanic", "Titanic", "Avatar"]  # then its chain, in rank order
    with dspy.context(lm=scripted_lm({"extracted_answers": lambda i: {"extracted_answers": []}})):
        answers, chose = step.run(state, ranked, shown)
    assert not chose and answers[0].end.name == "Kapuskasing"  # "none of these": the first ranked
    one_chain = [titanic, avatar]
    assert step.skip(state, one_chain, step.choices(state, one_chain)) == "one relation chain: every end answers"
    assert statuses(state.trace)["extraction"] == ["ran", "fell_back"]


def test_the_fact_filter_and_memory_update_skip_where_no_step_reads_what_they_keep(program):
    state = walk_state(program, topics=("James Cameron", "Kate Winslet"))
    state.asked = program_question(state)
    shown = [candidate("James Cameron", ("film.director.film", "Titanic"))]
    facts = FactFilter(LMCalls(program.embedder))
    assert facts.run(state, shown, settled=None) == []
    memory = MemoryUpdate(NoLM(program.embedder))
    state.memory = ["earlier note"]
    assert memory.run(state, shown, short="no hop left to add", settled="one relation chain") == ["earlier note"]
    state.reached = [shown[0].trail]
    notes = memory.run(state, shown, short=None, settled=None)
    assert notes == ["James Cameron reaches Titanic", "Kate Winslet reaches nothing"]  # no LM: what each entity's paths reach
    assert state.trace.memory == notes  # the notes extraction reads are the trace's
    assert statuses(state.trace) == {
        "fact_filter": ["skipped: the question sets no condition"],
        "memory_update": ["skipped: no step reads the notes: sufficiency is skipped (no hop left to add), extraction too "
                          "(one relation chain)", "fell_back"]}


def test_reflection_resumes_from_the_one_entity_passed_a_hop_before_and_counts_it(program):
    step = Reflection(LMCalls(program.embedder))
    state = walk_state(program)
    state.depth = 2
    dead_end = [trail("James Cameron", ("film.director.film", "Titanic"))]
    assert step.run(state, dead_end) == [] and state.trace.reflections == 0
    passed = trail("James Cameron", ("film.director.film", "Avatar"))
    state.seen = {"m.Avatar": passed, "m.Titanic": dead_end[0]}
    assert step.run(state, dead_end) == [passed] and state.trace.reflections == 1
    assert statuses(state.trace)["reflection"] == ["skipped: no entity passed a hop before: the walk stops here",
                                                   "skipped: one entity passed a hop before: the walk resumes from it"]


def program_question(state) -> Question:
    return Question(state.question, tuple(t.label for t in state.topics))
