"""Names found in questions as users write them, and the index kept beside a store."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from kgqa.kg import EmbeddedStore, KnowledgeGraph, SparqlEndpoint
from kgqa.kg.names import (
    INDEX_FILE,
    VECTORS_FILE,
    LabelVectors,
    NameIndex,
    TextSearchIndex,
    repaired,
    search_words,
    tokens,
)

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


def test_a_word_one_letter_off_still_finds_the_name():
    # as CWQ's questions write them: a letter missing or added; letters with no accent to strip
    index = NameIndex([("m.g", "Gilfoyle"), ("m.k", "Cambodian French"), ("m.a", "Amharic"), ("m.l", "Læsø Municipality")])
    def near(question: str) -> set[tuple[str, str]]:
        return {(m.text, m.name) for m in index.mentions(question) if m.similarity >= 0.6}
    assert ("gifoyle", "Gilfoyle") in near("In which state did the fictional character Gifoyle live?")
    assert ("cabodian french", "Cambodian French") in near("when Cabodian French is the primary language")
    assert ("amharicc", "Amharic") in near("where Amharicc is spoken")
    assert {(m.text, m.how) for m in index.mentions("the Laeso Municipality")} >= {("laeso municipality", "exact")}
    assert tokens("Læsø, Straße, Łódź, Þórr") == ("laeso", "strasse", "lodz", "thorr")
    assert not near("a short word: gilf")  # a four-letter word finds nothing one letter away


def test_common_words_alone_name_nothing_but_exact_names():
    assert "m.6" not in found("who is the president")  # "the" and "who" start no near match
    assert found("a concert by The Who")["m.6"] == ("the who", "exact")
    assert found("what is it") == {}


def test_tokens_fold_case_accents_and_possessives():
    assert tokens("JFK's Brother & São Paulo") == ("jfk", "brother", "and", "sao", "paulo")


def test_utf8_misread_as_windows_1252_is_read_again():
    # as in CWQ's questions: "What country with the capital of HagÃ¥tÃ±a is in Oceania?"
    assert repaired("capital of HagÃ¥tÃ±a") == "capital of Hagåtña"
    assert repaired("Lyonâ\x80\x93Saint-ExupÃ©ry Airport") == "Lyon–Saint-Exupéry Airport"
    assert repaired("UTCâ\x88\x9205:00") == "UTC−05:00"  # bytes Windows-1252 leaves undefined, read as Latin-1
    for written in ("Déjà vu", "We’re Gonna", "Ø and Å", "naïve ©°"):  # not misread: left as written
        assert repaired(written) == written
    assert found("Where was Monte Alto, SÃ£o Paulo founded?")["m.1"] == ("monte alto sao paulo", "exact")


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


class CountingEncoder:
    """The packaged sentence model, counting the texts it is asked to encode."""

    def __init__(self) -> None:
        from kgqa.programs.embedder import Embedder

        self.embedder, self.texts = Embedder(), []

    def __call__(self, texts):
        self.texts += list(texts)
        return self.embedder.encode(texts)


@pytest.fixture(scope="module")
def encoder() -> CountingEncoder:
    return CountingEncoder()


def test_label_vectors_find_names_written_unlike_them_in_letters(encoder):
    index = NameIndex([("m.dodgers", "Los Angeles Dodgers"), ("m.miley", "Miley Cyrus"), ("m.song", "Song")])
    vectors = LabelVectors.build(index, encoder)
    question = "when did the dodgers last win, and which songs did miley cyrus sing"
    assert "m.dodgers" not in {m.entity for m in index.mentions(question)}  # too few shared letters for trigrams
    by_meaning = {(m.text, m.entity) for m in vectors.mentions(question) if m.how == "embedding"}
    assert ("dodgers", "m.dodgers") in by_meaning
    assert not any(text == "miley cyrus" for text, _ in by_meaning)  # a span named exactly is the index's alone
    assert {m for m in index.mentions(question)} <= set(vectors.mentions(question))
    assert vectors.resolve("m.song") == [("m.song", "Song")] and len(vectors) == len(index)


def test_label_vectors_are_kept_beside_the_store_and_encoded_again_for_other_names(encoder, tmp_path):
    index = NameIndex([("m.dodgers", "Los Angeles Dodgers"), ("m.song", "Song")])
    LabelVectors.build(index, encoder, directory=tmp_path, stamp="first")
    assert (tmp_path / VECTORS_FILE).is_file()
    encoder.texts.clear()
    loaded = LabelVectors.build(index, encoder, directory=tmp_path, stamp="first")
    assert encoder.texts == [] and loaded.vectors.shape == (2, 384)  # read back, nothing encoded
    LabelVectors.build(index, encoder, directory=tmp_path, stamp="second")
    assert sorted(encoder.texts) == ["los angeles dodgers", "song"]  # another store: encoded again
    (tmp_path / VECTORS_FILE).write_bytes(b"damaged")
    encoder.texts.clear()
    LabelVectors.build(index, encoder, directory=tmp_path, stamp="second")
    assert len(encoder.texts) == 2


def test_a_graph_gives_its_names_vectors_when_asked_and_keeps_them_beside_the_store(encoder, tmp_path):
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    fb = "http://rdf.freebase.com/ns/"
    name = ox.NamedNode(fb + "type.object.name")
    store.add_triples([ox.Triple(ox.NamedNode(fb + "m.0dodgers"), name, ox.Literal("Los Angeles Dodgers", language="en"))])
    kg = KnowledgeGraph(store, profile="freebase")
    assert isinstance(kg.name_index(), NameIndex)  # not asked: no model, no vectors
    vectors = kg.name_index(encode=encoder)
    assert isinstance(vectors, LabelVectors) and kg.name_index(encode=encoder) is vectors
    assert (tmp_path / "store" / VECTORS_FILE).is_file()
    assert "m.0dodgers" in {m.entity for m in vectors.mentions("who pitched for the dodgers")}


def test_a_graph_searched_for_its_names_finds_them_by_meaning_too(encoder, tmp_path):
    """Past the names an index holds, each question's searched names get vectors as they are found:
    the same mentions by meaning as a small graph's `LabelVectors`, no name encoded but those."""
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    fb = "http://rdf.freebase.com/ns/"
    name = ox.NamedNode(fb + "type.object.name")
    store.add_triples([ox.Triple(ox.NamedNode(fb + entity), name, ox.Literal(text, language="en"))
                       for entity, text in [("m.0dodgers", "Los Angeles Dodgers"), ("m.0miley", "Miley Cyrus"), ("m.0song", "Song")]])
    kg = KnowledgeGraph(store, profile="freebase", max_index_names=2)
    question = "when did the dodgers last win"
    assert isinstance(kg.name_index(), TextSearchIndex)
    assert "m.0dodgers" not in {m.entity for m in kg.name_index().mentions(question)}  # too few shared letters
    searched = kg.name_index(encode=encoder)
    assert kg.name_index(encode=encoder) is searched  # once per client, as a small graph's vectors
    encoder.texts.clear()
    assert ("dodgers", "m.0dodgers") in {(m.text, m.entity) for m in searched.mentions(question) if m.how == "embedding"}
    assert "los angeles dodgers" in encoder.texts and "miley cyrus" not in encoder.texts  # only the names its words found
    encoder.texts.clear()
    searched.mentions(question)
    assert "los angeles dodgers" not in encoder.texts  # the question's names kept with their vectors
    assert {m.entity for m in searched.mentions("which songs did miley cyrus sing") if m.how != "embedding"} >= {"m.0miley"}


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


