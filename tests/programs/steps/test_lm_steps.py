"""The LLM steps as modules (`programs/steps/`): each holds its one predictor, reads only the question
(`Asking`) and the one typed input it is handed (a hop's `Reach`, the `Ranked` candidates, ...), says
why it has nothing to decide, decides through the scripted LM, and falls back on an unusable reply,
recorded in the `Ledger` by `Step.run`."""

from __future__ import annotations

import dataclasses

import dspy
import pytest

from kgqa.kg import Direction, Node
from kgqa.lm.scripted import scripted_lm
from kgqa.programs import KGQA, WalkConfig
from kgqa.programs.ranking import Candidate, Ranked, chains_spread
from kgqa.programs.state import Asking, Ledger, Reach
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
from kgqa.programs.steps.extraction import settled
from kgqa.programs.steps.reflection import DeadEnd
from kgqa.programs.steps.sufficiency import short
from kgqa.programs.trails import Hop, Trail
from kgqa.signatures import Plan
from tests.programs.walk import statuses

OUT = Direction.OUT


@pytest.fixture(scope="module")
def program(kg):
    return KGQA(kg)


def asked(kg, question="Which films did James Cameron direct?", *, topics=("James Cameron",), hop_targets=(), conditions=(),
          **config) -> Asking:
    """The question as a step reads it: its topic entities known and its words read, then planned."""
    known = Asking(question, kg, WalkConfig(**config)).knowing([Node(f"m.{name}", name=name) for name in topics])
    return known.planned(list(hop_targets), list(conditions))


def trail(topic: str, *hops: tuple[str, str]) -> Trail:
    return Trail(Node(f"m.{topic}", name=topic), tuple(Hop(relation, OUT, Node(f"m.{end}", name=end)) for relation, end in hops))


def candidate(topic: str, *hops: tuple[str, str], topics: int = 1, meets: int = 0) -> Candidate:
    t = trail(topic, *hops)
    return Candidate(t.end.name, t, topics, meets, " -> ".join([topic, *(f"{r} -> {e}" for r, e in hops)]))


def hop(frontier: list[Trail], labels=(), *, ahead=(), depth: int = 1, last: bool = False, named: str | None = None) -> Reach:
    """A hop as the prunes read it: the relations it reached things by (ranked as given, `named` the one
    its target names), and the trails gone on by."""
    by_label = {label: [] for label in labels} | ({"chosen": list(ahead)} if ahead else {})
    return Reach(depth, "hop 1", last, tuple(frontier), by_label, tuple(labels), named, chosen=("chosen",) if ahead else (),
                 scored={"chosen": list(ahead)} if ahead else {})


def ranked(asking: Asking, candidates: list[Candidate], *, sure: float | None = 0.9, depth: int = 1, extensions: int = 0,
           reached=None, notes=()) -> Ranked:
    """The candidates as the walk hands them to the steps after its hops, settled as it settles them."""
    shown = chains_spread(candidates, asking.config.choices_shown, asking.config.choices_per_chain)
    return Ranked(candidates, shown, [c.trail for c in candidates] if reached is None else reached, {}, depth, extensions,
                  settled=settled(asking, shown, sure=sure),
                  short=short(asking, candidates, depth=depth, extensions=extensions), notes=tuple(notes))


def test_each_llm_step_holds_its_one_predictor_and_counts_its_calls_under_its_name(program):
    steps = {name: step for name, step in program.named_sub_modules() if isinstance(step, LMStep)}
    assert len(steps) == 9 and all(isinstance(step.predict, dspy.Predict) for step in steps.values())
    assert program.plan.predict.signature.__name__ == Plan.__name__
    ledger = Ledger()
    lm = scripted_lm({"topic_kind": lambda i: {"topic_kind": "person", "answer_kind": "film", "hop_targets": ["film (directed)"],
                                               "answer_constraints": ["released before 2000"]}})
    with dspy.context(lm=lm):
        planned = program.plan.run(asked(program.kg), ledger)
    assert planned == (["film (directed)"], ["released before 2000"])
    assert ledger.trace.step_usage["plan"][0] == 1 and statuses(ledger.trace) == {"plan": ["ran"]}


