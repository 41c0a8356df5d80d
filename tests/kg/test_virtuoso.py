"""A real Virtuoso: loading gzipped N-Triples, a file it cannot read named in a clear error, and the
server going away under a client: a clear error that names it, never a hang."""

from __future__ import annotations

import gzip
import shutil

import pytest

from kgqa.data.demo import DEMO_KG
from kgqa.kg import KGError, KnowledgeGraph, SparqlEndpoint, virtuoso
from kgqa.kg.queries import EDGE_RELATION, RELATION_INDEX, RELATIONS_OF, index_updates


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


def test_virtuoso_builds_the_relation_index_a_range_of_nodes_at_a_time_as_one_group_by_would(tmp_path, virtuoso_installed):
    """The index is built inside Virtuoso a batch of node ids at a time, in bounded memory
    (`virtuoso.index_script`): the same literal for every node, blank ones too, and the same list of
    relations joining two nodes as one SPARQL GROUP BY over every fact (`kg.queries.index_updates`)."""
    extra = tmp_path / "blank.nt"
    extra.write_text("_:b1 <http://x.org/p> <http://x.org/o> .\n<http://x.org/s> <http://x.org/q> _:b1 .\n"
                     '_:b1 <http://x.org/label> "a value" .\n')
    with virtuoso.LocalVirtuoso.start(tmp_path / "db", [DEMO_KG, extra]) as server:
        endpoint = SparqlEndpoint(server.url, timeout=10)

        def index() -> tuple[dict[str, list[str]], list[str]]:
            rows = endpoint.select(f"SELECT ?e ?tokens WHERE {{ GRAPH <{RELATION_INDEX}> {{ ?e <{RELATIONS_OF}> ?tokens }} }}")
            edges = endpoint.select(f"SELECT ?r WHERE {{ GRAPH <{RELATION_INDEX}> {{ <{RELATION_INDEX}> <{EDGE_RELATION}> ?r }} }}")
            return {r["e"].value: sorted(r["tokens"].value.split()) for r in rows}, sorted(r["r"].value for r in edges)

        built, edges = index()  # as the server started: node ids in batches of `INDEX_RANGE_IDS`
        assert len(built) > 300 and "http://x.org/p" in edges and "http://x.org/label" not in edges
        blank = [node for node, tokens in built.items() if tokens == ["<http://x.org/q", ">http://x.org/label", ">http://x.org/p"]]
        assert len(blank) == 1  # the blank node's out- and in-relations, literals never in-relations
        server.index_relations(ids=7)  # many batches of 7 ids
        assert index() == (built, edges)
        updates = "".join(f"SPARQL {' '.join(update.split())}; " for update in index_updates(drop=False))
        server.isql(f"log_enable(2,1); SPARQL CLEAR SILENT GRAPH <{RELATION_INDEX}>; {updates}")
        assert index() == (built, edges)
