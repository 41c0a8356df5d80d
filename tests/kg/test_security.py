"""Nothing reaches SPARQL raw: hostile ids, relations and labels are refused or matched literally."""

from __future__ import annotations

import re

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgqa.kg import METAQA, Direction, EmbeddedStore, InvalidTermError, KnowledgeGraph, queries
from kgqa.kg.profiles import RDFS_LABEL
from kgqa.kg.terms import sparql_iri, sparql_string

HOSTILE_PIECES = [
    ">", "<", "}", "{", '"', "'", "\n", "\r", "\t", "#", "\\", "\\u0022", "\\u003E", " ", "^^", "@en",
    "} INSERT DATA { <http://evil/s> <http://evil/p> <http://evil/o> } #",
    "> ?p ?o } UNION { ?s ?p ?o", '" } ; DROP ALL ; #', "\x00", "\u202e", "日本", "é", "\U0001f600",
]
hostile_text = st.lists(
    st.one_of(st.sampled_from(HOSTILE_PIECES), st.text(min_size=1, max_size=8)), min_size=1, max_size=6
).map("".join)

EVIL = ox.NamedNode("http://evil/s")
CONTROL = re.compile(r"[\x00-\x08\n-\x1f\x7f]")  # refused in every term; a tab is escaped instead


def _store_untouched(store: EmbeddedStore, size: int) -> None:
    assert len(store) == size
    assert not list(store.store.quads_for_pattern(EVIL, None, None))


@pytest.fixture(scope="module")
def metaqa_kg():
    store = EmbeddedStore()
    return KnowledgeGraph(store, profile="metaqa")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=hostile_text)
def test_minted_ids_are_matched_literally(metaqa_kg, name):
    """MetaQA ids are names: any printable name is percent-encoded into its IRI and found as itself."""
    store = metaqa_kg.backend
    try:
        iri = METAQA.entity_iri(name)
    except InvalidTermError:
        assert not name.strip() or CONTROL.search(name)
        return
    film = ox.NamedNode(iri)
    year = ox.NamedNode(METAQA.relation_iri("release_year"))
    quads = [
        ox.Quad(film, year, ox.Literal("1999")),
        ox.Quad(film, ox.NamedNode(RDFS_LABEL), ox.Literal(name)),
    ]
    store.store.extend(quads)
    try:
        size = len(store)
        assert metaqa_kg.neighbours([name], "release_year", direction=Direction.OUT)[name][0].id == "1999"
        assert metaqa_kg.names([name]) == {name: name}
        assert name in metaqa_kg.link([name])[name]
        _store_untouched(store, size)
    finally:
        for quad in quads:
            store.store.remove(quad)


@settings(max_examples=300, deadline=None)
@given(text=hostile_text)
def test_freebase_ids_and_relations_outside_the_profile_are_refused(text):
    kg = KnowledgeGraph(EmbeddedStore(), profile="freebase")
    for call in (
        lambda: kg.relations([text]),
        lambda: kg.neighbours([text], "film.film.directed_by", direction=Direction.OUT),
        lambda: kg.neighbours(["m.0abc"], text, direction=Direction.IN),
        lambda: kg.names([text]),
    ):
        try:
            call()
        except InvalidTermError:
            continue
        # Accepted only if it is a well-formed Freebase id or relation, then it matched nothing.
        assert text.replace("_", "").replace(".", "").isalnum() and text.isascii()


@settings(max_examples=300, deadline=None)
@given(text=hostile_text)
def test_generic_iris_with_forbidden_characters_are_refused(text):
    try:
        written = sparql_iri("http://example.org/" + text)
    except InvalidTermError:
        return
    assert not any(c in written[1:-1] for c in '<>"{}|^`\\ \n\r\t')


@settings(max_examples=500, deadline=None)
@given(text=hostile_text)
def test_string_literals_parse_back_to_exactly_the_text(text):
    """Whatever a label holds, the literal written into a query means that text and nothing more."""
    try:
        literal = sparql_string(text)
    except InvalidTermError:
        return
    store = ox.Store()
    (solution,) = store.query(f"SELECT ?x WHERE {{ BIND({literal} AS ?x) }}")
    assert solution["x"].value == text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(label=hostile_text)
def test_link_with_hostile_labels_never_changes_the_store(demo_store, label):
    kg = KnowledgeGraph(demo_store, profile="freebase")
    size = len(demo_store)
    try:
        found = kg.link([label])
    except InvalidTermError:
        return
    assert set(found) == {label}
    _store_untouched(demo_store, size)


def test_an_injection_attempt_is_only_text(demo_store):
    kg = KnowledgeGraph(demo_store, profile="freebase")
    size = len(demo_store)
    attack = '" } INSERT DATA { <http://evil/s> <http://evil/p> <http://evil/o> } #'
    assert kg.link([attack]) == {attack: ()}
    with pytest.raises(InvalidTermError):
        kg.relations(["m.0dm001> ?p ?o } INSERT DATA { <http://evil/s> <http://evil/p> <http://evil/o> } #"])
    _store_untouched(demo_store, size)
    query = queries.link([attack], predicates=[RDFS_LABEL], lang="en")
    assert "INSERT DATA" in query and '\\" }' in query  # present only inside an escaped string
