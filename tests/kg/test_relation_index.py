"""The relation index built in bounded memory: the same literals as one SPARQL GROUP BY, however
many runs it spills, blank nodes included."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from kgqa.data.demo import DEMO_KG
from kgqa.kg import EmbeddedStore
from kgqa.kg.queries import RELATION_INDEX, index_relations
from kgqa.kg.relation_index import SPILL_PREFIX, _drop, build_relation_index

EX = "http://example.org/"


def graph() -> ox.Store:
    """The demo graph and the terms it lacks: a blank node, a non-ASCII IRI, a literal object, a repeated edge."""
    store = ox.Store()
    store.bulk_load(path=str(DEMO_KG), format=ox.RdfFormat.N_TRIPLES)
    cvt, place = ox.BlankNode("cvt1"), ox.NamedNode(EX + "Zürich")
    store.extend([
        ox.Quad(cvt, ox.NamedNode(EX + "located_in"), place),
        ox.Quad(cvt, ox.NamedNode(EX + "located_in"), ox.NamedNode(EX + "Switzerland")),
        ox.Quad(place, ox.NamedNode(EX + "population"), ox.Literal("415215", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer"))),
        ox.Quad(ox.NamedNode(EX + "Switzerland"), ox.NamedNode(EX + "contains"), cvt),
    ])
    return store


def index_of(store: ox.Store) -> dict[str, set[str]]:
    return {str(q.subject): set(q.object.value.split()) for q in store.quads_for_pattern(None, None, None, ox.NamedNode(RELATION_INDEX))}


@pytest.mark.parametrize("run_entities", [1_000_000, 7])  # one run in memory; runs of 7 entities spilled and merged
def test_the_index_is_the_one_a_sparql_group_by_builds(tmp_path, run_entities):
    expected = graph()
    expected.update(index_relations())
    built = graph()
    build_relation_index(built, spill_dir=tmp_path, run_entities=run_entities)
    index = index_of(built)
    assert index == index_of(expected)
    assert index["_:cvt1"] == {">" + EX + "located_in", "<" + EX + "contains"}  # the store's own blank node
    assert index[f"<{EX}Zürich>"] == {"<" + EX + "located_in", ">" + EX + "population"}
    assert not any(key.startswith('"') for key in index)  # a literal has no relations of its own
    listed = index[f"<{RELATION_INDEX}>"]  # the relations that join two nodes: an IRI object, not a literal or a blank node
    assert EX + "located_in" in listed and EX + "population" not in listed and EX + "contains" not in listed
    assert list(tmp_path.iterdir()) == []  # the spilled runs are gone


def test_building_again_replaces_the_index(tmp_path):
    store = graph()
    build_relation_index(store, spill_dir=tmp_path)
    store.remove(ox.Quad(ox.NamedNode(EX + "Switzerland"), ox.NamedNode(EX + "contains"), ox.BlankNode("cvt1")))
    build_relation_index(store, spill_dir=tmp_path, run_entities=5)
    index = index_of(store)
    assert index["_:cvt1"] == {">" + EX + "located_in"}
    assert index[f"<{EX}Switzerland>"] == {"<" + EX + "located_in"}
    assert len(index) == len({str(q.subject) for q in store.quads_for_pattern(None, None, None, ox.NamedNode(RELATION_INDEX))})


def test_a_store_on_disk_removes_what_a_killed_build_left(tmp_path):
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    left = tmp_path / "store" / (SPILL_PREFIX + "killed")
    left.mkdir()
    (left / "run-0").write_bytes(b"<urn:a>\t>urn:r\n")
    store.load_file(DEMO_KG, format="ntriples")
    assert not left.exists()
    assert not list((tmp_path / "store").glob(SPILL_PREFIX + "*"))
    assert store.relation_index is not None


def test_an_old_index_is_dropped_a_batch_at_a_time_and_nothing_else_with_it():
    store = graph()
    build_relation_index(store)
    triples = len(list(store.quads_for_pattern(None, None, None, ox.DefaultGraph())))
    _drop(store, ox.NamedNode(RELATION_INDEX), batch=3)
    assert not store.contains_named_graph(ox.NamedNode(RELATION_INDEX))
    assert len(store) == triples


def quads_of(store: ox.Store) -> set[tuple[str, str, frozenset[str]]]:
    """Every quad of the index, the list of the relations that join two nodes included (a blank node
    as `_:`: each load names it anew)."""
    return {("_:" if isinstance(q.subject, ox.BlankNode) else str(q.subject), str(q.predicate), frozenset(q.object.value.split()))
            for q in store.quads_for_pattern(None, None, None, ox.NamedNode(RELATION_INDEX))}


PLAIN = DEMO_KG.read_bytes() + (  # the demo and what the bulk loader reads the same way: no trailing newline at the end
    f'<{EX}Z%C3%BCrich> <{EX}population> "415  215 (2020, \\"estimate\\")"@en .\n'
    f'<{EX}Switzerland> <{EX}contains> <{EX}Z%C3%BCrich> .'
).encode()


@pytest.mark.parametrize("run_entities", [1_000_000, 7])
def test_a_load_of_n_triples_gathers_the_index_as_it_reads_the_same_one_reading_back_builds(tmp_path, read_backs, run_entities):
    source = tmp_path / "graph.nt"
    source.write_bytes(PLAIN)
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    with store.gathering() as runs:
        runs.run_entities = run_entities
        store.load_file(source, format="ntriples", gather=runs)
        assert runs.exact and list((tmp_path / "store").glob(SPILL_PREFIX + "*")) == [runs.folder]
    assert read_backs == [] and store.relation_index is not None
    gathered = quads_of(store.store)
    assert index_of(store.store)[f"<{EX}Z%C3%BCrich>"] == {">" + EX + "population", "<" + EX + "contains"}  # the line with no newline
    store.index_relations()
    assert read_backs == [1] and quads_of(store.store) == gathered
    assert not list((tmp_path / "store").glob(SPILL_PREFIX + "*"))


@pytest.mark.parametrize("odd", [
    b"<http://example.org/a>\t<http://example.org/p> <http://example.org/b> .\n",  # a tab between terms
    b"<http://example.org/a> <http://example.org/p>  <http://example.org/b> .\n",  # two spaces
    b" <http://example.org/a> <http://example.org/p> <http://example.org/b> .\n",  # an indented line
    b'<http://example.org/a> <http://example.org/p> "a\ttab" .\n',  # a tab in a literal: read back, though it needs not be
    b"# a comment\n",
    b"\n",  # an empty line
    b"<http://example.org/a> <http://example.org/p> <http://example.org/b>.\n",  # no space before the dot
    b"<http://example.org/\\u00E9> <http://example.org/p> <http://example.org/b> .\n",  # an escape the parser decodes
    b"_:x <http://example.org/p> <http://example.org/b> .\n",  # a blank node the loader names anew
])
def test_lines_the_store_would_not_dump_so_are_indexed_by_reading_the_graph_back(tmp_path, read_backs, odd):
    source = tmp_path / "graph.nt"
    source.write_bytes(DEMO_KG.read_bytes() + odd)
    store = EmbeddedStore()
    with store.gathering() as runs:
        store.load_file(source, format="ntriples", gather=runs)
        assert not runs.exact
    assert read_backs == [1]
    expected = ox.Store()
    expected.bulk_load(path=str(source), format=ox.RdfFormat.N_TRIPLES)
    expected.update(index_relations())
    assert quads_of(store.store) == quads_of(expected)
