"""A real Virtuoso going away under a client: a clear error that names it, never a hang."""

from __future__ import annotations

import pytest

from kgqa.data.demo import DEMO_KG
from kgqa.kg import KGError, KnowledgeGraph, SparqlEndpoint, virtuoso


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
