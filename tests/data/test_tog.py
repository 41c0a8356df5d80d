from __future__ import annotations

import json

import pytest

from kgqa.data.examples import MAX_QUESTION_CHARS, DatasetError
from kgqa.data.tog import load_tog

# file: (rows, rows without a linked topic entity: empty in the source, or "UnknownMID")
FILES = {
    "tog/cwq.json": (3_531, 11),
    "aog/WebQSP.json": (1_639, 0),
    "grasp/WebQSP_test100_fullparse.json": (100, 0),
    "tog/grailqa.json": (1_000, 12),
    "tog/SimpleQA.json": (1_000, 0),
    "tog/WebQuestions.json": (2_032, 32),
    "grasp/cwq_0.4.json": (1_000, 1),
}


@pytest.mark.parametrize("name,counts", FILES.items())
def test_every_question_file_loads(shared_data, name, counts):
    rows, unlinked = counts
    examples = list(load_tog(shared_data / "freebase" / name))
    assert len(examples) == rows
    assert sum(not ex.topic_entities for ex in examples) == unlinked
    for ex in examples:
        assert ex.question
        assert all(e.startswith(("m.", "g.")) for e in ex.topic_entities), ex.topic_entities
        assert len(ex.topic_names) == len(ex.topic_entities)


def test_unknown_mids_keep_their_names_for_linking(shared_data):
    examples = list(load_tog(shared_data / "freebase" / "tog/WebQuestions.json"))
    unlinked = [ex for ex in examples if not ex.topic_entities]
    assert unlinked and all(ex.unlinked_topics for ex in unlinked)


def test_cwq_aliases_come_from_pog_names(shared_data):
    fb = shared_data / "freebase"
    examples = list(load_tog(fb / "tog/cwq.json", aliases=fb / "pog/cwq_aname_dict.json"))
    with_aliases = [ex for ex in examples if ex.aliases]
    assert with_aliases, "some CWQ answers have aliases in PoG's name dictionary"
    ex = with_aliases[0]
    (answer,) = ex.answers
    assert answer in ex.aliases and answer not in ex.aliases[answer]


def test_answer_shapes(shared_data):
    fb = shared_data / "freebase"
    grail = next(load_tog(fb / "tog/grailqa.json"))
    assert grail.answers == ["The Illusion"]  # entity_name over answer_argument
    webqsp = list(load_tog(fb / "aog/WebQSP.json"))
    assert sum(not ex.answers for ex in webqsp) == 58  # [null] answers load with no gold
    parses = next(load_tog(fb / "grasp/WebQSP_test100_fullparse.json"))
    assert parses.id == "WebQTest-459" and parses.answers


def test_malformed_rows_name_file_and_row(tmp_path):
    path = tmp_path / "cwq.json"
    path.write_text(json.dumps([
        {"question": "ok?", "topic_entity": {"m.01": "A"}, "answer": "B"},
        {"question": "no topic?", "answer": "B"},
    ]))
    with pytest.raises(DatasetError, match=rf"{path}:1: topic_entity must be"):
        list(load_tog(path))
    path.write_text(json.dumps([{"question": "x" * (MAX_QUESTION_CHARS + 1), "topic_entity": {"m.01": "A"}, "answer": "B"}]))
    with pytest.raises(DatasetError, match="characters long"):
        list(load_tog(path))
    path.write_text("[{oops")
    with pytest.raises(DatasetError, match=rf"{path}:1: not valid JSON"):
        list(load_tog(path))
    path.write_text('{"question": "not a list"}')
    with pytest.raises(DatasetError, match="expected a JSON list"):
        list(load_tog(path))