def test_a_question_s_names_are_found_through_virtuoso_s_text_index(virtuoso_server, demo_store):
    """names='search': no whole-graph index, one bif:contains query per question; the same links
    as the whole index, on a question written as users write it."""
    searched = KnowledgeGraph(SparqlEndpoint(virtuoso_server.url, timeout=10), profile="freebase", names="search")
    whole = KnowledgeGraph(demo_store, profile="freebase", names="index")
    index = searched.name_index()
    assert isinstance(index, TextSearchIndex)
    def best(idx, question):
        return {(m.text, m.entity, m.how) for m in idx.mentions(question) if m.similarity >= 0.8}

    for question in ("who directed parasite", "what films did quentin tarantinos direct", "which movies star the usa"):
        assert best(index, question) == best(whole.name_index(), question) != set()
    before = searched.stats.snapshot()["queries"]
    index.mentions("who directed parasite")  # asked before: kept
    assert searched.stats.snapshot()["queries"] == before
    assert index.resolve("Parasite") == [("m.0dm159", "Parasite")] and index.resolve("m.0dm159") == [("m.0dm159", "Parasite")]


def test_a_text_search_reads_each_word_at_most_its_limit_and_ranks_names_holding_more_words_first(virtuoso_server):
    kg = KnowledgeGraph(SparqlEndpoint(virtuoso_server.url, timeout=10), profile="freebase", names="search")
    found = [name for _, name in kg.search_names(["park", "jurassic", "milius"], limit=50)]
    assert set(found[:2]) == {"Jurassic Park", "Jurassic Park (novel)"}  # both words first
    assert set(found[2:]) == {"Park Doo-man", "Park Yeon-kyo", "John Milius"}
    assert len(kg.search_names(["park"], limit=2)) == 2 and kg.search_names(["okja"], limit=2) == []