def test_a_step_with_no_lm_falls_back_and_the_wrapper_counts_it(program):
    calls, ledger, asking = NoLM(program.embedder), Ledger(), asked(program.kg)
    assert Planning(calls).run(asking, ledger) == ([asking.question], [])  # one hop, the question itself
    asking = asking.planned(["hop 1"], [])  # a target that names no relation
    relations = RelationPrune(calls).run(asking, ledger, hop([trail("James Cameron")], ["film.film.genre", "film.director.film"]))
    assert relations[0] == "film.director.film"  # the most like the target and the question
    assert statuses(ledger.trace) == {"plan": ["fell_back"], "relation_prune": ["fell_back"]}
    assert ledger.trace.fallbacks == 2 and ledger.trace.llm_calls == 0


def test_the_relation_prune_has_nothing_to_decide_at_the_last_hop_or_for_one_relation(program):
    prune, ledger, asking = RelationPrune(LMCalls(program.embedder)), Ledger(), asked(program.kg)
    frontier = [trail("James Cameron")]
    assert prune.run(asking, ledger, hop(frontier, ["a.b.c", "a.b.d"], last=True)) == []
    assert prune.run(asking, ledger, hop(frontier, ["a.b.c"])) == ["a.b.c"]
    switched_off = asked(program.kg, relation_prune=False)
    assert prune.run(switched_off, ledger, hop(frontier, ["a.b.c", "a.b.d"])) == []  # the beam goes on by the most similar
    assert prune.run(asking, ledger, hop(frontier, ["a.b.c", "a.b.d"], named="a.b.d")) == ["a.b.d"]  # as the walk found it
    assert ledger.trace.llm_calls == 0
    assert statuses(ledger.trace)["relation_prune"] == ["skipped: hop 1 is the plan's last: extraction chooses among its ends",
                                                       "skipped: 1 relation reached",
                                                       "skipped: switched off: the chains most like the question",
                                                       "skipped: the hop's target 'hop 1' names its relation"]


def test_a_plan_is_read_once_for_the_relation_words_each_hop_names(program):
    asking = asked(program.kg).planned(["movie (written by)", "capital"], [])
    assert asking.hop_relations == ("written by", "capital")
    assert [asking.hop_relation(d) for d in (1, 2, 3)] == ["written by", "capital", "one hop further"]


def test_the_entity_prune_keeps_the_entities_the_model_keeps_and_every_value(program):
    ledger = Ledger()
    trails = [trail("James Cameron", ("film.director.film", "Titanic")), trail("James Cameron", ("film.director.film", "Avatar")),
              Trail(Node("m.James Cameron", name="James Cameron"), (Hop("x.y.year", OUT, Node('"1997"', literal=True)),))]
    prune = EntityPrune(LMCalls(program.embedder))
    went = hop([trail("James Cameron")], ahead=trails)
    assert prune.run(asked(program.kg, entities_per_relation=1), ledger, went) == trails  # no condition: every entity
    conditioned = asked(program.kg, conditions=["released before 2000"], entities_per_relation=1)
    lm = scripted_lm({"entities_to_keep": lambda i: {"entities_to_keep": ["Titanic"]}})
    with dspy.context(lm=lm):
        kept = prune.run(conditioned, ledger, went)
    assert [t.end.name or t.end.id for t in kept] == ["Titanic", '"1997"']
    assert statuses(ledger.trace)["entity_prune"] == ["skipped: the plan sets no condition", "ran"]


def test_sufficiency_asks_for_a_hop_more_only_when_the_model_says_the_paths_stop_short(program):
    step, ledger = Sufficiency(LMCalls(program.embedder)), Ledger()
    asking = asked(program.kg, hop_targets=["film"], depth=3)
    best = [candidate("James Cameron", ("film.director.film", "Titanic"))]
    with dspy.context(lm=scripted_lm({"evidence_sufficient": lambda i: {"evidence_sufficient": False}})):
        assert step.run(asking, ledger, ranked(asking, best)) is True
    with dspy.context(lm=scripted_lm({"evidence_sufficient": lambda i: "no verdict at all"})):
        assert step.run(asking, ledger, ranked(asking, best)) is False  # an unusable verdict: the plan's hops only
    assert step.run(asking, ledger, ranked(asking, best, depth=3)) is False
    assert step.skip(asking, ranked(asking, best, depth=2, extensions=1)) == "no hop left to add"  # one extension a question
    named = [dataclasses.replace(best[0], named=True)]
    assert step.skip(asking, ranked(asking, named)) == "the best path ends by the relation the plan's last hop names"
    assert statuses(ledger.trace)["sufficiency"] == ["ran", "fell_back", "skipped: no hop left to add"]


