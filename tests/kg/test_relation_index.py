"""The relation index built in bounded memory, kept in a table beside the store: the same literals
as one SPARQL GROUP BY, however many runs it spills, blank nodes included."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys

import pyoxigraph as ox
import pytest

from kgqa.data.demo import DEMO_KG
from kgqa.kg import EmbeddedStore
from kgqa.kg.queries import RELATION_INDEX, index_relations
from kgqa.kg.relation_index import SPILL_PREFIX, GatherProcess, RelationRuns, build_relation_index, drop_stored_index
from kgqa.kg.relation_table import ARRAYS, TABLE_FILE, RelationTable

EX = "http://example.org/"
TABLE_FILES = sorted([TABLE_FILE, *(f"{TABLE_FILE}.{name}" for name in ARRAYS)])  # the table and its arrays


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
    """What the SPARQL GROUP BY wrote into a store (`index_relations`): its literals by entity, and the
    list of the relations that join two nodes under the index graph's own IRI."""
    index: dict[str, set[str]] = {}
    for q in store.quads_for_pattern(None, None, None, ox.NamedNode(RELATION_INDEX)):
        index.setdefault(str(q.subject), set()).update(q.object.value.split())
    return index


def table_of(table: RelationTable, store: ox.Store) -> dict[str, set[str]]:
    """The same from a table beside the store, looked up for every node of `store`'s default graph
    (the table keeps a key of each term, not the term), which has no other row."""
    quads = list(store.quads_for_pattern(None, None, None, ox.DefaultGraph()))
    nodes = sorted({str(q.subject) for q in quads} | {str(q.object) for q in quads if not isinstance(q.object, ox.Literal)})
    found = {term: set(tokens.split()) for term, tokens in table.relations(nodes).items()}
    assert len(table.entities()) == len(found)
    return {**found, f"<{RELATION_INDEX}>": set(table.edge_relations())}


@pytest.mark.parametrize("sizes", [{}, {"run_bytes": 3_000, "gather_bytes": 1_000}])  # one run in memory; dozens spilled and merged
def test_the_index_is_the_one_a_sparql_group_by_builds(tmp_path, sizes):
    expected = graph()
    expected.update(index_relations())
    built = graph()
    spill = tmp_path / "spill"
    spill.mkdir()
    table = build_relation_index(built, directory=tmp_path, stamp="built", spill_dir=spill, **sizes)
    index = table_of(table, built)
    assert index == index_of(expected)
    assert index["_:cvt1"] == {">" + EX + "located_in", "<" + EX + "contains"}  # the store's own blank node
    assert index[f"<{EX}Zürich>"] == {"<" + EX + "located_in", ">" + EX + "population"}
    assert not any(key.startswith('"') for key in index)  # a literal has no relations of its own
    listed = index[f"<{RELATION_INDEX}>"]  # the relations that join two nodes: an IRI object, not a literal or a blank node
    assert EX + "located_in" in listed and EX + "population" not in listed and EX + "contains" not in listed
    assert list(spill.iterdir()) == []  # the spilled runs are gone
    assert not built.contains_named_graph(ox.NamedNode(RELATION_INDEX))  # nothing written into the store
    assert table_of(RelationTable.open(tmp_path, stamp="built"), built) == index  # kept on disk, read back by its stamp
    assert RelationTable.open(tmp_path, stamp="changed") is None  # a store changed since: no index
    assert table.relations([f"<{EX}Zürich>", f"<{EX}nowhere>"]) == {f"<{EX}Zürich>": " ".join(sorted(index[f"<{EX}Zürich>"]))}


def test_building_again_replaces_the_index(tmp_path):
    store = graph()
    build_relation_index(store, directory=tmp_path, stamp="first")
    store.remove(ox.Quad(ox.NamedNode(EX + "Switzerland"), ox.NamedNode(EX + "contains"), ox.BlankNode("cvt1")))
    build_relation_index(store, directory=tmp_path, stamp="second", run_bytes=500, gather_bytes=300)
    assert RelationTable.open(tmp_path, stamp="first") is None
    index = table_of(RelationTable.open(tmp_path, stamp="second"), store)
    assert index["_:cvt1"] == {">" + EX + "located_in"}
    assert index[f"<{EX}Switzerland>"] == {"<" + EX + "located_in"}
    assert sorted(p.name for p in tmp_path.iterdir()) == TABLE_FILES  # no partial file left


def test_a_store_on_disk_removes_what_a_killed_build_left(tmp_path):
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    left = tmp_path / "store" / (SPILL_PREFIX + "killed")
    left.mkdir()
    (left / "run-0").write_bytes(b"<urn:a>\t>urn:r\n")
    half_written = tmp_path / "store" / f"{TABLE_FILE}.partial-1"
    half_written.write_bytes(b"killed")
    store.load_file(DEMO_KG, format="ntriples")
    assert not left.exists() and not half_written.exists()
    assert not list((tmp_path / "store").glob(SPILL_PREFIX + "*"))
    assert store.relation_table is not None


def test_an_index_a_store_kept_inside_it_is_dropped_a_batch_at_a_time_and_nothing_else_with_it(tmp_path):
    store = graph()
    store.update(index_relations())  # as a store made before the table kept its index
    triples = len(list(store.quads_for_pattern(None, None, None, ox.DefaultGraph())))
    drop_stored_index(store, ox.NamedNode(RELATION_INDEX), batch=3)
    assert not store.contains_named_graph(ox.NamedNode(RELATION_INDEX))
    assert len(store) == triples
    older = EmbeddedStore(graph())
    older.store.update(index_relations())
    assert len(older) == triples and older.relation_table is None  # its old index is not counted, nor read
    older.index_relations()
    assert not older.store.contains_named_graph(ox.NamedNode(RELATION_INDEX)) and older.relation_table is not None
    assert len(older) == triples


