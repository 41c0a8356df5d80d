from __future__ import annotations

import itertools
import json

import pytest

from kgqa.data.examples import DatasetError
from kgqa.data.rog import load_rog, question_graph
from kgqa.kg import Direction

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


@pytest.fixture(params=["jsonl", "jsonl.gz", "json.bz2", "parquet"])
def rog_file(request, tmp_path):
    if request.param == "jsonl":
        path = tmp_path / "rog.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    elif request.param in {"jsonl.gz", "json.bz2"}:
        import bz2
        import gzip

        path = tmp_path / f"rog.{request.param}"
        with (gzip.open if path.suffix == ".gz" else bz2.open)(path, "wt") as handle:
            handle.write("".join(json.dumps(r) + "\n" for r in ROWS))
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


def test_nameless_nodes_are_stepped_through_and_never_answers(tmp_path):
    import dspy

    from kgqa.programs import KGQA
    from tests.programs.oracle import oracle

    path = tmp_path / "rog.jsonl.gz"
    import gzip

    with gzip.open(path, "wt") as handle:
        handle.write(json.dumps({**ROWS[0], "graph": ROWS[0]["graph"] + ROWS[1]["graph"]}) + "\n")
    (example,) = load_rog(path)
    kg = question_graph(example)
    (cvt,) = kg.neighbours(["Jamaica"], "government.government_position_held.jurisdiction", direction="in")["Jamaica"]
    assert cvt.name is None  # its mid is no name
    wanted = ["government.government_position_held.jurisdiction (reverse) -> government.government_position_held.office_holder",
              "government.government_position_held.jurisdiction (reverse)"]
    lm = oracle(wanted, hops=1)
    with dspy.context(lm=lm):
        prediction = KGQA(kg)(question="who holds a government position in jamaica?", topic_entities=["Jamaica"])
    assert prediction.answers == ["Andrew Holness"]  # through the CVT, which is not an answer itself
    assert "-> m.0cvt1 ->" in prediction.paths[0]


@pytest.mark.parametrize("relation", ["book.book_edition.ISBN", "location.location_symbol_relationship.Kind_of_symbol"])
def test_real_freebase_relation_ids_with_capitals_are_accepted_by_both_profiles(relation):
    from kgqa.kg.profiles import FREEBASE, ROG

    for profile in (FREEBASE, ROG):
        iri = profile.relation_iri(relation)
        assert iri.endswith(relation) and profile.relation_id(iri) == relation


def test_cwq_mini_rows_load_with_their_labels(shared_data):
    path = shared_data / "cwq_mini" / "cwq_mini_test.jsonl.gz"
    examples = list(itertools.islice(load_rog(path), 40))
    assert len(examples) == 40 and all(ex.graph for ex in examples)
    assert any(getattr(ex, "ground_paths", None) for ex in examples)
    assert {ex.compositionality_type for ex in examples} <= {"composition", "conjunction", "comparative", "superlative"}
    for ex in examples[:10]:  # every graph is a store the profile accepts
        question_graph(ex)