def test_extraction_chooses_among_its_choices_and_brings_the_other_ends_of_the_chain(program):
    step, ledger, asking = Extraction(LMCalls(program.embedder)), Ledger(), asked(program.kg)
    titanic = candidate("James Cameron", ("film.director.film", "Titanic"))
    avatar = candidate("James Cameron", ("film.director.film", "Avatar"))
    born = candidate("James Cameron", ("people.person.place_of_birth", "Kapuskasing"))
    reached = [c.trail for c in (titanic, avatar, born)]
    given = ranked(asking, [born, titanic, avatar], reached=reached)
    assert given.shown == given.candidates and step.skip(asking, given) is None
    with dspy.context(lm=scripted_lm({"extracted_answers": lambda i: {"extracted_answers": ["Titanic"]}})):
        answers, chose = step.run(asking, ledger, given)
    assert chose and [t.end.name for t in answers] == ["Titanic", "Titanic", "Avatar"]  # then its chain, in rank order
    with dspy.context(lm=scripted_lm({"extracted_answers": lambda i: {"extracted_answers": []}})):
        answers, chose = step.run(asking, ledger, given)
    assert not chose and answers[0].end.name == "Kapuskasing"  # "none of these": the first ranked
    assert step.skip(asking, ranked(asking, [titanic, avatar])) == "one relation chain: every end answers"
    sure = [dataclasses.replace(c, share=share) for c, share in zip(given.candidates, (0.95, 0.03, 0.02))]
    assert step.skip(asking, ranked(asking, sure)).startswith("the path scorer is sure of the first (0.95")
    assert step.skip(asking, ranked(asking, sure, sure=1.0)) is None  # 1.0: never sure enough
    assert statuses(ledger.trace)["extraction"] == ["ran", "fell_back"]


def test_the_fact_filter_and_memory_update_skip_where_no_step_reads_what_they_keep(program):
    ledger, asking = Ledger(), asked(program.kg, topics=("James Cameron", "Kate Winslet"))
    shown = [candidate("James Cameron", ("film.director.film", "Titanic"))]
    facts = FactFilter(LMCalls(program.embedder))
    given = Ranked(shown, shown, [], {}, 1, 0, settled=None, short=None)
    assert facts.run(asking, ledger, given) == []
    memory = MemoryUpdate(NoLM(program.embedder))
    both = dataclasses.replace(given, settled="one relation chain", short="no hop left to add")
    assert memory.run(asking, ledger, both.knowing(notes=["earlier note"])) == ["earlier note"]
    notes = memory.run(asking, ledger, dataclasses.replace(given, reached=[shown[0].trail]).knowing(notes=["earlier note"]))
    assert notes == ["James Cameron reaches Titanic", "Kate Winslet reaches nothing"]  # no LM: what each entity's paths reach
    assert ledger.trace.memory == notes  # the notes extraction reads are the trace's
    assert statuses(ledger.trace) == {
        "fact_filter": ["skipped: the question sets no condition"],
        "memory_update": ["skipped: no step reads the notes: sufficiency is skipped (no hop left to add), extraction too "
                          "(one relation chain)", "fell_back"]}


def test_reflection_resumes_from_the_one_entity_passed_a_hop_before_and_counts_it(program):
    step, ledger, asking = Reflection(LMCalls(program.embedder)), Ledger(), asked(program.kg)
    dead_end = [trail("James Cameron", ("film.director.film", "Titanic"))]
    at = Reach(2, "hop 2", False, tuple(dead_end), {})
    assert step.run(asking, ledger, DeadEnd.of(at, {}, 0)) == ([], 0)
    passed = trail("James Cameron", ("film.director.film", "Avatar"))
    seen = {"m.Avatar": passed, "m.Titanic": dead_end[0]}
    assert step.run(asking, ledger, DeadEnd.of(at, seen, 0)) == ([passed], 1)  # one reflection made
    assert step.run(asking, ledger, DeadEnd.of(at, seen, 2)) == ([], 2)  # `max_reflections` made
    assert statuses(ledger.trace)["reflection"] == ["skipped: no entity passed a hop before: the walk stops here",
                                                    "skipped: one entity passed a hop before: the walk resumes from it",
                                                    "skipped: 2 reflections made: the walk stops here"]
