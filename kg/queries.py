"""SPARQL text for the batched KG operations, shared by every backend.

Builders take IRIs and strings and write them only through `sparql_iri` / `sparql_string`.
Each function returns one query that answers a whole frontier through VALUES blocks.
Queries use full IRIs: pyoxigraph rejects prefixed names such as `ns:film.film.directed_by`.

Shapes matter for speed: one VALUES block per group joined to a triple pattern with constant
predicates. Two VALUES blocks in one group make pyoxigraph build their cross product first
(90 ms instead of 0.6 ms for 60 names on MetaQA), so alternatives are written as UNIONs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from kgqa.kg.errors import InvalidTermError
from kgqa.kg.terms import Direction, sparql_iri, sparql_string, text_pattern

# The relation index: one literal per entity listing the distinct relations around it, as
# `>IRI` (outgoing) and `<IRI` (incoming) tokens, kept in a named graph of its own (queries
# over the default graph never see it). Listing the relations of a frontier is then a lookup
# of one short literal per entity instead of a scan of every edge of it, with no aggregation:
# an actor with 300 films has two tokens, not 300 rows, and a hub with a million edges a handful.
# The embedded store keeps it up to date; a Virtuoso loaded by kgqa builds it after its load.
RELATION_INDEX = "urn:kgqa:relation-index"
RELATIONS_OF = "urn:kgqa:relations"
# Beside the literals, the index lists the relations that join two nodes (an IRI object), as
# `<RELATION_INDEX> <EDGE_RELATION> <relation>`: what the scan for mirrored relations starts from,
# without a DISTINCT over every fact (105 s at 10^7 triples in pyoxigraph).
EDGE_RELATION = "urn:kgqa:edge-relation"


def index_relations(*, drop: bool = True) -> str:
    """The SPARQL update that (re)builds the relation index from the default graph."""
    return " ;\n".join(index_updates(drop=drop))


def index_updates(*, drop: bool = True) -> list[str]:
    """The operations of `index_relations`, one at a time (Virtuoso's isql takes one a statement):
    the old index dropped, each entity's literal, the relations that join two nodes."""
    first = [f"DROP SILENT GRAPH <{RELATION_INDEX}>"] if drop else []
    return first + [f"""INSERT {{ GRAPH <{RELATION_INDEX}> {{ ?e <{RELATIONS_OF}> ?tokens }} }}
WHERE {{
  SELECT ?e (GROUP_CONCAT(DISTINCT ?token; separator=" ") AS ?tokens) WHERE {{
    {{ ?e ?r ?x . BIND(CONCAT(">", STR(?r)) AS ?token) }}
    UNION
    {{ ?x ?r ?e . FILTER(!isLiteral(?e)) BIND(CONCAT("<", STR(?r)) AS ?token) }}
  }} GROUP BY ?e
}}""", index_edge_relations()]


def index_edge_relations() -> str:
    """The update that lists, in the relation index, the relations seen joining two nodes."""
    return f"""INSERT {{ GRAPH <{RELATION_INDEX}> {{ <{RELATION_INDEX}> <{EDGE_RELATION}> ?r }} }}
WHERE {{ SELECT DISTINCT ?r WHERE {{ ?e ?r ?x . FILTER(isIRI(?x)) }} }}"""


def has_relation_index() -> str:
    """One row where the graph store keeps a relation index, none where it does not: a probe."""
    return f"SELECT ?e WHERE {{ GRAPH <{RELATION_INDEX}> {{ ?e <{RELATIONS_OF}> ?tokens }} }} LIMIT 1"


def _values(variable: str, terms: Iterable[str]) -> str:
    return f"VALUES ?{variable} {{ {' '.join(terms)} }}"


def _lang_filter(variable: str, lang: str | None) -> str:
    if lang is None:
        return ""
    return (
        f'FILTER(!isLiteral(?{variable}) || lang(?{variable}) = "" '
        f"|| langMatches(lang(?{variable}), {sparql_string(lang)}))"
    )


def _edge(direction: Direction, subject: str, predicate: str, other: str) -> str:
    return f"{subject} {predicate} {other} ." if direction is Direction.OUT else f"{other} {predicate} {subject} ."


def _named(subject: str, *, predicates: Sequence[str], lang: str | None, name: str = "?name") -> str:
    """`subject` has `name` through one of the name predicates. With several predicates, the one
    that matched is bound to ?p (a UNION, one branch per predicate)."""
    if len(predicates) == 1:
        return f"{subject} {sparql_iri(predicates[0])} {name} . {_lang_filter(name[1:], lang)}"
    blocks = [
        f"{{ {subject} {sparql_iri(p)} {name} . BIND({sparql_iri(p)} AS ?p) {_lang_filter(name[1:], lang)} }}"
        for p in predicates
    ]
    return " UNION ".join(blocks)


def _relation_filter(variable: str, skip_prefixes: Sequence[str], skip_substrings: Sequence[str]) -> str:
    filters = [f"!STRSTARTS(STR(?{variable}), {sparql_string(p)})" for p in skip_prefixes]
    filters += [f"!CONTAINS(STR(?{variable}), {sparql_string(s)})" for s in skip_substrings]
    return f"FILTER({' && '.join(filters)})" if filters else ""


def relations(
    entity_iris: Sequence[str],
    *,
    directions: Sequence[Direction],
    skip_prefixes: Sequence[str],
    skip_substrings: Sequence[str],
    limit: int,
) -> str:
    """One row per (entity, direction): the distinct relation IRIs joined by spaces (IRIs hold none).

    Aggregating in the engine matters: serializing result rows is the main cost on both
    backends (Virtuoso: about 40 us a row), and an entity has a handful of rows this way.
    """
    where = _relation_filter("r", skip_prefixes, skip_substrings)
    values = _values("e", map(sparql_iri, entity_iris))
    blocks = [
        f"{{ {values} {_edge(d, '?e', '?r', '?x')} BIND({sparql_string(d.value)} AS ?d) {where} }}" for d in directions
    ]
    return (
        f'SELECT ?e ?d (GROUP_CONCAT(DISTINCT STR(?r); separator=" ") AS ?rs) '
        f"WHERE {{ {' UNION '.join(blocks)} }} GROUP BY ?e ?d LIMIT {int(limit)}"
    )


def indexed_relations(entity_iris: Sequence[str], *, index: tuple[str, str], limit: int) -> str:
    """One row per entity with its relation-index literal (`>iri` / `<iri` tokens); see
    `kg.embedded.RELATION_INDEX`. Skipped relations and unwanted directions are left to the caller."""
    graph, predicate = map(sparql_iri, index)
    values = _values("e", map(sparql_iri, entity_iris))
    return f"SELECT ?e ?rs WHERE {{ {values} GRAPH {graph} {{ ?e {predicate} ?rs }} }} LIMIT {int(limit)}"


def follow(
    groups: Mapping[tuple[str, Direction], Sequence[str]],
    *,
    lang: str | None,
    name_predicates: Sequence[str],
    limit: int,
    kept: int | None = None,
    per_key: int | None = None,
    relations_of_neighbours: bool = False,
    skip_prefixes: Sequence[str] = (),
    skip_substrings: Sequence[str] = (),
    name_edges: bool | None = None,
    index: tuple[str, str] | None = None,
) -> str:
    """(entity, [relation, direction,] neighbour[, name][, rels]) rows; `groups` maps (relation IRI,
    direction) to the entity IRIs to follow it from.

    With one group, the relation and direction are constants and are not returned. With name
    predicates, each IRI neighbour comes with its names (OPTIONAL). With `relations_of_neighbours`,
    each IRI neighbour also comes with the relations around it, aggregated into ?rels as
    `>iri` (outgoing) and `<iri` (incoming) tokens: what the next depth of a walk asks first,
    fetched in this round trip. With a relation `index` (graph, predicate), ?rels is that
    entity's index literal, looked up rather than aggregated: no scan of its edges, no GROUP BY.

    The neighbours are cut before names and relations are joined to them, in the engine's own
    order (no sort): `kept` (entity, neighbour) pairs in all, or `per_key` for each (entity,
    relation, direction) in a subquery of its own. Either way a hub with a million edges costs
    what is kept. `limit` caps the rows of the whole answer.
    """
    single = len(groups) == 1 if name_edges is None else not name_edges
    keys = "?e ?n" if single else "?e ?r ?d ?n"
    if per_key is None and not single:
        blocks = _pair_blocks(groups, lang=lang)
    else:
        blocks = []
        for (relation, direction), entity_iris in groups.items():
            binds = "" if single else f"BIND({sparql_iri(relation)} AS ?r) BIND({sparql_string(direction.value)} AS ?d)"
            edge = f"{_edge(direction, '?e', sparql_iri(relation), '?n')} {_lang_filter('n', lang)}"
            if per_key is None:
                blocks.append(f"{_values('e', map(sparql_iri, entity_iris))} {edge}")
            else:
                blocks += [f"{{ SELECT ?e ?n WHERE {{ {_values('e', [sparql_iri(iri)])} {edge} }} LIMIT {int(per_key)} }} {binds}"
                           for iri in entity_iris]
    where = blocks[0] if len(blocks) == 1 else " UNION ".join(f"{{ {b} }}" for b in blocks)
    if kept is not None:
        where = f"{{ SELECT {keys} WHERE {{ {where} }} LIMIT {int(kept)} }}"
    names = f"OPTIONAL {{ {_named('?n', predicates=name_predicates, lang=lang)} }}" if name_predicates else ""
    named = " ?name" if len(name_predicates) == 1 else " ?p ?name" if name_predicates else ""
    if not relations_of_neighbours:
        return f"SELECT {keys}{named} WHERE {{ {where} {names} }} LIMIT {int(limit)}"
    # Every IRI neighbour has relations (at least the edge it was reached by), so its names are
    # asked inside the OPTIONAL that brings them: two OPTIONALs side by side after the subquery
    # lose a typed literal neighbour's ?n on Virtuoso 7.2 (an xsd:date comes back unbound).
    if index is not None:
        graph, predicate = map(sparql_iri, index)
        around = f"OPTIONAL {{ GRAPH {graph} {{ ?n {predicate} ?rels }} {names} }}"
        return f"SELECT {keys}{named} ?rels WHERE {{ {where} {around} }} LIMIT {int(limit)}"
    skip = _relation_filter("r2", skip_prefixes, skip_substrings)
    around = (
        f'OPTIONAL {{ {{ ?n ?r2 ?x2 . BIND(CONCAT(">", STR(?r2)) AS ?rel) {skip} }} '
        f'UNION {{ ?x2 ?r2 ?n . BIND(CONCAT("<", STR(?r2)) AS ?rel) {skip} }} {names} FILTER(isIRI(?n)) }}'
    )
    return (
        f'SELECT {keys}{named} (GROUP_CONCAT(DISTINCT ?rel; separator=" ") AS ?rels) '
        f"WHERE {{ {where} {around} }} GROUP BY {keys}{named} LIMIT {int(limit)}"
    )


def _pair_blocks(groups: Mapping[tuple[str, Direction], Sequence[str]], *, lang: str | None) -> list[str]:
    """One block a direction, its (entity, relation) pairs in one VALUES, binding ?r and ?d. A block a
    relation (a UNION of hundreds around a node with many relations) cost pyoxigraph 0.65 s to plan
    alone for 634 relations, the whole answer 1.05 s; this shape answers in 0.07 s."""
    pairs: dict[Direction, list[str]] = defaultdict(list)
    for (relation, direction), entity_iris in groups.items():
        pairs[direction] += [f"({sparql_iri(iri)} {sparql_iri(relation)})" for iri in entity_iris]
    return [f"VALUES (?e ?r) {{ {' '.join(rows)} }} {_edge(direction, '?e', '?r', '?n')} {_lang_filter('n', lang)} "
            f"BIND({sparql_string(direction.value)} AS ?d)" for direction, rows in pairs.items()]


def names(entity_iris: Sequence[str], *, predicates: Sequence[str], lang: str | None) -> str:
    """Every (entity, predicate, name) for the entities through the name predicates."""
    select = "?e ?name" if len(predicates) == 1 else "?e ?p ?name"
    return (
        f"SELECT {select} WHERE {{ {_values('e', map(sparql_iri, entity_iris))} "
        f"{_named('?e', predicates=predicates, lang=lang)} }}"
    )


def all_names(*, predicates: Sequence[str], lang: str | None, limit: int) -> str:
    """Every (entity, name) through the name and alias predicates."""
    return f"SELECT ?e ?name WHERE {{ {_named('?e', predicates=predicates, lang=lang)} FILTER(isIRI(?e)) }} LIMIT {int(limit)}"


def has_more_names(*, predicates: Sequence[str], lang: str | None, than: int) -> str:
    """One row when the graph has more than `than` (entity, name) pairs, else none: a probe."""
    return f"SELECT ?e WHERE {{ {_named('?e', predicates=predicates, lang=lang)} FILTER(isIRI(?e)) }} OFFSET {int(than)} LIMIT 1"


def names_containing(words: Sequence[str], *, predicates: Sequence[str], lang: str | None, limit: int) -> str:
    """(entity, name) whose name or alias contains one of `words`, through the endpoint's free-text
    index (Virtuoso's `bif:contains`), best first: by the text scores of the words each holds, summed.
    Each word is its own search of at most `limit` names, read in the index's order, unranked: a word
    in a million names costs what `limit` of them do, and Virtuoso, asked for many words and prefixes
    in one pattern (`"gover*" OR "juris*" OR ...`), joined every name to the pattern (over a minute on
    10^7 triples; 0.03 s as a search a word). `?e` may be a blank node: the caller keeps IRIs (a
    `FILTER(isIRI(?e))` here turns Virtuoso's plan into a scan of every name: 18 s for `"langu*"`)."""
    if not words:
        raise InvalidTermError("a text search needs at least one word")
    blocks = " UNION ".join(
        f"{{ SELECT ?e ?name ?relevance WHERE {{ ?e {sparql_iri(p)} ?name . ?name bif:contains {text_pattern([word])} "
        f"OPTION (score ?relevance) . {_lang_filter('name', lang)} }} LIMIT {int(limit)} }}"
        for word in dict.fromkeys(words) for p in predicates
    )
    return f"SELECT ?e ?name (SUM(?relevance) AS ?score) WHERE {{ {blocks} }} GROUP BY ?e ?name ORDER BY DESC(?score) LIMIT {int(limit)}"


def link(label_forms: Sequence[str], *, predicates: Sequence[str], lang: str | None) -> str:
    """Entities whose name is one of the given surface forms, plain or language-tagged."""
    literals = [sparql_string(form) for form in label_forms]
    if lang is not None:
        literals += [sparql_string(form, lang=lang) for form in label_forms]
    values = _values("label", literals)
    union = " UNION ".join(f"{{ {values} ?e {sparql_iri(p)} ?label . }}" for p in predicates)
    return f"SELECT DISTINCT ?label ?e WHERE {{ {union} }}"


def link_scan(normalized_labels: Sequence[str], *, predicates: Sequence[str]) -> str:
    """Entities whose lower-cased name is one of the (lower-case) labels: a scan, not an index probe."""
    wanted = ", ".join(sparql_string(label) for label in normalized_labels)
    union = " UNION ".join(f"{{ ?e {sparql_iri(p)} ?label . }}" for p in predicates)
    return f"SELECT DISTINCT ?label ?e WHERE {{ {union} FILTER(isLiteral(?label) && LCASE(STR(?label)) IN ({wanted})) }}"


def edge_relations(*, skip_prefixes: Sequence[str], skip_substrings: Sequence[str], limit: int,
                   index: tuple[str, str] | None = None) -> str:
    """The distinct relations that join two nodes (an IRI object): those that can mirror one another.
    With a relation `index` (graph, predicate), the list it keeps (`EDGE_RELATION`), else a scan of every fact."""
    where = _relation_filter("p", skip_prefixes, skip_substrings)
    if index is not None:
        graph = sparql_iri(index[0])
        return f"SELECT ?p WHERE {{ GRAPH {graph} {{ {graph} {sparql_iri(EDGE_RELATION)} ?p }} {where} }} LIMIT {int(limit)}"
    return f"SELECT DISTINCT ?p WHERE {{ ?s ?p ?o . FILTER(isIRI(?o)) {where} }} LIMIT {int(limit)}"


def mirrored_relations(relation_iris: Sequence[str], *, skip_prefixes: Sequence[str], skip_substrings: Sequence[str],
                       per_relation: int) -> str:
    """For each relation p, of its first `per_relation` facts between two nodes (`?s p ?o`), how
    many the graph also states the other way round, by which relation q (`?o q ?s`): rows
    (?p ?q ?n). Where a graph keeps a relation and its inverse (film.film.directed_by,
    film.director.film), most facts of one are facts of the other. A relation is read only
    `per_relation` facts deep, so a relation of millions of facts costs what a small one does; a
    relation with fewer facts is counted whole."""
    where = _relation_filter("q", skip_prefixes, skip_substrings)
    blocks = []
    for iri in map(sparql_iri, relation_iris):
        facts = f"SELECT ?s ?o WHERE {{ ?s {iri} ?o . FILTER(isIRI(?o)) }} LIMIT {int(per_relation)}"
        counted = f"SELECT ?q (COUNT(*) AS ?n) WHERE {{ {{ {facts} }} ?o ?q ?s . FILTER(?q != {iri}) {where} }} GROUP BY ?q"
        blocks.append(f"{{ {{ {counted} }} BIND({iri} AS ?p) }}")
    return f"SELECT ?p ?q ?n WHERE {{ {' UNION '.join(blocks)} }}"


def reverse_properties(*, predicate: str, limit: int) -> str:
    """The pairs a schema declares inverse (Freebase's `type.property.reverse_property`)."""
    return f"SELECT ?p ?q WHERE {{ ?p {sparql_iri(predicate)} ?q . FILTER(isIRI(?q)) }} LIMIT {int(limit)}"
