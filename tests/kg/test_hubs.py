"""A hub costs what is kept: a hop from an entity with tens of thousands of edges reads its capped
neighbours (two queries for its frontier, none sorted), on every backend, and the other moves of
its frontier lose nothing."""

from __future__ import annotations

import pytest

from kgqa.kg import Direction, Edge, EmbeddedStore, KnowledgeGraph, Move, Node, SparqlEndpoint, virtuoso
from kgqa.kg.graph import FRONTIER_CAPS, MOVES_PER_QUERY, Fanout

NS = "http://rdf.freebase.com/ns/"
EDGES = 20_000  # films of the hub country
CAP = 5


def hub_ntriples() -> str:
    lines = []
    for n in range(EDGES):
        film = f"<{NS}m.0f{n}>"
        lines.append(f"{film} <{NS}film.film.country> <{NS}m.0hub> .")
        lines.append(f'{film} <{NS}type.object.name> "Film {n}"@en .')
    for n in range(2):  # a small country beside the hub
        lines.append(f"<{NS}m.0s{n}> <{NS}film.film.country> <{NS}m.0small> .")
        lines.append(f'<{NS}m.0s{n}> <{NS}type.object.name> "Small film {n}"@en .')
    lines += [f'<{NS}m.0hub> <{NS}type.object.name> "Hubland"@en .', f'<{NS}m.0small> <{NS}type.object.name> "Smallland"@en .']
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def hub_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("hub") / "hub.nt"
    path.write_text(hub_ntriples(), encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=["embedded", "virtuoso"])
def hub_kg(request, hub_file, tmp_path_factory):
    if request.param == "embedded":
        store = EmbeddedStore()
        store.load_file(hub_file, format="ntriples")
        yield KnowledgeGraph(store, profile="freebase")
        return
    request.getfixturevalue("virtuoso_installed")
    server = virtuoso.LocalVirtuoso.start(tmp_path_factory.mktemp("virtuoso-hub"), [hub_file])
    try:
        yield KnowledgeGraph(SparqlEndpoint(server.url, timeout=10), profile="freebase")
    finally:
        server.stop()


@pytest.mark.parametrize("relations", [False, True])
def test_a_frontier_with_a_hub_reads_the_hub_s_capped_neighbours_only(hub_kg, relations):
    kg = hub_kg.scoped()
    hub = Move("m.0hub", "film.film.country", Direction.IN)
    small = Move("m.0small", "film.film.country", Direction.IN)
    result = kg.follow([hub, small], limit=CAP, relations=relations)
    # the frontier's cut (2 x CAP + 1 pairs), then each move capped on its own (CAP + 1, and 2):
    # one more than is kept tells the cut, and none of the hub's other 19,994 edges is read
    assert kg.stats.queries == 2
    assert kg.stats.rows <= (2 * CAP + 1) + (CAP + 1 + 2)
    assert result.truncated == {hub}
    assert len(result[hub]) == CAP and all(node.name.startswith("Film ") for node in result[hub])
    assert sorted(node.name for node in result[small]) == ["Small film 0", "Small film 1"]
    again = hub_kg.scoped().follow([hub, small], limit=CAP, relations=relations)
    assert again[hub] == result[hub]  # the same cut each time


def test_a_hub_s_capped_neighbours_come_without_their_relations_which_are_asked_for_those_gone_on_from(hub_kg):
    kg = KnowledgeGraph(hub_kg.backend, profile="freebase")  # a client that has met no hub yet
    hub = Move("m.0hub", "film.film.country", Direction.IN)
    small = Move("m.0small", "film.film.country", Direction.IN)
    result = kg.scoped().follow([hub, small], limit=CAP, relations=True)
    assert len(result[hub]) == CAP and len(result[small]) == 2 and result.around == {}  # both asked capped: no relations
    film = result[hub][0].id
    assert kg.relations([film])[film] == (Edge("film.film.country", Direction.OUT),)
    later = kg.scoped().follow([hub, small], limit=CAP, relations=True)  # the hub's move capped at once, the other asked whole
    assert later.items == result.items and set(later.around) == {"m.0s0", "m.0s1"}


