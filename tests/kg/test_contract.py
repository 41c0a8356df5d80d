"""One contract for every backend: the demo KG on pyoxigraph and on a real Virtuoso answer alike."""

from __future__ import annotations

import pytest

from kgqa.kg import Direction, Edge, InvalidTermError, KnowledgeGraph, Move, Node
from kgqa.kg.paths import answer_names, walk

OUT, IN = Direction.OUT, Direction.IN


def mid(kg: KnowledgeGraph, name: str) -> str:
    (entity,) = kg.link([name])[name]
    return entity


def test_link_finds_ids_by_normalized_label(demo_kg):
    found = demo_kg.link(["Parasite", "  parasite ", "UNITED STATES OF AMERICA", "Amélie", "no such film"])
    assert len(found["Parasite"]) == 1
    assert found["  parasite "] == found["Parasite"]
    assert len(found["UNITED STATES OF AMERICA"]) == 1
    assert len(found["Amélie"]) == 1
    assert found["no such film"] == ()


def test_where_names_are_searched_a_label_the_probe_misses_is_found_by_its_words_not_a_scan(demo_kg):
    class Asked:  # the backend, its queries kept
        def __init__(self, backend):
            self.backend, self.queries = backend, []

        def select(self, query):
            self.queries.append(query)
            return self.backend.select(query)

        def __getattr__(self, name):
            return getattr(self.backend, name)

    asked = Asked(demo_kg.backend)
    searched = KnowledgeGraph(asked, profile="freebase", names="search")
    labels = ["Parasite", "leonardo dicaprio", "SOUTH KOREAN WON", "the", "no such film"]  # two no probe spells
    found = searched.link(labels)
    assert found == demo_kg.link(labels) and len(found["leonardo dicaprio"]) == len(found["SOUTH KOREAN WON"]) == 1
    assert found["no such film"] == ()
    assert not any("LCASE" in query for query in asked.queries)  # no scan of every name
    auto = KnowledgeGraph(asked, profile="freebase", max_index_names=10)  # more names than it holds: searched too
    assert auto.link(["leonardo dicaprio"]) == {"leonardo dicaprio": found["leonardo dicaprio"]}
    assert not any("LCASE" in query for query in asked.queries)


def test_link_keeps_the_film_1941_apart_from_years(demo_kg):
    (film,) = demo_kg.link(["1941"])["1941"]
    assert demo_kg.names([film]) == {film: "1941"}
    released = demo_kg.neighbours([film], "film.film.initial_release_date", direction=OUT)[film]
    assert released == (Node("1979-12-14", literal=True, datatype="date"),)


def accesses(kg) -> int:
    """Queries, and lookups in the relation index beside an embedded store: one each a frontier."""
    return kg.stats.queries + kg.stats.lookups


def test_relations_both_directions_in_one_query_with_noise_skipped(demo_kg):
    parasite = mid(demo_kg, "Parasite")
    before = accesses(demo_kg)
    edges = demo_kg.relations([parasite])[parasite]
    assert accesses(demo_kg) - before == 1
    assert Edge("film.film.directed_by", OUT) in edges
    assert Edge("film.film.starring", OUT) in edges
    assert Edge("award.award_honor.honored_for", IN) in edges
    assert not any(e.relation.startswith(("type.object.", "common.")) for e in edges)
    assert list(edges) == sorted(edges)


def test_relations_one_direction(demo_kg):
    parasite = mid(demo_kg, "Parasite")
    incoming = demo_kg.relations([parasite], direction=IN)[parasite]
    assert incoming == (Edge("award.award_honor.honored_for", IN), Edge("film.director.film", IN))


def test_one_query_answers_a_whole_frontier(demo_kg):
    usa = mid(demo_kg, "United States of America")
    films = [n.id for n in demo_kg.neighbours([usa], "film.film.country", direction=IN)[usa]]
    assert len(films) >= 15
    before = accesses(demo_kg)
    relations = demo_kg.relations(films)
    directors = demo_kg.neighbours(films, "film.film.directed_by", direction=OUT)
    names = demo_kg.names(films)
    assert accesses(demo_kg) - before == 3
    assert set(relations) == set(films) and set(names) == set(films)
    assert all(len(directors[f]) >= 1 for f in films)


