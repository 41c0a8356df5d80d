"""`KnowledgeGraph`: the batched graph interface the program talks to.

Each method answers a whole frontier with one SPARQL query, whatever its size, over any
backend that runs SELECT queries (`EmbeddedStore`, `SparqlEndpoint`). Fan-outs are capped
deterministically (ORDER BY + LIMIT, then per-key caps) and the capped keys are reported.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, Protocol, TypeVar

from kg import queries
from kg.profiles import KGProfile, get_profile
from kg.terms import XSD, Direction, Node, RdfTerm, check_text, normalize_label

K = TypeVar("K")
V = TypeVar("V")


class SelectBackend(Protocol):
    """Anything that runs a SPARQL SELECT and returns rows of `RdfTerm`s by variable name."""

    def select(self, query: str) -> list[dict[str, RdfTerm]]: ...

    def describe(self) -> str: ...


class Step(NamedTuple):
    """One edge to follow: from `entity` through `relation` in `direction`."""

    entity: str
    relation: str
    direction: Direction


@dataclass(frozen=True)
class Fanout(Generic[K, V]):
    """Results per key, plus the keys whose lists were cut at a limit."""

    items: Mapping[K, tuple[V, ...]]
    truncated: frozenset[K] = frozenset()

    def __getitem__(self, key: K) -> tuple[V, ...]:
        return self.items.get(key, ())

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass
class KGStats:
    """Queries run and seconds spent in the backend; shared by every user of one client."""

    queries: int = 0
    rows: int = 0
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, rows: int, seconds: float) -> None:
        with self._lock:
            self.queries += 1
            self.rows += rows
            self.seconds += seconds

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return {"queries": self.queries, "rows": self.rows, "seconds": self.seconds}


class KnowledgeGraph:
    """Batched access to one graph under one profile.

    >>> kg = KnowledgeGraph(EmbeddedStore.open("store/"), profile="freebase")
    >>> kg.relations(["m.0demo"], direction=Direction.OUT)["m.0demo"]
    """

    def __init__(
        self,
        backend: SelectBackend,
        *,
        profile: str | KGProfile = "generic",
        max_relations: int = 500,
        max_neighbours: int = 1_000,
    ) -> None:
        self.backend = backend
        self.profile = get_profile(profile)
        self.max_relations = max_relations
        self.max_neighbours = max_neighbours
        self.stats = KGStats()

    def __repr__(self) -> str:
        return f"KnowledgeGraph({self.backend.describe()}, profile={self.profile.name!r})"

    # DSPy deep-copies programs while compiling; every copy must share this one client.
    def __deepcopy__(self, memo: dict) -> KnowledgeGraph:
        return self

    def _select(self, query: str) -> list[dict[str, RdfTerm]]:
        start = time.perf_counter()
        rows = self.backend.select(query)
        self.stats.record(len(rows), time.perf_counter() - start)
        return rows

    def _iris(self, entities: Iterable[str]) -> dict[str, str]:
        """Validated IRIs by entity id, first-seen order, duplicates dropped."""
        return {e: self.profile.entity_iri(e) for e in dict.fromkeys(entities)}

    def _node(self, term: RdfTerm) -> Node | None:
        if term.kind == "literal":
            datatype = term.datatype
            if datatype and datatype.startswith(XSD):
                datatype = datatype[len(XSD) :]
            elif datatype and datatype.endswith("langString"):
                datatype = None
            return Node(term.value, literal=True, datatype=datatype)
        if term.kind == "iri":
            entity = self.profile.entity_id(term.value)
            return Node(entity) if entity is not None else None
        return None  # blank nodes cannot be named in a later query

    def relations(
        self, entities: Iterable[str], *, direction: Direction, limit: int | None = None
    ) -> Fanout[str, str]:
        """Relations leaving (OUT) or entering (IN) each entity, skipped ones removed, sorted."""
        iris = self._iris(entities)
        if not iris:
            return Fanout({})
        cap = limit or self.max_relations
        query = queries.relations(
            list(iris.values()),
            direction=Direction(direction),
            namespace=getattr(self.profile.relations, "namespace", ""),
            skip_prefixes=self.profile.skip_iri_prefixes(),
            skip_substrings=self.profile.skip_relation_substrings,
            limit=cap * len(iris) + 1,
        )
        rows = self._select(query)
        by_iri = {iri: e for e, iri in iris.items()}
        found: dict[str, list[str]] = defaultdict(list)
        for row in rows:
            entity, relation = by_iri.get(row["e"].value), self.profile.relation_id(row["r"].value)
            if entity is not None and relation is not None:
                found[entity].append(relation)
        return _capped(found, cap, hit_global_cap=len(rows) > cap * len(iris), keys=iris)

    def follow(self, steps: Iterable[Step | tuple[str, str, Direction]], *, limit: int | None = None) -> Fanout[Step, Node]:
        """Neighbours for many (entity, relation, direction) steps in one query."""
        unique = list(dict.fromkeys(Step(e, r, Direction(d)) for e, r, d in steps))
        if not unique:
            return Fanout({})
        cap = limit or self.max_neighbours
        entity_iris = self._iris(s.entity for s in unique)
        relation_iris = {r: self.profile.relation_iri(r) for r in dict.fromkeys(s.relation for s in unique)}
        query = queries.follow(
            [(entity_iris[s.entity], relation_iris[s.relation], s.direction) for s in unique],
            lang=self.profile.name_lang,
            limit=cap * len(unique) + 1,
        )
        rows = self._select(query)
        entity_by_iri = {iri: e for e, iri in entity_iris.items()}
        relation_by_iri = {iri: r for r, iri in relation_iris.items()}
        found: dict[Step, list[Node]] = defaultdict(list)
        for row in rows:
            node = self._node(row["n"])
            step = Step(entity_by_iri.get(row["e"].value), relation_by_iri.get(row["r"].value), Direction(row["d"].value))
            if node is not None and step.entity is not None and step.relation is not None:
                found[step].append(node)
        return _capped(found, cap, hit_global_cap=len(rows) > cap * len(unique), keys=unique)

    def neighbours(
        self, entities: Iterable[str], relation: str, *, direction: Direction, limit: int | None = None
    ) -> Fanout[str, Node]:
        """Neighbours of each entity through one relation and direction, in one query."""
        direction = Direction(direction)
        result = self.follow((Step(e, relation, direction) for e in entities), limit=limit)
        return Fanout(
            {step.entity: nodes for step, nodes in result.items.items()},
            frozenset(step.entity for step in result.truncated),
        )

    def names(self, entities: Iterable[str]) -> dict[str, str]:
        """A display name per entity; nameless entities (CVT nodes) are absent from the result."""
        iris = self._iris(entities)
        if not iris:
            return {}
        predicates = self.profile.name_predicates
        rows = self._select(queries.names(list(iris.values()), predicates=predicates, lang=self.profile.name_lang))
        by_iri = {iri: e for e, iri in iris.items()}
        best: dict[str, tuple[tuple, str]] = {}
        for row in rows:
            entity = by_iri.get(row["e"].value)
            if entity is None:
                continue
            name = row["name"]
            # Earlier predicates first, then a language-tagged name over a plain one, then alphabetical.
            rank = (predicates.index(row["p"].value), 0 if name.lang else 1, name.value)
            if entity not in best or rank < best[entity][0]:
                best[entity] = (rank, name.value)
        return {e: best[e][1] for e in iris if e in best}

    def link(self, labels: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Entity ids whose name equals each label after normalization (case, spacing, Unicode form)."""
        wanted = {label: normalize_label(check_text(label, what="label")) for label in dict.fromkeys(labels)}
        if not wanted:
            return {}
        forms = sorted({form for label in wanted for form in _surface_forms(label)})
        query = queries.link(forms, predicates=self.profile.name_predicates, lang=self.profile.name_lang)
        matches: dict[str, set[str]] = defaultdict(set)
        for row in self._select(query):
            entity = self.profile.entity_id(row["e"].value)
            if entity is not None:
                matches[normalize_label(row["label"].value)].add(entity)
        return {label: tuple(sorted(matches.get(norm, ()))) for label, norm in wanted.items()}


def _surface_forms(label: str) -> set[str]:
    """Spellings probed through the store's term index; matches are then checked by normal form."""
    collapsed = " ".join(label.split())
    return {label, collapsed, collapsed.lower(), collapsed.title(), collapsed.capitalize(), collapsed.upper()}


def _capped(found: Mapping[K, list[V]], cap: int, *, hit_global_cap: bool, keys: Iterable[K]) -> Fanout[K, V]:
    """Sort each list, cut it at `cap`, and report the cut keys.

    When the query's own LIMIT was reached, keys that stayed under their cap may have lost rows
    too, so they are reported as truncated as well: a report errs towards saying "incomplete".
    """
    items: dict[K, tuple[V, ...]] = {}
    truncated: set[K] = set()
    for key in keys:
        values = sorted(dict.fromkeys(found.get(key, ())), key=_sort_key)
        if len(values) > cap or hit_global_cap:
            truncated.add(key)
        if values:
            items[key] = tuple(values[:cap])
    return Fanout(items, frozenset(truncated))


def _sort_key(value: object) -> tuple:
    if isinstance(value, Node):
        return (value.literal, value.id, value.datatype or "")
    return (False, str(value), "")
