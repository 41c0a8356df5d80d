"""SPARQL text for the batched KG operations, shared by every backend.

Builders take IRIs and strings and write them only through `sparql_iri` / `sparql_string`.
Each function returns one query that answers a whole frontier through VALUES blocks.
Queries use full IRIs: pyoxigraph rejects prefixed names such as `ns:film.film.directed_by`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kg.terms import Direction, sparql_iri, sparql_string


def _values(variable: str, terms: Iterable[str]) -> str:
    return f"VALUES ?{variable} {{ {' '.join(terms)} }}"


def _lang_filter(variable: str, lang: str | None) -> str:
    if lang is None:
        return ""
    return (
        f'FILTER(!isLiteral(?{variable}) || lang(?{variable}) = "" '
        f"|| langMatches(lang(?{variable}), {sparql_string(lang)}))"
    )


def relations(
    entity_iris: Sequence[str],
    *,
    direction: Direction,
    namespace: str,
    skip_prefixes: Sequence[str],
    skip_substrings: Sequence[str],
    limit: int,
) -> str:
    """Distinct (entity, relation) pairs around the entities, one direction, noise filtered out."""
    pattern = "?e ?r ?x ." if direction is Direction.OUT else "?x ?r ?e ."
    filters = []
    if namespace:
        filters.append(f"STRSTARTS(STR(?r), {sparql_string(namespace)})")
    filters += [f"!STRSTARTS(STR(?r), {sparql_string(p)})" for p in skip_prefixes]
    filters += [f"!CONTAINS(STR(?r), {sparql_string(s)})" for s in skip_substrings]
    where = f"FILTER({' && '.join(filters)})" if filters else ""
    return (
        f"SELECT DISTINCT ?e ?r WHERE {{ {_values('e', map(sparql_iri, entity_iris))} {pattern} {where} }} "
        f"ORDER BY ?e ?r LIMIT {int(limit)}"
    )


def follow(
    steps: Sequence[tuple[str, str, Direction]],
    *,
    lang: str | None,
    limit: int,
) -> str:
    """Distinct (entity, relation, direction, neighbour) rows for (entity IRI, relation IRI, direction) steps."""
    blocks = []
    for direction in (Direction.OUT, Direction.IN):
        pairs = [f"({sparql_iri(e)} {sparql_iri(r)})" for e, r, d in steps if d is direction]
        if not pairs:
            continue
        pattern = "?e ?r ?n ." if direction is Direction.OUT else "?n ?r ?e ."
        blocks.append(
            f"{{ VALUES (?e ?r) {{ {' '.join(pairs)} }} {pattern} "
            f"BIND({sparql_string(direction.value)} AS ?d) {_lang_filter('n', lang)} }}"
        )
    return f"SELECT DISTINCT ?e ?r ?d ?n WHERE {{ {' UNION '.join(blocks)} }} ORDER BY ?e ?r ?d ?n LIMIT {int(limit)}"


def names(entity_iris: Sequence[str], *, predicates: Sequence[str], lang: str | None) -> str:
    """Every (entity, predicate, name) for the entities through the name predicates."""
    return (
        f"SELECT ?e ?p ?name WHERE {{ {_values('e', map(sparql_iri, entity_iris))} "
        f"{_values('p', map(sparql_iri, predicates))} ?e ?p ?name . {_lang_filter('name', lang)} }}"
    )


def link(label_forms: Sequence[str], *, predicates: Sequence[str], lang: str | None) -> str:
    """Entities whose name is one of the given surface forms, plain or language-tagged."""
    literals = [sparql_string(form) for form in label_forms]
    if lang is not None:
        literals += [sparql_string(form, lang=lang) for form in label_forms]
    return (
        f"SELECT DISTINCT ?label ?e WHERE {{ {_values('label', literals)} "
        f"{_values('p', map(sparql_iri, predicates))} ?e ?p ?label . }}"
    )