def test_neighbours_come_named_and_cvt_nodes_come_nameless(demo_kg):
    titanic = mid(demo_kg, "Titanic")
    performances = demo_kg.neighbours([titanic], "film.film.starring", direction=OUT)[titanic]
    assert len(performances) == 2
    assert all(not p.literal and p.name is None for p in performances)  # unnamed CVT nodes
    assert demo_kg.names([p.id for p in performances]) == {}
    actors = demo_kg.neighbours([p.id for p in performances], "film.performance.actor", direction=OUT)
    assert sorted(n.label for ns in actors.items.values() for n in ns) == ["Kate Winslet", "Leonardo DiCaprio"]


def test_follow_mixes_relations_and_directions_in_one_query(demo_kg):
    parasite, bong = mid(demo_kg, "Parasite"), mid(demo_kg, "Bong Joon-ho")
    before = demo_kg.stats.queries
    result = demo_kg.follow(
        [(parasite, "film.film.directed_by", OUT), (bong, "film.film.directed_by", IN), (parasite, "film.film.initial_release_date", OUT)]
    )
    assert demo_kg.stats.queries - before == 1
    assert [n.label for n in result[Move(parasite, "film.film.directed_by", OUT)]] == ["Bong Joon-ho"]
    assert sorted(n.label for n in result[Move(bong, "film.film.directed_by", IN)]) == ["Memories of Murder", "Parasite"]
    assert result[Move(parasite, "film.film.initial_release_date", OUT)] == (Node("2019-05-30", literal=True, datatype="date"),)


def test_follow_with_the_relations_around_keeps_literal_neighbours_and_names(demo_kg):
    """Names and the relations around come in one query: a dated literal among the neighbours
    keeps its value (Virtuoso 7.2 dropped it when they were two OPTIONALs side by side)."""
    parasite = mid(demo_kg, "Parasite")
    moves = [Move(parasite, "film.film.directed_by", OUT), Move(parasite, "film.film.initial_release_date", OUT)]
    result = demo_kg.follow(moves, relations=True)
    assert result[moves[1]] == (Node("2019-05-30", literal=True, datatype="date"),)
    (bong,) = result[moves[0]]
    assert bong.label == "Bong Joon-ho"
    assert Edge("film.film.directed_by", IN) in result.around[bong.id]


def test_year_literals_come_back_as_values(demo_kg):
    ang_lee = mid(demo_kg, "Ang Lee")
    nodes = walk(demo_kg, [ang_lee], [("award.award_winner.awards_won", OUT), ("award.award_honor.year", OUT)])
    assert nodes == [Node("2013", literal=True, datatype="gYear")]
    assert nodes[0].value == 2013


def test_limits_cut_deterministically_and_say_so(demo_kg):
    usa = mid(demo_kg, "United States of America")
    full = demo_kg.neighbours([usa], "film.film.country", direction=IN)
    assert usa not in full.truncated
    first = demo_kg.neighbours([usa], "film.film.country", direction=IN, limit=3)
    again = demo_kg.neighbours([usa], "film.film.country", direction=IN, limit=3)
    assert first.truncated == {usa}
    # the engine's own first four (one more than is kept tells the cut), sorted and cut at three
    assert first[usa] == again[usa] and len(first[usa]) == 3 and set(first[usa]) < set(full[usa])


def test_a_batch_that_overflows_the_row_cap_is_split_not_cut(demo_store):
    from kgqa.kg import KnowledgeGraph

    kg = KnowledgeGraph(demo_store, profile="freebase", max_rows=4)
    usa, france = (kg.link([n])[n][0] for n in ("United States of America", "France"))
    complete = KnowledgeGraph(demo_store, profile="freebase").neighbours([france], "people.person.nationality", direction=IN)
    assert len(complete[france]) == 2
    result = kg.neighbours([usa, france], "people.person.nationality", direction=IN, limit=2)
    # The first query hits its 4-row LIMIT; halves are asked again, so France loses nothing.
    assert kg.stats.queries > 1
    assert result.truncated == {usa}
    assert len(result[usa]) == 2
    assert result[france] == complete[france]


