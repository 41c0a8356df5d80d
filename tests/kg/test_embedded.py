"""The embedded store's relation index: kept in step with the data, out of sight of queries."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from kgqa.kg import Direction, Edge, EmbeddedStore, KnowledgeGraph, queries
from kgqa.kg.embedded import META_FILE
from kgqa.kg.errors import KGError

NS = "http://kgqa.local/metaqa/"


def triple(s: str, r: str, o: str) -> ox.Triple:
    return ox.Triple(ox.NamedNode(NS + "entity/" + s), ox.NamedNode(NS + "relation/" + r), ox.NamedNode(NS + "entity/" + o))


def test_the_index_follows_every_addition():
    store = EmbeddedStore()
    store.add_triples([triple("Heathers", "written_by", "Daniel%20Waters")])
    kg = KnowledgeGraph(store, profile="metaqa")
    assert kg.relations(["Heathers"])["Heathers"] == (Edge("written_by", Direction.OUT),)
    store.add_triples([triple("Heathers", "directed_by", "Michael%20Lehmann"), triple("Batman%20Returns", "written_by", "Daniel%20Waters")])
    assert kg.relations(["Heathers"])["Heathers"] == (Edge("directed_by", Direction.OUT), Edge("written_by", Direction.OUT))
    assert kg.relations(["Daniel Waters"])["Daniel Waters"] == (Edge("written_by", Direction.IN),)
    reached = kg.follow([("Daniel Waters", "written_by", Direction.IN)], relations=True)
    assert reached.around["Heathers"] == (Edge("directed_by", Direction.OUT), Edge("written_by", Direction.OUT))
    assert reached.around["Batman Returns"] == (Edge("written_by", Direction.OUT),)


def test_the_index_is_invisible_to_queries_and_counts(tmp_path):
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    store.add_triples([triple("A", "r", "B"), triple("B", "r", "C")])
    assert len(store) == 2
    assert store.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")[0]["n"].value == "2"
    assert store.relation_table is not None
    store.write_meta(profile="metaqa")
    del store
    reopened = EmbeddedStore.open(tmp_path / "store")
    assert reopened.relation_table is not None and reopened.relation_table.relations(["<urn:kgqa:none>"]) == {}


def test_metaqa_names_what_it_reaches_from_ids():
    store = EmbeddedStore()  # no labels at all: the metaqa profile's names are its ids
    store.add_triples([triple("Heathers", "written_by", "Daniel%20Waters")])
    kg = KnowledgeGraph(store, profile="metaqa")
    (writer,) = kg.follow([("Heathers", "written_by", Direction.OUT)])[("Heathers", "written_by", Direction.OUT)]
    assert writer.id == "Daniel Waters" and writer.name == "Daniel Waters"
    generic = KnowledgeGraph(store, profile="generic")
    (unnamed,) = generic.neighbours([NS + "entity/Heathers"], NS + "relation/written_by", direction=Direction.OUT).items.values()
    assert unnamed[0].name is None


def test_any_number_of_processes_may_read_a_store_at_once(tmp_path):
    writer = EmbeddedStore.open(tmp_path / "store", create=True)
    writer.add_triples([triple("A", "r", "B")])
    writer.write_meta(profile="metaqa")
    del writer  # pyoxigraph: reading while another process writes is undefined; loading comes first
    readers = [EmbeddedStore.open(tmp_path / "store", read_only=True) for _ in range(2)]  # no lock taken
    for reader in readers:
        assert KnowledgeGraph(reader, profile="metaqa").relations(["A"])["A"] == (Edge("r", Direction.OUT),)
        assert reader.relation_table is not None


def test_a_store_whose_metadata_is_damaged_says_so_and_keeps_its_triples(tmp_path):
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    store.add_triples([triple("A", "r", "B")])
    store.write_meta(profile="metaqa")
    del store
    meta = tmp_path / "store" / META_FILE
    whole = meta.read_text()
    for damaged in (whole[: len(whole) // 2], '["profile"]', "\udcff"):  # cut short by a full disk, not an object, not UTF-8
        meta.write_bytes(damaged.encode("utf-8", "surrogateescape"))
        with pytest.raises(KGError, match=f"store's metadata {meta}.*load the store again"):
            EmbeddedStore.open(tmp_path / "store", read_only=True)
    meta.write_text(whole)  # the triples were never touched
    assert len(EmbeddedStore.open(tmp_path / "store", read_only=True)) == 1


def _ntriples(*triples: tuple[str, str, str]) -> EmbeddedStore:
    store = EmbeddedStore()
    ns = "http://rdf.freebase.com/ns/"
    store.add_triples(ox.Triple(ox.NamedNode(ns + s), ox.NamedNode(ns + p), ox.NamedNode(ns + o)) for s, p, o in triples)
    return store


def test_a_schema_s_reverse_property_links_name_inverse_pairs():
    store = _ntriples(("film.film.directed_by", "type.property.reverse_property", "film.director.film"),
                      ("m.01", "film.film.directed_by", "m.02"))
    kg = KnowledgeGraph(store, profile="freebase")
    assert kg.inverse_relations() == {"film.film.directed_by": "film.director.film", "film.director.film": "film.director.film"}


def test_mirrored_pairs_need_enough_facts_and_each_other_most():
    from kgqa.kg.graph import MIN_MIRRORED_FACTS, _mutual_mirrors

    counts = {("a.b.p", "a.c.q"): 5, ("a.c.q", "a.b.p"): 5, ("a.c.q", "a.d.r"): 2, ("a.d.r", "a.c.q"): 2,
              ("a.e.s", "a.f.t"): MIN_MIRRORED_FACTS - 1, ("a.f.t", "a.e.s"): MIN_MIRRORED_FACTS - 1}
    assert _mutual_mirrors(counts, MIN_MIRRORED_FACTS) == [("a.b.p", "a.c.q")]
    with pytest.raises(ValueError, match="inverses must be one of"):
        KnowledgeGraph(EmbeddedStore(), inverses="guess")
    with pytest.raises(ValueError, match="'rog' does not"):
        KnowledgeGraph(EmbeddedStore(), profile="rog", inverses="schema")


def test_the_scan_for_mirrored_relations_is_kept_beside_an_on_disk_store(tmp_path):
    from kgqa.data.demo import DEMO_KG
    from kgqa.kg.graph import MIRRORS_FILE

    store = EmbeddedStore.open(tmp_path / "store", create=True)
    store.load_file(DEMO_KG, format="ntriples")
    first = KnowledgeGraph(store, profile="freebase", inverses="mirrored")
    pairs = first.inverse_relations()
    scanned = first.stats.queries
    assert pairs["film.director.film"] == "film.director.film" and scanned >= 1  # the mirrors of the relations the index lists
    assert (tmp_path / "store" / MIRRORS_FILE).is_file()
    again = KnowledgeGraph(store, profile="freebase", inverses="mirrored")
    assert again.inverse_relations() == pairs and again.stats.queries == 0  # read, not scanned
    fb = "http://rdf.freebase.com/ns/"
    store.add_triples([ox.Triple(ox.NamedNode(fb + "m.0a"), ox.NamedNode(fb + "film.film.directed_by"), ox.NamedNode(fb + "m.0b"))])
    grown = KnowledgeGraph(store, profile="freebase", inverses="mirrored")
    assert grown.inverse_relations() == pairs and grown.stats.queries == scanned  # the store changed: scanned again


def _mirror_counts(store: EmbeddedStore, relations: list[str], per_relation: int) -> dict[tuple[str, str], int]:
    rows = store.select(queries.mirrored_relations(relations, skip_prefixes=(), skip_substrings=(), per_relation=per_relation))
    return {(row["p"].value, row["q"].value): int(row["n"].value) for row in rows}


def test_mirrored_facts_are_counted_whole_on_a_small_graph_as_one_self_join_counts_them():
    from kgqa.data.demo import DEMO_KG

    store = EmbeddedStore()
    store.load_file(DEMO_KG, format="ntriples")
    whole = store.select("SELECT ?p ?q (COUNT(*) AS ?n) WHERE { ?s ?p ?o . FILTER(isIRI(?o)) ?o ?q ?s . FILTER(?p != ?q) } GROUP BY ?p ?q")
    expected = {(row["p"].value, row["q"].value): int(row["n"].value) for row in whole}
    relations = [row["p"].value for row in store.select(queries.edge_relations(skip_prefixes=(), skip_substrings=(), limit=10_000))]
    assert len(relations) > 10 and any(expected)
    assert _mirror_counts(store, relations, 10_000) == expected


def test_a_relation_of_many_facts_is_read_only_so_deep_for_its_mirror():
    ns = "http://example.org/"
    p, q, r = (ox.NamedNode(ns + name) for name in ("p", "q", "r"))
    facts = []
    for i in range(40):  # 40 facts stated both ways round, by p and by q; 5 of them also by r
        s, o = ox.NamedNode(f"{ns}s{i}"), ox.NamedNode(f"{ns}o{i}")
        facts += [ox.Triple(s, p, o), ox.Triple(o, q, s)] + ([ox.Triple(o, r, s)] if i < 5 else [])
    store = EmbeddedStore()
    store.add_triples(facts)
    assert _mirror_counts(store, [p.value, q.value], 100) == {(p.value, q.value): 40, (p.value, r.value): 5,
                                                              (q.value, p.value): 40}
    deep = _mirror_counts(store, [p.value], 10)
    assert deep[(p.value, q.value)] == 10 and deep.get((p.value, r.value), 0) <= 5