def test_a_frontier_of_many_moves_with_a_hub_reads_at_most_two_caps_before_the_hub_is_found(hub_kg):
    kg = KnowledgeGraph(hub_kg.backend, profile="freebase").scoped()  # a client that has met no hub yet
    hub = Move("m.0hub", "film.film.country", Direction.IN)
    films = [Move(f"m.0f{n}", "film.film.country", Direction.OUT) for n in range(6)]
    result = kg.follow([hub, *films], limit=CAP, relations=True)
    # the frontier's one query keeps FRONTIER_CAPS caps of pairs, not a cap a move (7 x CAP), then
    # each move is asked capped: the hub's CAP + 1 and a neighbour for each film
    assert kg.stats.queries == 2
    assert kg.stats.rows <= (FRONTIER_CAPS * CAP + 1) + (CAP + 1 + len(films))
    assert len(result[hub]) == CAP and result.truncated == {hub}
    assert all(result[f] == (Node("m.0hub", name="Hubland"),) for f in films)


def test_a_frontier_of_many_small_moves_past_two_caps_loses_nothing(hub_kg):
    kg = KnowledgeGraph(hub_kg.backend, profile="freebase").scoped()
    films = [Move(f"m.0f{n}", "film.film.country", Direction.OUT) for n in range(FRONTIER_CAPS * CAP + 3)]
    result = kg.follow(films, limit=CAP)  # more pairs than two caps, none a hub's: asked again each capped
    assert all(result[f] == (Node("m.0hub", name="Hubland"),) for f in films) and result.truncated == frozenset()
    assert kg.stats.queries == 2


def test_the_default_cap_keeps_a_thousand_of_the_hub(hub_kg):
    kg = hub_kg.scoped()
    result = kg.neighbours(["m.0hub"], "film.film.country", direction=Direction.IN)
    assert len(result["m.0hub"]) == kg.max_neighbours == 1_000 and result.truncated == {"m.0hub"}
    assert kg.stats.queries == 1 and kg.stats.rows == 1_001


def test_a_move_found_cut_once_is_asked_capped_at_once(hub_kg):
    kg = KnowledgeGraph(hub_kg.backend, profile="freebase")  # a client that has met no hub yet
    hub = Move("m.0hub", "film.film.country", Direction.IN)
    small = Move("m.0small", "film.film.country", Direction.IN)
    first = kg.scoped()
    found = first.follow([hub, small], limit=CAP)
    assert first.stats.queries == 2 and first.stats.rows > 2 + CAP + 1  # the frontier cut, then asked capped
    later = kg.scoped()
    assert later.follow([small, hub], limit=CAP) == found
    # the hub's move straight to its capped subquery, the small one's in a query of its own: no row read twice
    assert later.stats.queries == 2 and later.stats.rows == 2 + CAP + 1


def test_a_frontier_of_thousands_of_moves_beside_a_hub_is_asked_in_parts(hub_kg):
    kg = KnowledgeGraph(hub_kg.backend, profile="freebase")  # a client that has met no hub yet
    many = EDGES if isinstance(kg.backend, EmbeddedStore) else 4 * MOVES_PER_QUERY  # Virtuoso: 50 ms a query
    films = [Move(f"m.0f{n}", "film.film.country", Direction.OUT) for n in range(many)]
    hub = Move("m.0hub", "film.film.country", Direction.IN)
    result = kg.follow([*films, hub], limit=CAP)
    # the frontier's cut, then each move capped on its own, MOVES_PER_QUERY moves a query (one
    # query of 20,001 subqueries overflowed pyoxigraph's parser: a segfault; Virtuoso refused 500)
    assert kg.stats.queries == 1 + -(-(many + 1) // MOVES_PER_QUERY)
    assert all(result[f] == (Node("m.0hub", name="Hubland"),) for f in films[:: many // 50])
    assert len(result[hub]) == CAP and result.truncated == {hub}


def test_a_question_reads_each_move_once(hub_kg):
    kg = hub_kg.scoped()  # one question's view
    hub = Move("m.0hub", "film.film.country", Direction.IN)
    small = Move("m.0small", "film.film.country", Direction.IN)
    first = kg.follow([hub, small], limit=CAP)
    asked = kg.stats.queries
    assert kg.follow([small, hub], limit=CAP) == first and kg.stats.queries == asked  # nothing read again
    assert kg.follow([small], limit=CAP + 1).items == {small: first[small]} and kg.stats.queries == asked + 1  # another cap
    around = kg.follow([small], limit=CAP, relations=True)  # the relations around its films were not asked: read now
    assert kg.stats.queries == asked + 2 and around.around["m.0s0"] == (Edge("film.film.country", Direction.OUT),)
    assert kg.follow([small], limit=CAP) == Fanout({small: first[small]}) and kg.stats.queries == asked + 2
    client = KnowledgeGraph(hub_kg.backend, profile="freebase")  # no question's view: nothing kept
    client.follow([small], limit=CAP)
    client.follow([small], limit=CAP)
    assert client.stats.queries == 2
