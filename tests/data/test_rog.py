from __future__ import annotations

import json

import pytest

from data.examples import DatasetError
from data.rog import load_rog, question_graph
from kg import Direction

ROWS = [
    {
        "id": "WebQTest-1", "question": "what does jamaican people speak", "answer": ["Jamaican English"],
        "q_entity": ["Jamaica"], "a_entity": ["Jamaican English"], "choices": [],
        "graph": [["Jamaica", "location.country.languages_spoken", "Jamaican English"],
                  ["Jamaica", "location.country.capital", "Kingston"],
                  ["m.0cvt1", "government.government_position_held.jurisdiction", "Jamaica"],
                  ["Jamaica", "common.topic.notable_types", "Country"]],
    },
    {
        "id": "WebQTest-2", "question": "who is the prime minister of jamaica?", "answer": ["Andrew Holness"],
        "q_entity": ["Jamaica"], "a_entity": ["Andrew Holness"], "choices": [],
        "graph": [["m.0cvt1", "government.government_position_held.office_holder", "Andrew Holness"]],
    },
]


@pytest.fixture(params=["jsonl", "parquet"])
def rog_file(request, tmp_path):
    if request.param == "jsonl":
        path = tmp_path / "rog.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    else:
        import datasets

        path = tmp_path / "rog.parquet"
        datasets.Dataset.from_list(ROWS).to_parquet(str(path))
    return path


def test_local_files_load_through_hf_datasets(rog_file):
    examples = list(load_rog(rog_file))
    assert [ex.id for ex in examples] == ["WebQTest-1", "WebQTest-2"]
    assert examples[0].topic_entities == ["Jamaica"] and examples[0].answers == ["Jamaican English"]
    assert examples[1].a_entities == ["Andrew Holness"]


def test_each_question_graph_is_its_own_store(rog_file):
    first, second = load_rog(rog_file)
    kg = question_graph(first)
    relations = kg.relations(["Jamaica"])["Jamaica"]
    assert ("location.country.capital", Direction.OUT) in relations
    assert ("government.government_position_held.jurisdiction", Direction.IN) in relations
    assert not any(r.relation.startswith("common.") for r in relations)
    assert [n.label for n in kg.neighbours(["Jamaica"], "location.country.capital", direction="out")["Jamaica"]] == ["Kingston"]
    assert question_graph(second).relations(["Jamaica"]).items == {}  # the other graph does not leak in


def test_hub_names_need_the_network(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetError, match="cannot load RoG dataset 'rmanluo/RoG-webqsp'"):
        list(load_rog("rmanluo/RoG-webqsp", split="test"))


def test_malformed_graph_rows_are_clear_errors(tmp_path):
    path = tmp_path / "bad.jsonl"
    row = dict(ROWS[0], graph=[["Jamaica", "location.country.capital"]])
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(DatasetError, match=r"bad.jsonl:0: graph triple 0 is not \[head, relation, tail\]"):
        list(load_rog(path))
    with pytest.raises(DatasetError, match="no such file"):
        list(load_rog(tmp_path / "missing.jsonl"))
