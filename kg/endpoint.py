"""The endpoint backend: any SPARQL 1.1 endpoint (Virtuoso, as Freebase users run it) via SPARQLWrapper."""

from __future__ import annotations

import json
import logging
import socket
import time
import urllib.error
import xml.etree.ElementTree as ET
from collections.abc import Callable

from SPARQLWrapper import POST, XML, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import EndPointInternalError, SPARQLWrapperException

from kgqa.kg import queries
from kgqa.kg.errors import KGError
from kgqa.kg.terms import RdfTerm

log = logging.getLogger(__name__)

_KINDS = {"uri": "iri", "literal": "literal", "typed-literal": "literal", "bnode": "bnode"}
_SRX = "{http://www.w3.org/2005/sparql-results#}"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


class _Transient(Exception):
    """A failure worth retrying: connection refused or reset, timeout, HTTP 5xx."""


class SparqlEndpoint:
    """SELECT queries over HTTP with a timeout, bounded retries with exponential backoff, and POST
    for long queries. Every failure surfaces as a `KGError` that names the endpoint.

    Results are asked for as SPARQL XML: Virtuoso writes it about twice as fast as JSON (55 rows:
    1.5 ms against 3.5 ms), which is most of a batched query's time. JSON answers are read too.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        post_above: int = 1_500,
        relation_index: bool | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise KGError(f"SPARQL endpoint must be an http(s) URL, got {url!r}")
        self.url = url
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.post_above = post_above
        self._sleep = sleep
        self._indexed = relation_index  # None: asked once, on first use
        self.server: str | None = None  # the HTTP Server header of its last answer ("Virtuoso/07.20.3229 (Linux) ...")

    def describe(self) -> str:
        return self.url

    @property
    def relation_index(self) -> tuple[str, str] | None:
        """(graph IRI, predicate IRI) of the relation index (`kg.queries.index_relations`) where the
        endpoint keeps one (a Virtuoso loaded by kgqa does), else None: asked once, by one probe,
        unless `relation_index` was given. A stale index (data changed since it was built) answers
        stale relations: rebuild it with the same update after a load."""
        if self._indexed is None:
            self._indexed = bool(self.select(queries.has_relation_index()))
        return (queries.RELATION_INDEX, queries.RELATIONS_OF) if self._indexed else None

    def in_written_order(self, query: str) -> str:
        """`query` told to join its patterns in the order written, where the engine must be told:
        Virtuoso's optimizer may scan a whole graph for a pattern a LIMIT subquery before it would
        bound (a relation's mirrors: over 60 s at 10^7 triples, 0.1 s in order), and obeys
        `DEFINE sql:select-option "order"`. Other engines get the query as it is."""
        if self.server is None:
            self.select(queries.has_relation_index())  # any cheap query: its answer names the server
        return f'DEFINE sql:select-option "order" {query}' if (self.server or "").startswith("Virtuoso") else query

    def select(self, query: str) -> list[dict[str, RdfTerm]]:
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(self.backoff * 2 ** (attempt - 1))
            try:
                return self._parse(self._fetch(query))
            except _Transient as exc:
                last = exc.__cause__ or exc
                log.info("SPARQL endpoint %s, attempt %d of %d: %s", self.url, attempt + 1, self.retries + 1, last)
        raise KGError(f"SPARQL endpoint {self.url} failed after {self.retries + 1} attempts: {last}") from last

    def _fetch(self, query: str) -> bytes:
        client = SPARQLWrapper(self.url, agent="kgqa")
        client.setQuery(query)
        client.setReturnFormat(XML)
        client.setTimeout(int(max(1, self.timeout)))
        if len(query) > self.post_above:
            client.setMethod(POST)
        try:
            response = client.query().response
            self.server = response.headers.get("Server", "")
            return response.read()
        except EndPointInternalError as exc:
            raise _Transient() from exc
        except SPARQLWrapperException as exc:  # 400 bad query, 401, 404, 414: retrying will not help
            raise KGError(f"SPARQL endpoint {self.url} refused the query: {_first_line(exc)}") from exc
        except urllib.error.HTTPError as exc:
            if exc.code >= 500 or exc.code == 429:
                raise _Transient() from exc
            raise KGError(f"SPARQL endpoint {self.url} answered HTTP {exc.code}: {exc.reason}") from exc
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError) as exc:
            raise _Transient() from exc

    def _parse(self, body: bytes) -> list[dict[str, RdfTerm]]:
        try:
            if body.lstrip()[:1] == b"{":
                return [{name: _json_term(cell) for name, cell in row.items()} for row in json.loads(body)["results"]["bindings"]]
            return _xml_rows(ET.fromstring(body))
        except (ValueError, KeyError, TypeError, AttributeError, ET.ParseError) as exc:
            raise KGError(f"SPARQL endpoint {self.url} answered garbage: {body[:120]!r}") from exc


def _xml_rows(root: ET.Element) -> list[dict[str, RdfTerm]]:
    results = root.find(f"{_SRX}results")
    if root.tag != f"{_SRX}sparql" or results is None:
        raise ValueError("not a SPARQL XML result")
    rows = []
    for result in results:
        row = {}
        for binding in result:
            value = binding[0]
            kind = value.tag[len(_SRX) :]
            row[binding.get("name")] = RdfTerm(
                _KINDS[kind], value.text or "", datatype=value.get("datatype"), lang=value.get(_XML_LANG)
            )
        rows.append(row)
    return rows


def _json_term(cell: dict) -> RdfTerm:
    return RdfTerm(_KINDS[cell["type"]], cell["value"], datatype=cell.get("datatype"), lang=cell.get("xml:lang"))


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
