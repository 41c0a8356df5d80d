"""The shipped demo: a Freebase-shaped KG and questions whose answers the KG really gives."""

from __future__ import annotations

import collections

import pyoxigraph as ox

from kgqa.data.demo import DEMO_KG, split_path
from kgqa.data.jsonl import load_jsonl
from kgqa.kg import Direction, KnowledgeGraph
from kgqa.kg.paths import answer_names, walk
from kgqa.kg.profiles import FREEBASE_NS

NAME = ox.NamedNode(FREEBASE_NS + "type.object.name")


def all_questions():
    return {split: list(load_jsonl(split_path(split))) for split in ("train", "dev", "test")}


def test_demo_kg_is_freebase_shaped():
    triples = list(ox.parse(path=str(DEMO_KG), format=ox.RdfFormat.N_TRIPLES))
    assert 500 <= len(triples) <= 5_000
    assert all(t.subject.value.startswith(FREEBASE_NS + "m.") for t in triples)
    named = {t.subject for t in triples if t.predicate == NAME}
    assert all(t.object.language == "en" for t in triples if t.predicate == NAME)
    subjects = {t.subject for t in triples}
    assert len(subjects - named) >= 10  # unnamed CVT nodes (performances, award honors)
    datatypes = collections.Counter(t.object.datatype.value.rsplit("#")[-1] for t in triples if isinstance(t.object, ox.Literal) and t.predicate != NAME)
    assert datatypes["date"] >= 30 and datatypes["gYear"] >= 10


def test_demo_questions_cover_hops_directions_and_splits():
    splits = all_questions()
    questions = [ex for exs in splits.values() for ex in exs]
    assert len(questions) >= 60
    assert all(len(splits[s]) >= 10 for s in splits)
    assert len({ex.id for ex in questions}) == len(questions)
    assert {ex.hops for ex in questions} == {1, 2, 3}
    directions = {step[1] for ex in questions for step in ex.path}
    assert directions == {"out", "in"}
    assert any(ex.path[0] == ["film.film.starring", "out"] for ex in questions)  # through a CVT node
    assert all(ex.topic_entities and ex.answers for ex in questions)
    assert not any(ex.topic_names[0] in ex.answers for ex in questions)


def test_every_demo_answer_is_what_the_kg_gives(demo_store):
    kg = KnowledgeGraph(demo_store, profile="freebase")
    for split, examples in all_questions().items():
        for ex in examples:
            assert kg.names(ex.topic_entities) == dict(zip(ex.topic_entities, ex.topic_names))
            assert answer_names(kg, walk(kg, ex.topic_entities, ex.path)) == sorted(ex.answers), (split, ex.question)


def test_the_builder_reproduces_the_shipped_files(tmp_path, monkeypatch):
    from kgqa.data.demo import build

    monkeypatch.setattr(build, "HERE", tmp_path)
    build.main()
    assert (tmp_path / "demo.nt").read_bytes() == DEMO_KG.read_bytes()
    for split in ("train", "dev", "test"):
        assert (tmp_path / f"{split}.jsonl").read_text() == split_path(split).read_text()


def test_year_literal_answers_exist(demo_store):
    kg = KnowledgeGraph(demo_store, profile="freebase")
    (ang_lee,) = kg.link(["Ang Lee"])["Ang Lee"]
    years = walk(kg, [ang_lee], [("award.award_winner.awards_won", Direction.OUT), ("award.award_honor.year", Direction.OUT)])
    assert [(n.id, n.datatype) for n in years] == [("2013", "gYear")]
