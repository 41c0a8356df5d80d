from __future__ import annotations

import pytest

from kgqa.data.examples import DatasetError
from kgqa.data.metaqa import kb_triples, load_questions, qtype_path
from kgqa.kg import Direction, EmbeddedStore, KnowledgeGraph, Node


@pytest.fixture(scope="module")
def metaqa_kg(shared_data) -> KnowledgeGraph:
    store = EmbeddedStore()
    store.add_triples(kb_triples(shared_data / "metaqa" / "kb.txt"))
    return KnowledgeGraph(store, profile="metaqa")


def test_the_kb_loads_with_names_and_literal_tails(metaqa_kg):
    stats = metaqa_kg.backend.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert int(stats[0]["n"].value) > 129_907  # every kb.txt triple, plus one label per entity
    assert metaqa_kg.names(["Joel Zwick"]) == {"Joel Zwick": "Joel Zwick"}
    films = metaqa_kg.neighbours(["Joel Zwick"], "directed_by", direction=Direction.IN)["Joel Zwick"]
    assert Node("My Big Fat Greek Wedding") in films


def test_the_film_1941_is_not_the_year_1941(metaqa_kg):
    (year,) = metaqa_kg.neighbours(["1941"], "release_year", direction=Direction.OUT)["1941"]
    assert year == Node("1979", literal=True, datatype="gYear") and year.value == 1979
    films_of_1941 = metaqa_kg.neighbours(["1941"], "release_year", direction=Direction.IN)
    assert films_of_1941.items == {}  # the entity "1941" is a film; the year is a literal
    rating = metaqa_kg.relations(["Flags of Our Fathers"])["Flags of Our Fathers"]
    assert ("has_imdb_votes", Direction.OUT) in rating
    (votes,) = metaqa_kg.neighbours(["Flags of Our Fathers"], "has_imdb_votes", direction=Direction.OUT)["Flags of Our Fathers"]
    assert votes.literal


def test_gold_paths_of_kb_exact_questions_give_the_gold_answers(metaqa_kg, shared_data):
    from kgqa.kg.paths import answer_names, walk

    checked = 0
    for ex in load_questions(shared_data / "metaqa" / "qa" / "metaqa_2hop_dev.jsonl"):
        if not ex.kb_exact:
            continue
        assert answer_names(metaqa_kg, walk(metaqa_kg, ex.topic_entities, qtype_path(ex.qtype))) == sorted(ex.answers)
        checked += 1
        if checked == 25:
            break
    assert checked == 25


def test_original_format_with_qtypes(shared_data):
    examples = list(load_questions(shared_data / "metaqa" / "original" / "2-hop" / "qa_dev.txt"))
    assert len(examples) == 14_872
    first = examples[0]
    assert first.topic_entities == ["Joel Zwick"] and first.answers == ["Greek"]
    assert first.qtype == "director_to_movie_to_language"
    assert set(first.inputs().keys()) == {"question", "topic_entities"}


def test_jsonl_format(shared_data):
    examples = list(load_questions(shared_data / "metaqa" / "qa" / "metaqa_3hop_dev.jsonl"))
    assert len(examples) == 14_274
    assert all(ex.answers and ex.topic_entities for ex in examples[:100])


def test_qtype_paths():
    assert qtype_path("director_to_movie_to_language") == [("directed_by", "in"), ("in_language", "out")]
    assert qtype_path("movie_to_tags") == [("has_tags", "out")]
    assert qtype_path("tag_to_movie") == [("has_tags", "in")]
    with pytest.raises(DatasetError, match="unknown MetaQA question type"):
        qtype_path("movie_to_planet")


def test_malformed_kb_line_names_file_and_line(tmp_path):
    kb = tmp_path / "kb.txt"
    kb.write_text("Kismet|directed_by|William Dieterle\nKismet|directed_by\n")
    with pytest.raises(DatasetError, match=rf"{kb}:2: expected 'head\|relation\|tail'"):
        list(kb_triples(kb))


def test_malformed_question_lines_name_file_and_line(tmp_path):
    qa = tmp_path / "qa_dev.txt"
    qa.write_text("who directed [Kismet]\tWilliam Dieterle\nno topic here\tX\n")
    with pytest.raises(DatasetError, match=rf"{qa}:2: expected 'question with \[topic\]"):
        list(load_questions(qa))
    empty = tmp_path / "empty_topic.jsonl"
    empty.write_text('{"question": "   ", "topic_entity": "Kismet", "answers": ["x"]}\n')
    (row,) = load_questions(empty)  # a JSONL row that cannot be asked is a row of its own, saying why
    assert row.bad_row == f"{empty}:1: the question is missing or empty"


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(DatasetError, match="cannot read"):
        list(kb_triples(tmp_path / "nope.txt"))
