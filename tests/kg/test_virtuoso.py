"""A real Virtuoso: loading gzipped N-Triples, a file it cannot read named in a clear error, and the
server going away under a client: a clear error that names it, never a hang."""

from __future__ import annotations

import gzip
import shutil

import pytest

from kgqa.data.demo import DEMO_KG
from kgqa.kg import KGError, KnowledgeGraph, SparqlEndpoint, virtuoso
from kgqa.kg.queries import RELATION_INDEX, RELATIONS_OF


def test_virtuoso_stopped_mid_run_gives_a_clear_error(tmp_path):
    if not virtuoso.available():
        pytest.skip("virtuoso-t not installed")
    server = virtuoso.LocalVirtuoso.start(tmp_path, [DEMO_KG])
    try:
        kg = KnowledgeGraph(SparqlEndpoint(server.url, timeout=5, retries=2, backoff=0.1), profile="freebase")
        (parasite,) = kg.link(["Parasite"])["Parasite"]
        assert kg.relations([parasite]).items
    finally:
        server.stop()  # by PID
    assert server.process.poll() is not None
    with pytest.raises(KGError, match=f"SPARQL endpoint {server.url} failed after 3 attempts"):
        kg.relations([parasite])


def test_a_gzipped_file_loads_and_a_bad_one_is_named(tmp_path, virtuoso_installed):
    packed = tmp_path / "demo.nt.gz"
    with open(DEMO_KG, "rb") as plain, gzip.open(packed, "wb") as out:
        shutil.copyfileobj(plain, out)
    with virtuoso.LocalVirtuoso.start(tmp_path / "packed", [packed]) as server:
        indexed = KnowledgeGraph(SparqlEndpoint(server.url, timeout=5), profile="freebase")
        (parasite,) = indexed.link(["Parasite"])["Parasite"]
        # the relation index is built after the load and found by one probe; the scan answers alike
        assert indexed.backend.relation_index == (RELATION_INDEX, RELATIONS_OF)
        scanned = KnowledgeGraph(SparqlEndpoint(server.url, timeout=5, relation_index=False), profile="freebase")
        assert scanned.backend.relation_index is None
        assert indexed.relations([parasite])[parasite] == scanned.relations([parasite])[parasite] != ()
        move = [(parasite, "film.film.directed_by", "out")]
        assert indexed.follow(move, relations=True).around == scanned.follow(move, relations=True).around != {}
    bad = tmp_path / "bad.nt"
    bad.write_text(DEMO_KG.read_text(encoding="utf-8").splitlines()[0] + "\n<http://x/a> <http://x/b> broken\n")
    with pytest.raises(KGError, match=r"Virtuoso could not load .*bad\.nt.*line \d+: syntax error"):
        virtuoso.LocalVirtuoso.start(tmp_path / "bad", [bad])
