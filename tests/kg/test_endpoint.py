"""The SPARQL endpoint backend under faults, against a scripted HTTP server on 127.0.0.1."""

from __future__ import annotations

import time

import pytest

from kgqa.kg import KGError, KnowledgeGraph, SparqlEndpoint
from kgqa.kg.virtuoso import free_port
from tests.kg.scripted_server import XML_OK, ScriptedServer


@pytest.fixture
def scripted():
    servers = []

    def make(script):
        servers.append(ScriptedServer(script))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def no_sleep(waits):
    return waits.append


def test_reads_xml_results(scripted):
    server = scripted([])
    kg = KnowledgeGraph(SparqlEndpoint(server.url), profile="freebase")
    assert kg.names(["m.0abc"]) == {"m.0abc": "Parasite"}


def test_endpoint_down_is_a_clear_error_after_bounded_retries():
    waits: list[float] = []
    url = f"http://127.0.0.1:{free_port()}/sparql"
    endpoint = SparqlEndpoint(url, retries=3, backoff=0.5, sleep=no_sleep(waits))
    with pytest.raises(KGError, match=f"SPARQL endpoint {url} failed after 4 attempts"):
        endpoint.select("SELECT * WHERE { ?s ?p ?o } LIMIT 1")
    assert waits == [0.5, 1.0, 2.0]


def test_http_500_is_retried_then_succeeds(scripted):
    server = scripted([(500, b"Virtuoso 42000 Error", 0.0), (503, b"busy", 0.0)])
    waits: list[float] = []
    rows = SparqlEndpoint(server.url, retries=3, sleep=no_sleep(waits)).select("SELECT ?e ?name WHERE { ?e ?p ?name }")
    assert [row["name"].value for row in rows] == ["Parasite"]
    assert len(server.requests) == 3 and len(waits) == 2


def test_http_500_every_time_ends_in_a_clear_error(scripted):
    server = scripted([(500, b"Virtuoso 42000 Error", 0.0)] * 3)
    with pytest.raises(KGError, match="failed after 3 attempts"):
        SparqlEndpoint(server.url, retries=2, sleep=lambda s: None).select("SELECT ?x WHERE { ?x ?p ?o }")
    assert len(server.requests) == 3


def test_a_bad_query_is_not_retried(scripted):
    server = scripted([(400, b"Virtuoso 37000 Error SP030: SPARQL compiler", 0.0)])
    with pytest.raises(KGError, match="refused the query"):
        SparqlEndpoint(server.url, retries=3, sleep=lambda s: None).select("SELECT nonsense")
    assert len(server.requests) == 1


@pytest.mark.parametrize("body", [b"<html>Service Unavailable</html>", b"not xml at all", b'{"results": 3}', b""])
def test_garbage_answers_are_a_clear_error(scripted, body):
    server = scripted([(200, body, 0.0)])
    with pytest.raises(KGError, match=f"SPARQL endpoint {server.url} answered garbage"):
        SparqlEndpoint(server.url, retries=0).select("SELECT ?x WHERE { ?x ?p ?o }")


def test_a_hanging_endpoint_times_out_and_is_retried(scripted):
    server = scripted([(200, XML_OK, 3.0), (200, XML_OK, 3.0)])
    start = time.monotonic()
    with pytest.raises(KGError, match="failed after 2 attempts"):
        SparqlEndpoint(server.url, timeout=1, retries=1, sleep=lambda s: None).select("SELECT ?x WHERE { ?x ?p ?o }")
    assert time.monotonic() - start < 5
    assert len(server.requests) == 2


def test_long_queries_go_by_post(scripted):
    server = scripted([])
    kg = KnowledgeGraph(SparqlEndpoint(server.url, post_above=500), profile="freebase")
    kg.names(["m.0abc"])
    kg.names([f"m.0x{i}" for i in range(100)])
    assert [method for method, _ in server.requests] == ["GET", "POST"]
    assert "m.0x99" in server.requests[1][1]


def test_only_http_urls_are_endpoints():
    with pytest.raises(KGError, match="must be an http"):
        SparqlEndpoint("file:///etc/passwd")


def test_an_engine_other_than_virtuoso_gets_its_query_as_written(scripted):
    query = "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1"
    assert SparqlEndpoint(scripted([]).url).in_written_order(query) == query


def test_virtuoso_is_told_to_join_in_the_order_written(virtuoso_server):
    endpoint = SparqlEndpoint(virtuoso_server.url)
    ordered = endpoint.in_written_order("SELECT ?s WHERE { ?s ?p ?o } LIMIT 1")
    assert ordered.startswith('DEFINE sql:select-option "order" ') and endpoint.server.startswith("Virtuoso")
    assert len(endpoint.select(ordered)) == 1  # and Virtuoso takes it
