"""Names found in questions as users write them, and the index kept beside a store."""

from __future__ import annotations

import pyoxigraph as ox

from kgqa.kg import EmbeddedStore, KnowledgeGraph
from kgqa.kg.names import INDEX_FILE, NameIndex, tokens

NAMES = [
    ("m.1", "Monte Alto, São Paulo"), ("m.2", "Miley Cyrus"), ("m.3", "Tupac Shakur"), ("m.4", "J. R. R. Tolkien"),
    ("m.5", "Jamaica"), ("m.6", "The Who"), ("m.7", "Falkland Islands"), ("m.8", "Boston Celtics"),
]


def found(question: str) -> dict[str, tuple[str, str]]:
    """Each entity's closest mention, the longest of equally close ones."""
    best = {}
    for m in NameIndex(NAMES).mentions(question):
        if m.entity not in best or (m.similarity, m.end - m.start) > (best[m.entity].similarity, best[m.entity].end - best[m.entity].start):
            best[m.entity] = m
    return {entity: (m.text, m.how) for entity, m in best.items()}


def found_all(question: str) -> dict[str, set[tuple[str, str]]]:
    every: dict[str, set[tuple[str, str]]] = {}
    for m in NameIndex(NAMES).mentions(question):
        every.setdefault(m.entity, set()).add((m.text, m.how))
    return every


def test_names_as_users_write_them():
    assert found("which river runs by monte alto")["m.1"] == ("monte alto", "variant")  # no accent, no state
    assert found("Where was Monte Alto, São Paulo founded?")["m.1"] == ("monte alto sao paulo", "exact")
    assert found("a movie starring Miley Cirus")["m.2"] == ("miley cirus", "fuzzy")
    assert found("Which movie with Tupac also has Dennis?")["m.3"] == ("tupac", "partial")
    assert found("what did JRR Tolkien teach")["m.4"] == ("jrr tolkien", "variant")
    assert found("the jamaican flag")["m.5"] == ("jamaican", "fuzzy")
    assert found("who owns the falkland island")["m.7"][0] == "falkland island"
    assert ("celtics", "partial") in found_all("did the celtics win")["m.8"]


def test_common_words_alone_name_nothing_but_exact_names():
    assert "m.6" not in found("who is the president")  # "the" and "who" start no near match
    assert found("a concert by The Who")["m.6"] == ("the who", "exact")
    assert found("what is it") == {}


def test_tokens_fold_case_accents_and_possessives():
    assert tokens("JFK's Brother & São Paulo") == ("jfk", "brother", "and", "sao", "paulo")


def test_the_index_is_saved_beside_the_store_and_rebuilt_when_the_store_changes(tmp_path):
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    fb = "http://rdf.freebase.com/ns/"
    name, alias = ox.NamedNode(fb + "type.object.name"), ox.NamedNode(fb + "common.topic.alias")
    usa = ox.NamedNode(fb + "m.09c7w0")
    store.add_triples([ox.Triple(usa, name, ox.Literal("United States of America", language="en")),
                       ox.Triple(usa, alias, ox.Literal("USA", language="en"))])
    index = KnowledgeGraph(store, profile="freebase").name_index()
    assert {m.entity for m in index.mentions("what currency does the usa use")} == {"m.09c7w0"}  # by its alias
    assert (tmp_path / "store" / INDEX_FILE).is_file()
    again = KnowledgeGraph(store, profile="freebase")
    assert again.name_index().names == index.names and again.stats.queries == 0  # loaded, not queried
    store.add_triples([ox.Triple(ox.NamedNode(fb + "m.0d05w3"), name, ox.Literal("China", language="en"))])
    rebuilt = KnowledgeGraph(store, profile="freebase").name_index()
    assert ("m.0d05w3", "China") in rebuilt.names


def test_a_damaged_index_file_is_rebuilt(tmp_path):
    (tmp_path / INDEX_FILE).write_text('{"version": 1, "stamp": "", "names": [["m.1", 7]]}')
    assert NameIndex.load(tmp_path) is None
    (tmp_path / INDEX_FILE).write_text("not json")
    assert NameIndex.load(tmp_path) is None


def test_every_backend_lists_the_same_names(demo_kg):
    names = set(demo_kg.all_names())
    assert ("m.0dm001", "USA") in names and ("m.0dm001", "United States") in names  # aliases too
    mentions = demo_kg.name_index().mentions("who directed parasite")
    assert [(m.text, m.how) for m in mentions if m.name == "Parasite"] == [("parasite", "exact")]