def test_unknown_entities_answer_empty_and_bad_ids_are_refused(demo_kg):
    assert demo_kg.relations(["m.0nothere"]).items == {}
    assert demo_kg.neighbours(["m.0nothere"], "film.film.directed_by", direction=OUT).items == {}
    assert demo_kg.names(["m.0nothere"]) == {}
    for bad in ["Parasite", "m.0dm157> ?p ?o } #", "", "m.0dm157\n"]:
        with pytest.raises(InvalidTermError):
            demo_kg.relations([bad])
    with pytest.raises(InvalidTermError):
        demo_kg.neighbours(["m.0dm157"], "film.film.directed_by> ?x", direction=OUT)


def test_gold_paths_of_the_demo_questions_reproduce_their_answers(demo_kg):
    from kgqa.data.demo import split_path
    from kgqa.data.jsonl import load_jsonl

    for ex in load_jsonl(split_path("test")):
        assert answer_names(demo_kg, walk(demo_kg, ex.topic_entities, ex.path)) == sorted(ex.answers), ex.question


def test_follow_brings_the_relations_around_what_it_reaches(demo_kg):
    titanic = mid(demo_kg, "Titanic")
    before, asked = accesses(demo_kg), demo_kg.stats.queries
    result = demo_kg.follow([(titanic, "film.film.directed_by", OUT), (titanic, "film.film.starring", OUT)], relations=True)
    assert demo_kg.stats.queries - asked == 1  # the store is asked once; an index beside it is looked up once more
    assert accesses(demo_kg) - before == (2 if demo_kg.stats.lookups else 1)
    (cameron,) = result[Move(titanic, "film.film.directed_by", OUT)]
    assert result.around[cameron.id] == demo_kg.relations([cameron.id])[cameron.id]
    for performance in result[Move(titanic, "film.film.starring", OUT)]:
        assert result.around[performance.id] == (
            Edge("film.film.starring", IN), Edge("film.performance.actor", OUT), Edge("film.performance.character", OUT)
        )


def test_a_split_batch_of_several_relations_keeps_its_shape(demo_store):
    """Halves of an overflowing batch may hold one relation each; they must still say which."""
    kg = KnowledgeGraph(demo_store, profile="freebase", max_rows=6)
    usa, france = (kg.link([n])[n][0] for n in ("United States of America", "France"))
    steps = [(usa, "film.film.country", IN), (france, "people.person.nationality", IN)]
    for relations in (False, True):
        result = kg.follow(steps, limit=3, relations=relations)
        assert Move(usa, "film.film.country", IN) in result.truncated
        assert len(result[Move(usa, "film.film.country", IN)]) == 3
        assert len(result[Move(france, "people.person.nationality", IN)]) == 2


def test_inverse_relations_are_read_from_facts_stated_both_ways_round(demo_kg):
    # the demo states film.film.directed_by and film.director.film both ways round for every film
    # (27 facts); film.film.written_by mirrors film.director.film too where a writer directed (22),
    # but director.film mirrors directed_by most, so only the true pair is taken
    kg = KnowledgeGraph(demo_kg.backend, profile="freebase", inverses="mirrored")
    before = accesses(kg)
    inverse = kg.inverse_relations()
    scanned = accesses(kg) - before
    assert scanned >= 2  # the relations that join two nodes, then what each mirrors (25 relations a query)
    assert inverse["film.film.directed_by"] == inverse["film.director.film"] == "film.director.film"
    assert "film.film.written_by" not in inverse
    assert kg.scoped().inverse_relations() is inverse and accesses(kg) - before == scanned  # found once per client
    # the Freebase profile asks the schema's reverse_property links, which the demo does not hold
    assert KnowledgeGraph(demo_kg.backend, profile="freebase").inverse_relations() == {}
    assert KnowledgeGraph(demo_kg.backend, profile="freebase", inverses="none").inverse_relations() == {}
