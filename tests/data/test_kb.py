from __future__ import annotations

import pytest

from kgqa.data.demo import DEMO_KG
from kgqa.data.examples import DatasetError
from kgqa.data.kb import build_store, guess_format, store_stats
from kgqa.kg import EmbeddedStore, KGError, KnowledgeGraph


def test_a_store_on_disk_reopens_with_its_profile(tmp_path):
    store, profile, reports = build_store([DEMO_KG], path=tmp_path / "store")
    assert profile == "freebase" and reports[0].triples == len(store) > 500
    del store
    reopened = EmbeddedStore.open(tmp_path / "store")
    meta = reopened.read_meta()
    assert meta["profile"] == "freebase" and meta["sources"][0]["format"] == "ntriples"
    kg = KnowledgeGraph(reopened, profile=meta["profile"])
    stats = store_stats(kg)
    assert stats["triples"] == reports[0].triples
    assert 250 <= stats["entities"] <= 400 and 20 <= stats["relations"] <= 30


def test_formats_and_errors(tmp_path):
    assert guess_format("kb.txt") == "metaqa" and guess_format("x.nt") == "ntriples" and guess_format("g.parquet") == "rog"
    with pytest.raises(DatasetError, match="cannot tell the format"):
        guess_format("graph.xyz")
    with pytest.raises(DatasetError, match="no such file"):
        build_store([tmp_path / "missing.nt"])
    bad = tmp_path / "bad.nt"
    bad.write_text("<http://a> <http://b> .\n")
    with pytest.raises(KGError, match="cannot load"):
        build_store([bad])
    with pytest.raises(KGError, match="no kgqa store"):
        EmbeddedStore.open(tmp_path / "nothing")


def test_metaqa_kb_becomes_a_metaqa_store(shared_data, tmp_path):
    store, profile, _ = build_store([shared_data / "metaqa" / "kb.txt"], path=tmp_path / "m")
    assert profile == "metaqa"
    stats = store_stats(KnowledgeGraph(store, profile=profile))
    assert stats["relations"] == 9 and stats["entities"] > 40_000