def test_an_endpoint_without_a_text_index_says_so(demo_store):
    from kgqa.kg.errors import KGError

    class NoTextIndex:  # an endpoint that refuses bif:contains, as a SPARQL store without it does
        def describe(self):
            return "http://127.0.0.1:1/sparql"

        def select(self, query):
            if "bif:contains" in query:
                raise KGError("HTTP 400: unknown function bif:contains")
            return demo_store.select(query)

    kg = KnowledgeGraph(NoTextIndex(), profile="freebase", names="search")
    with pytest.raises(KGError, match="cannot search names by their words"):
        kg.name_index().mentions("who directed parasite")


def test_search_words_are_the_question_s_tokens_and_prefixes_of_long_ones():
    assert search_words("What did the Jamaican sprinter's coach win?") == ["jamaican", "sprinter", "coach", "win", "jamai*", "sprin*"]
    assert search_words("who is it") == []


@pytest.mark.parametrize("words", [[], ["a'b"], ['x" OR "y'], ["ab*"], ["Houston"], ["x" * 41], [None]])
def test_text_search_words_are_refused_unless_plain(words):
    from kgqa.kg.errors import InvalidTermError
    from kgqa.kg.terms import text_pattern

    with pytest.raises(InvalidTermError):
        text_pattern(words)


def test_a_graph_with_too_many_names_to_hold_is_searched_instead(virtuoso_server):
    from kgqa.kg.graph import TooManyNames

    endpoint = SparqlEndpoint(virtuoso_server.url, timeout=10)
    auto = KnowledgeGraph(endpoint, profile="freebase", max_index_names=10)  # the demo KG has ~400 names
    assert isinstance(auto.name_index(), TextSearchIndex)
    assert any(m.name == "Bong Joon-ho" for m in auto.name_index().mentions("what did bong joon ho direct"))
    with pytest.raises(TooManyNames, match="more than 10 names"):
        KnowledgeGraph(endpoint, profile="freebase", names="index", max_index_names=10).name_index()
    with pytest.raises(ValueError, match="names must be one of"):
        KnowledgeGraph(endpoint, profile="freebase", names="bif")


def test_a_store_with_too_many_names_to_hold_searches_its_table_of_names_on_disk(tmp_path):
    from kgqa.data.demo import DEMO_KG
    from kgqa.kg.name_table import TABLE_FILE
    from kgqa.kg.names import TextSearchIndex

    store = EmbeddedStore.open(tmp_path / "store", create=True)
    store.load_file(DEMO_KG, format="ntriples")
    kg = KnowledgeGraph(store, profile="freebase", max_index_names=10)  # the demo has more: no index in memory
    index = kg.name_index()
    assert isinstance(index, TextSearchIndex)
    (parasite,) = kg.link(["Parasite"])["Parasite"]
    assert {m.entity for m in index.mentions("who directed parasite?")} >= {parasite}
    assert (tmp_path / "store" / TABLE_FILE).is_file()  # built by the first search, kept beside the store
    (amelie,) = kg.link(["Amélie"])["Amélie"]
    assert amelie in {m.entity for m in index.mentions("who played in amelie")}  # accents or none
    built = (tmp_path / "store" / TABLE_FILE).stat().st_mtime_ns
    again = KnowledgeGraph(store, profile="freebase", names="search")
    assert parasite in {m.entity for m in again.name_index().mentions("parasite director")}
    assert (tmp_path / "store" / TABLE_FILE).stat().st_mtime_ns == built  # the same store: the same table
    fb = "http://rdf.freebase.com/ns/"
    store.add_triples([ox.Triple(ox.NamedNode(fb + "m.0new"), ox.NamedNode(fb + "type.object.name"),
                                 ox.Literal("Okja", language="en"))])
    fresh = KnowledgeGraph(store, profile="freebase", names="search").name_index()
    assert "m.0new" in {m.entity for m in fresh.mentions("who made okja")}  # the store grew: built again


def test_the_table_of_names_on_disk_finds_a_word_by_its_first_letters(tmp_path):
    """`jamai*` finds Jamaica on the embedded store's table as Virtuoso's text index does, so "the
    jamaican flag" names it where the graph is searched for its names."""
    fb = "http://rdf.freebase.com/ns/"
    name = ox.NamedNode(fb + "type.object.name")
    store = EmbeddedStore.open(tmp_path / "store", create=True)
    store.add_triples([ox.Triple(ox.NamedNode(fb + entity), name, ox.Literal(label, language="en"))
                       for entity, label in [("m.5", "Jamaica"), ("m.9", "Jamai"), ("m.7", "Falkland Islands")]])
    kg = KnowledgeGraph(store, profile="freebase", names="search")
    assert {entity for entity, _ in kg.search_names(["jamai*"])} == {"m.5", "m.9"}
    assert {entity for entity, _ in kg.search_names(["jamai"])} == {"m.9"}  # the word itself, no prefix
    assert "m.5" in {m.entity for m in kg.name_index().mentions("what is on the jamaican flag?")}