def quads_of(store: EmbeddedStore) -> set[tuple[str, frozenset[str]]]:
    """Every row of the index, the list of the relations that join two nodes included (a blank node
    as `_:`: each load names it anew)."""
    return {("_:" if entity.startswith("_:") else entity, frozenset(tokens)) for entity, tokens in table_of(store.relation_table, store.store).items()}


def quads_of_group_by(store: ox.Store) -> set[tuple[str, frozenset[str]]]:
    return {("_:" if entity.startswith("_:") else entity, frozenset(tokens)) for entity, tokens in index_of(store).items()}


PLAIN = DEMO_KG.read_bytes() + (  # the demo and what the bulk loader reads the same way: no trailing newline at the end
    f'<{EX}Z%C3%BCrich> <{EX}population> "415  215 (2020, \\"estimate\\")"@en .\n'
    f'<{EX}Switzerland> <{EX}contains> <{EX}Z%C3%BCrich> .'
).encode()


@pytest.mark.parametrize("run_bytes", [1 << 30, 2_000])
def test_a_load_of_n_triples_gathers_the_index_as_it_reads_the_same_one_reading_back_builds(tmp_path, read_backs, run_bytes):
    source = tmp_path / "graph.nt"
    source.write_bytes(PLAIN)
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    with store.gathering() as runs:
        runs.run_bytes, runs.gather_bytes = run_bytes, min(run_bytes, runs.gather_bytes)
        store.load_file(source, format="ntriples", gather=runs)
        assert runs.exact and list((tmp_path / "store").glob(SPILL_PREFIX + "*")) == [runs.folder]
    assert read_backs == [] and store.relation_table is not None
    gathered = quads_of(store)
    assert table_of(store.relation_table, store.store)[f"<{EX}Z%C3%BCrich>"] == {">" + EX + "population", "<" + EX + "contains"}  # the line with no newline
    store.index_relations()
    assert read_backs == [1] and quads_of(store) == gathered
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
@pytest.mark.parametrize("on_disk", [False, True])  # gathered in the loader's thread, or in a process of its own
def test_lines_the_store_would_not_dump_so_are_indexed_by_reading_the_graph_back(tmp_path, read_backs, odd, on_disk):
    source = tmp_path / "graph.nt"
    source.write_bytes(DEMO_KG.read_bytes() + odd)
    store = EmbeddedStore.open(tmp_path / "store", create=True) if on_disk else EmbeddedStore()
    with store.gathering([source]) as gathered:
        assert isinstance(gathered, GatherProcess if on_disk else RelationRuns)
        store.load_file(source, format="ntriples", gather=gathered)
        assert not gathered.exact
    assert read_backs == [1]
    expected = ox.Store()
    expected.bulk_load(path=str(source), format=ox.RdfFormat.N_TRIPLES)
    expected.update(index_relations())
    assert quads_of(store) == quads_of_group_by(expected)


def test_files_of_a_store_on_disk_are_gathered_in_a_process_of_their_own_into_the_same_index(tmp_path, read_backs):
    first, second = tmp_path / "first.nt.gz", tmp_path / "second.nt"
    lines = PLAIN.splitlines(keepends=True)
    with gzip.open(first, "wb") as out:
        out.write(b"".join(lines[:-1]).rstrip(b"\n"))  # a file whose last line has no newline, then another file
    second.write_bytes(lines[-1])
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    with store.gathering([first, second]) as gathered:
        assert isinstance(gathered, GatherProcess)
        with gzip.open(first, "rb") as stream:
            store.load_file(stream, format="ntriples", index=False, gather=gathered)
        store.load_file(second, format="ntriples", gather=gathered)
        assert gathered.exact
    assert read_backs == [] and store.relation_table is not None
    gathered_index = quads_of(store)
    assert table_of(store.relation_table, store.store)[f"<{EX}Z%C3%BCrich>"] == {">" + EX + "population", "<" + EX + "contains"}
    store.index_relations()
    assert read_backs == [1] and quads_of(store) == gathered_index
    assert sorted(p.name for p in (tmp_path / "store").iterdir() if "relations" in p.name) == TABLE_FILES
    assert not list((tmp_path / "store").glob(SPILL_PREFIX + "*"))


def test_a_gathering_process_that_fails_says_so_and_the_graph_is_read_back(tmp_path, read_backs, caplog):
    source = tmp_path / "graph.nt"
    source.write_bytes(DEMO_KG.read_bytes())
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    with store.gathering([tmp_path / "gone.nt"]) as gathered:  # the process cannot read its file
        store.load_file(source, format="ntriples", gather=gathered)
    assert read_backs == [1] and store.relation_table is not None
    assert "gathering the relation index beside the load failed" in caplog.text and "gone.nt" in caplog.text


def test_a_gathering_process_whose_load_is_gone_stops_and_writes_nothing(tmp_path):
    source = tmp_path / "graph.nt"
    source.write_bytes(DEMO_KG.read_bytes())
    orphaned = subprocess.run([sys.executable, "-m", "kgqa.kg.relation_index", str(tmp_path), "1000", str(os.getpid() + 10**6), str(source)],
                              capture_output=True, text=True, timeout=60)  # its parent is not the load it names
    assert orphaned.returncode != 0 and "the load that started this gathering is gone" in orphaned.stderr
    assert not (tmp_path / TABLE_FILE).exists()
