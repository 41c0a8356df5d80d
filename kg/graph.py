"""`KnowledgeGraph`: the batched graph interface the program talks to.

Each method answers a whole frontier with one SPARQL query, whatever its size, over any
backend that runs SELECT queries (`EmbeddedStore`, `SparqlEndpoint`). Fan-outs are capped in
the query, in the engine's own order (the same store cuts the same way each time; a hub costs what
is kept, not a sort of its edges), and the capped keys are reported.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, Protocol, TypeVar

from kgqa.kg import queries
from kgqa.kg.errors import InvalidTermError, KGError
from kgqa.kg.names import STOPWORDS, LabelVectors, NameIndex, TextSearchIndex, tokens
from kgqa.kg.profiles import KGProfile, get_profile
from kgqa.kg.relation_table import RelationTable
from kgqa.kg.terms import MAX_TEXT_WORD, XSD, Direction, Node, RdfTerm, check_text, normalize_label

K = TypeVar("K")
_INDEX_LOCK = threading.Lock()
V = TypeVar("V")
Row = dict[str, RdfTerm]


class SelectBackend(Protocol):
    """Anything that runs a SPARQL SELECT and returns rows of `RdfTerm`s by variable name."""

    def select(self, query: str) -> list[Row]: ...

    def describe(self) -> str: ...


class Edge(NamedTuple):
    """A relation as seen from an entity: walked OUT (entity -r-> x) or IN (x -r-> entity)."""

    relation: str
    direction: Direction

    @property
    def reversed(self) -> Edge:
        """The same relation walked the other way: back to where this edge came from."""
        return Edge(self.relation, self.direction.reverse)


class Move(NamedTuple):
    """One edge to follow: from `entity` through `relation` in `direction`."""

    entity: str
    relation: str
    direction: Direction


@dataclass(frozen=True)
class Fanout(Generic[K, V]):
    """Results per key, plus the keys whose lists were cut at a limit."""

    items: Mapping[K, tuple[V, ...]]
    truncated: frozenset[K] = frozenset()
    # From `follow(..., relations=True)`: the relations around the entities reached, by entity id;
    # not those reached by a hub's moves (cut at the cap): a caller asks `relations` for the ones it goes on from.
    around: Mapping[str, tuple[Edge, ...]] = field(default_factory=dict)

    def __getitem__(self, key: K) -> tuple[V, ...]:
        return self.items.get(key, ())

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass(frozen=True)
class _Followed:
    """What one move brought: its neighbours, whether they were cut, and (when asked) the relations around each."""

    nodes: tuple[Node, ...]
    cut: bool
    around: Mapping[str, tuple[Edge, ...]] | None


@dataclass
class KGStats:
    """Queries run, their rows, and seconds spent in the backend (lookups in the relation index beside an
    embedded store counted apart, their seconds with the queries'); shared by every user of one client."""

    queries: int = 0
    rows: int = 0
    seconds: float = 0.0
    lookups: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, rows: int, seconds: float) -> None:
        """A query's rows and seconds."""
        with self._lock:
            self.queries += 1
            self.rows += rows
            self.seconds += seconds

    def record_lookup(self, seconds: float) -> None:
        """A lookup in the relation index beside the store: KG time, but no query and none of its rows."""
        with self._lock:
            self.lookups += 1
            self.seconds += seconds

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return {"queries": self.queries, "rows": self.rows, "seconds": self.seconds, "lookups": self.lookups}


NAME_LOOKUPS = ("auto", "index", "search")  # how the linker finds names: see KnowledgeGraph.name_index
INVERSE_LOOKUPS = ("auto", "schema", "mirrored", "none")  # how inverse relations are found: see KnowledgeGraph.inverse_relations
MIN_MIRRORED_FACTS = 3  # facts a pair of relations must state both ways round to be taken for inverses
MIRRORS_FILE = "mirrored-relations.json"  # the pairs found by the scan, kept beside an on-disk store
# facts of each relation read to find the relation it mirrors: every fact of a relation that has
# fewer, so a small graph is counted whole and a relation of millions costs what one of 10,000 does
MIRRORED_SAMPLE = 10_000
MIRRORED_PER_QUERY = 25  # relations counted in one query (a UNION branch each)
# moves asked in one query where each is capped in a subquery of its own (a UNION branch each). A
# query's cost grows faster than its branches: 5,000 moves took 0.7 s in queries of 10 to 25 in
# pyoxigraph, 4.9 s in queries of 200; 3,000 took 6.1 s in queries of 25 in Virtuoso, which refuses
# 500 a query. pyoxigraph's parser overflowed an 8 MB stack near 8,000 (a segfault).
MOVES_PER_QUERY = 25
# pairs a frontier's one query keeps, in caps: past two caps a hub is likely among its moves, and
# they are asked again each capped (`_each_capped`). Keeping a cap a move read 10,000 pairs with their
# names and relations before a hub's frontier was found cut (4.5 s at 5 x 10^7 triples, embedded).
FRONTIER_CAPS = 2
HUB_MOVES = 100_000  # moves a client remembers as a hub's (cut at the cap), the oldest forgotten first
MAX_VECTOR_NAMES = 300_000  # distinct names given sentence vectors (384 floats each: about 460 MB at most)


class TooManyNames(KGError):
    """The graph has more names than an in-memory index holds."""


class KnowledgeGraph:
    """Batched access to one graph under one profile.

    >>> kg = KnowledgeGraph(EmbeddedStore.open("store/"), profile="freebase")
    >>> kg.relations(["m.0dm157"])["m.0dm157"]
    (Edge(relation='film.film.country', direction=<Direction.OUT: 'out'>), ...)
    """

    def __init__(
        self,
        backend: SelectBackend,
        *,
        profile: str | KGProfile = "generic",
        max_relations: int = 500,
        max_neighbours: int = 1_000,
        max_rows: int = 10_000,
        scan_labels: bool = True,
        names: str = "auto",
        max_index_names: int = MAX_VECTOR_NAMES,
        inverses: str = "auto",
    ) -> None:
        if names not in NAME_LOOKUPS:
            raise ValueError(f"names must be one of {', '.join(NAME_LOOKUPS)}, got {names!r}")
        if inverses not in INVERSE_LOOKUPS:
            raise ValueError(f"inverses must be one of {', '.join(INVERSE_LOOKUPS)}, got {inverses!r}")
        self.backend = backend
        self.names_lookup = names
        self.max_index_names = max_index_names
        self.profile = get_profile(profile)
        # Virtuoso refuses sorted LIMITs above 10,000 rows by default (SR353). A per-key cap below
        # the row cap lets a one-key query always tell a cut list from a whole one.
        self.max_rows = max_rows
        self.max_relations = min(max_relations, max_rows - 1)
        self.max_neighbours = min(max_neighbours, max_rows - 1)
        self.scan_labels = scan_labels
        self.stats = KGStats()
        self._name_index: dict[str, NameIndex | LabelVectors | TextSearchIndex | bool] = {}  # built once, shared by every scoped view
        self.inverses_lookup = self.profile.inverses if inverses == "auto" else inverses
        if self.inverses_lookup == "schema" and not self.profile.reverse_property:
            raise ValueError(f"inverses='schema' needs a profile that names its reverse-property predicate; {self.profile.name!r} does not")
        self._inverses: dict[str, dict[str, str]] = {}  # found once, shared by every scoped view
        self._followed: dict[tuple[Move, int, bool], _Followed] | None = None  # a question's moves (`scoped`)
        self._hub_moves: dict[Move, None] = {}  # moves found cut at the cap once: asked capped at once (oldest dropped)

    def __repr__(self) -> str:
        return f"KnowledgeGraph({self.backend.describe()}, profile={self.profile.name!r})"

    # DSPy deep-copies programs while compiling; every copy must share this one client.
    def __deepcopy__(self, memo: dict) -> KnowledgeGraph:
        return self

    def scoped(self) -> KnowledgeGraph:
        """A view on the same backend and profile with its own query counter (one per question)."""
        view = copy.copy(self)
        view.stats = KGStats()
        view._followed = {}
        return view

    # -- the interface ---------------------------------------------------------------------

    def relations(
        self, entities: Iterable[str], *, direction: Direction | str | None = None, limit: int | None = None
    ) -> Fanout[str, Edge]:
        """Relations around each entity (OUT, IN, or both when `direction` is None), skipped ones removed."""
        iris = self._iris(entities)
        if not iris:
            return Fanout({})
        directions = (Direction.OUT, Direction.IN) if direction is None else (Direction(direction),)
        cap = self._cap(limit, self.max_relations)

        def query(batch: list[str], row_limit: int) -> str:
            return queries.relations(
                batch,
                directions=directions,
                skip_prefixes=self.profile.skip_iri_prefixes(),
                skip_substrings=self.profile.skip_relation_substrings,
                limit=row_limit,
            )

        entity_of = {iri: e for e, iri in iris.items()}
        found: dict[str, list[Edge]] = defaultdict(list)
        indexed = self._indexed_relations(list(iris.values()))
        if indexed is not None:  # one literal per entity: filter directions (and skipped relations) here
            for iri, tokens in indexed.items():
                entity = entity_of.get(iri)
                if entity is not None:
                    found[entity] += [e for e in self._edges(tokens) if e.direction in directions]
            return _capped(found, cap * len(directions), keys=iris, cut=set())
        rows = self._batched_rows(list(iris.values()), len(directions), query)
        for row in rows:
            entity, direction_of_row = entity_of.get(row["e"].value), Direction(row["d"].value)
            for iri in row["rs"].value.split():
                relation = self.profile.relation_id(iri)
                if entity is not None and relation is not None:
                    found[entity].append(Edge(relation, direction_of_row))
        return _capped(found, cap * len(directions), keys=iris, cut=set())

    def fill_relations(self, known: dict[str, tuple[Edge, ...]], entities: Iterable[str]) -> dict[str, tuple[Edge, ...]]:
        """`known` (updated in place, and returned) with the relations of the `entities` it lacks, asked
        in one query: those a walk goes on from that came without them (reached by a hub's capped
        moves, which bring no relations, or brought back by reflection or an extension)."""
        missing = [e for e in dict.fromkeys(entities) if e not in known]
        if missing:
            known.update(self.relations(missing).items)
        return known

    def follow(
        self,
        steps: Iterable[Move | tuple[str, str, Direction | str]],
        *,
        limit: int | None = None,
        names: bool = True,
        relations: bool = False,
    ) -> Fanout[Move, Node]:
        """Neighbours for many (entity, relation, direction) steps in one query.

        With `names`, entity nodes come back named (`Node.name`) by the same query; nameless
        ones (Freebase CVT nodes) have `name=None`. With `relations`, the same query also
        brings the relations around every entity reached (`Fanout.around`), which is what
        the next depth of a walk asks for: a depth then costs one round trip, not two. Not
        around those a hub's moves reach (a move with more than `limit` neighbours, asked in
        capped subqueries): half of such a query's time went to the relations of a thousand
        neighbours a move, of which a walk goes on from a few (ask `relations` for those).

        A question's view (`scoped`) keeps what each move brought, so a move it follows again
        (the walk's answers gathered after its hops) is read from there, not the graph.
        """
        unique = list(dict.fromkeys(Move(e, r, Direction(d)) for e, r, d in steps))
        if not unique:
            return Fanout({})
        cap = self._cap(limit, self.max_neighbours)
        if self._followed is None:
            return self._follow(unique, cap, names=names, relations=relations)
        known = {m: self._followed[m, cap, names] for m in unique if (m, cap, names) in self._followed}
        known = {m: kept for m, kept in known.items() if kept.around is not None or not relations}
        asked = [m for m in unique if m not in known]
        if asked:
            fresh = self._follow(asked, cap, names=names, relations=relations)
            for m in asked:
                around = {n.id: fresh.around[n.id] for n in fresh[m] if not n.literal and n.id in fresh.around} if relations else None
                known[m] = _Followed(fresh[m], m in fresh.truncated, around)
                self._followed[m, cap, names] = known[m]
        items = {m: known[m].nodes for m in unique if known[m].nodes}
        truncated = frozenset(m for m in unique if known[m].cut)
        around = {node: edges for m in unique for node, edges in (known[m].around or {}).items()} if relations else {}
        return Fanout(items, truncated, around)

    def _follow(self, unique: list[Move], cap: int, *, names: bool, relations: bool) -> Fanout[Move, Node]:
        entity_iris = self._iris(s.entity for s in unique)
        relation_iris = {r: self.profile.relation_iri(r) for r in dict.fromkeys(s.relation for s in unique)}
        from_ids = names and self.profile.names_are_ids
        name_predicates = self.profile.name_predicates if names and not from_ids else ()
        only = unique[0] if len({(s.relation, s.direction) for s in unique}) == 1 else None

        table = self._relation_table()  # beside the store: the reached entities' relations looked up after the query
        asked_capped: set[Move] = set()

        def query(batch: list[Move], *, kept: int | None = None, per_key: int | None = None) -> str:
            if per_key is not None:
                asked_capped.update(batch)  # a hub's capped moves come without their neighbours' relations
            with_relations = relations and per_key is None and table is None
            groups: dict[tuple[str, Direction], list[str]] = defaultdict(list)
            for s in batch:
                groups[relation_iris[s.relation], s.direction].append(entity_iris[s.entity])
            return queries.follow(
                groups,
                lang=self.profile.name_lang,
                name_predicates=name_predicates,
                limit=self.max_rows,
                kept=kept,
                per_key=per_key,
                relations_of_neighbours=with_relations,
                skip_prefixes=self.profile.skip_iri_prefixes(),
                skip_substrings=self.profile.skip_relation_substrings,
                name_edges=only is None,  # every part of a split batch answers in the whole batch's shape
                index=self._relation_index() if with_relations else None,
            )

        entity_of = {iri: e for e, iri in entity_iris.items()}
        relation_of = {iri: r for r, iri in relation_iris.items()}
        found: dict[Move, dict[Node, tuple]] = defaultdict(dict)
        around: dict[str, set[Edge]] = defaultdict(set)
        def move_of(row: Row) -> Move | None:
            """The move a row answers (None for a row of no move asked)."""
            if only is not None:  # one (relation, direction): the query returns neither
                step = Move(entity_of.get(row["e"].value), only.relation, only.direction)
            else:
                step = Move(entity_of.get(row["e"].value), relation_of.get(row["r"].value), Direction(row["d"].value))
            return step if step.entity is not None and step.relation is not None else None

        rows, cut = self._neighbour_rows(unique, cap, query, move_of)
        for row in rows:
            node, step = self._node(row["n"]), move_of(row)
            if node is None or step is None:
                continue
            best = found[step].get(node)
            rank = _name_rank(row, name_predicates)
            if best is None or rank < best:
                found[step][node] = rank
            if relations and not node.literal and "rels" in row:
                around[node.id].update(self._edges(row["rels"].value))
        if from_ids:
            named = {step: [n if n.literal else Node(n.id, name=n.id) for n in nodes] for step, nodes in found.items()}
        else:
            named = {step: [_with_name(node, rank) for node, rank in nodes.items()] for step, nodes in found.items()}
        result = _capped(named, cap, keys=unique, cut=cut)
        if relations:
            if table is not None:  # as the query would have joined them: not around the moves asked capped
                uncapped = {node.id for m, nodes in result.items.items() if m not in asked_capped for node in nodes if not node.literal}
                looked = (self._indexed_relations(list(self._iris(uncapped).values())) or {}) if uncapped else {}
                around = {self.profile.entity_id(iri): set(self._edges(tokens)) for iri, tokens in looked.items()}
            reached = {node.id for nodes in result.items.values() for node in nodes if not node.literal}
            capped = {e: tuple(sorted(around[e])[: self.max_relations * 2]) for e in reached if e in around}
            result = Fanout(result.items, result.truncated, capped)
        return result

    def neighbours(
        self,
        entities: Iterable[str],
        relation: str,
        *,
        direction: Direction | str,
        limit: int | None = None,
        names: bool = True,
    ) -> Fanout[str, Node]:
        """Neighbours of each entity through one relation and direction, in one query."""
        direction = Direction(direction)
        result = self.follow((Move(e, relation, direction) for e in entities), limit=limit, names=names)
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
        entity_of = {iri: e for e, iri in iris.items()}
        best: dict[str, tuple] = {}
        for row in rows:
            entity = entity_of.get(row["e"].value)
            rank = _name_rank(row, predicates)
            if entity is not None and (entity not in best or rank < best[entity]):
                best[entity] = rank
        return {e: best[e][-1] for e in iris if e in best}

    def link(self, labels: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Entity ids whose name equals each label after normalization (case, spacing, Unicode form).

        One query probes likely spellings through the store's term index; labels still unmatched
        (`scan_labels` on) are found by their words where the graph's names are searched, one text
        search a label (`search_names`: too many names to hold, as a full Freebase has), else by one
        case-insensitive scan of every name (2.5 s on Virtuoso at 10^7 triples).
        """
        wanted = {label: normalize_label(check_text(label, what="label")) for label in dict.fromkeys(labels)}
        if not wanted:
            return {}
        predicates, lang = self.profile.name_predicates, self.profile.name_lang
        forms = sorted({form for label in wanted for form in _surface_forms(label)})
        matches = self._linked(queries.link(forms, predicates=predicates, lang=lang))
        missing = sorted({norm for norm in wanted.values() if norm not in matches})
        if missing and self.scan_labels:
            matches.update(self._linked_by_words(missing) if self._names_searched() else
                           self._linked(queries.link_scan(missing, predicates=predicates)))
        return {label: tuple(sorted(matches.get(norm, ()))) for label, norm in wanted.items()}

    def _linked_by_words(self, labels: Iterable[str]) -> dict[str, set[str]]:
        """Each (normalized) label's entities among the names holding its words (`search_names`):
        a name that is the label holds every word of it, so the search of its rarest word finds it."""
        matches: dict[str, set[str]] = defaultdict(set)
        for label in labels:
            words = [w for w in tokens(label) if len(w) <= MAX_TEXT_WORD]
            for entity, name in self.search_names([w for w in words if w not in STOPWORDS] or words) if words else ():
                if normalize_label(name) == label:
                    matches[label].add(entity)
        return matches

    def _names_searched(self) -> bool:
        """Whether this graph's names are found through its text index, not held in memory (`name_index`)."""
        index = self._name_index.get("index")
        if index is not None:
            return isinstance(index, TextSearchIndex)
        if self.names_lookup != "auto":
            return self.names_lookup == "search"
        with _INDEX_LOCK:
            return self._too_many_names()

    def _too_many_names(self) -> bool:
        """Whether the graph has more than `max_index_names` names (one probe a client; the caller holds
        `_INDEX_LOCK`): asked first, so a full Freebase is not read 5 million names deep to find that out."""
        if "many" not in self._name_index:
            self._name_index["many"] = bool(self._select(queries.has_more_names(
                predicates=self._name_predicates(), lang=self.profile.name_lang, than=self.max_index_names)))
        return self._name_index["many"]

    def _name_predicates(self) -> tuple[str, ...]:
        """The profile's name and alias predicates, each once."""
        return tuple(dict.fromkeys(self.profile.name_predicates + self.profile.alias_predicates))

    def all_names(self, *, limit: int | None = None) -> list[tuple[str, str]]:
        """Every (entity, name or alias) of the graph, in one query: what a `NameIndex` is built from.
        A graph with more names than `limit` (default `max_index_names`; a full Freebase) is a
        `TooManyNames` KGError."""
        limit = self.max_index_names if limit is None else limit
        rows = self._select(queries.all_names(predicates=self._name_predicates(), lang=self.profile.name_lang, limit=limit + 1))
        if len(rows) > limit:
            raise TooManyNames(f"{self.backend.describe()} has more than {limit:,} names: too many to index in memory")
        found = []
        for row in rows:
            entity = self.profile.entity_id(row["e"].value)
            if entity is not None:
                found.append((entity, row["name"].value))
        return found

    def name_index(self, *, encode: Callable | None = None) -> NameIndex | LabelVectors | TextSearchIndex:
        """Where the linker finds the graph's names, once per client. `names="index"`: a `NameIndex`
        of every name, loaded from beside an on-disk store when it was built for the same triples,
        else built from `all_names` (and saved there). `names="search"`: a `TextSearchIndex` that asks
        the graph's text index per question (the endpoint's, or the embedded store's table of names
        on disk). `"auto"`: the index while the graph has at most `max_index_names` names (by default
        `MAX_VECTOR_NAMES`: as many as get vectors), else the search. With `encode` (texts -> unit
        sentence vectors), names are also found by meaning: a whole index of at most
        `MAX_VECTOR_NAMES` distinct names as `LabelVectors` (its vectors kept beside an on-disk store
        like the index), the search's names per question as they are found."""
        index = self._plain_name_index()
        if encode is None or (isinstance(index, NameIndex) and len(set(index._folded)) > MAX_VECTOR_NAMES):
            return index
        with _INDEX_LOCK:
            if "vectors" not in self._name_index:
                self._name_index["vectors"] = (index.with_vectors(encode) if isinstance(index, TextSearchIndex) else
                                               LabelVectors.build(index, encode, directory=getattr(self.backend, "path", None), stamp=self._stamp()))
            return self._name_index["vectors"]

    def inverse_relations(self) -> dict[str, str]:
        """Each relation that has an inverse in this graph mapped to one name for the pair (the first
        of the two in sorted order): film.performance.film and film.film.starring both to
        film.film.starring. Found once per client, by the profile's `inverses` (or the `inverses`
        given): "schema" asks the schema's reverse-property links (one cheap query, even on a full
        Freebase); "mirrored" asks which relations state the same facts both ways round (each
        relation read `MIRRORED_SAMPLE` facts deep, from the relation index's list of the relations
        that join two nodes, else a scan for them) and pairs each relation with the one it mirrors
        most, where that one mirrors it most too, in at least `MIN_MIRRORED_FACTS` facts (a director
        who also produced makes directed_by mirror produced_by now and then, never most); "none":
        no relation has an inverse."""
        with _INDEX_LOCK:
            if "pairs" not in self._inverses:
                self._inverses["pairs"] = self._find_inverses()
            return self._inverses["pairs"]

    def _find_inverses(self) -> dict[str, str]:
        profile, pairs = self.profile, []

        def relations(row: Row) -> tuple[str | None, str | None]:
            return profile.relation_id(row["p"].value), profile.relation_id(row["q"].value)

        if self.inverses_lookup == "schema":
            rows = self._select(queries.reverse_properties(predicate=profile.reverse_property, limit=self.max_rows))
            pairs = [(p, q) for p, q in map(relations, rows) if p and q]
        elif self.inverses_lookup == "mirrored":
            pairs = self._kept_mirrors()
            if pairs is None:
                skips = {"skip_prefixes": profile.skip_iri_prefixes(), "skip_substrings": profile.skip_relation_substrings}
                edges = self._listed_edge_relations()  # the index's list of the relations that join two nodes, where it keeps one
                if not edges:
                    edges = [row["p"].value for row in self._select(queries.edge_relations(**skips, limit=self.max_rows))]
                counts = {}
                in_order = getattr(self.backend, "in_written_order", lambda query: query)  # each relation's facts first, then their mirrors
                for start in range(0, len(edges), MIRRORED_PER_QUERY):
                    rows = self._select(in_order(queries.mirrored_relations(edges[start : start + MIRRORED_PER_QUERY], **skips,
                                                                            per_relation=MIRRORED_SAMPLE)))
                    counts.update({(p, q): int(r["n"].value) for r in rows for p, q in [relations(r)] if p and q})
                pairs = _mutual_mirrors(counts, MIN_MIRRORED_FACTS)
                self._keep_mirrors(pairs)
        one_name: dict[str, str] = {}
        for p, q in pairs:
            one_name[p] = one_name[q] = min(p, q)
        return one_name

    def _kept_mirrors(self) -> list[tuple[str, str]] | None:
        """The mirrored pairs found before for this on-disk store as it is now (`MIRRORS_FILE` beside
        it), or None: the scan reads every fact, so a store pays it once, not every process."""
        directory = getattr(self.backend, "path", None)
        try:
            kept = json.loads((directory / MIRRORS_FILE).read_text(encoding="utf-8")) if directory else None
        except (OSError, ValueError):
            return None
        if not isinstance(kept, dict) or kept.get("stamp") != self._stamp() or not isinstance(kept.get("pairs"), list):
            return None
        return [(p, q) for p, q in kept["pairs"]]

    def _keep_mirrors(self, pairs: list[tuple[str, str]]) -> None:
        directory = getattr(self.backend, "path", None)
        if directory is None:
            return
        path = directory / MIRRORS_FILE
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            partial.write_text(json.dumps({"stamp": self._stamp(), "pairs": pairs}), encoding="utf-8")
            partial.replace(path)
        except OSError:  # a store on read-only disk: found again by the next process
            partial.unlink(missing_ok=True)

    def _plain_name_index(self) -> NameIndex | TextSearchIndex:
        with _INDEX_LOCK:
            if "index" not in self._name_index:
                if self.names_lookup == "search":
                    index = self._text_search_index()
                else:
                    try:
                        index = self._whole_index()
                    except TooManyNames:
                        if self.names_lookup == "index":
                            raise
                        index = self._text_search_index()
                self._name_index["index"] = index
            return self._name_index["index"]

    def _whole_index(self) -> NameIndex:
        directory, stamp = getattr(self.backend, "path", None), self._stamp()
        index = NameIndex.load(directory, stamp=stamp) if directory else None
        if index is None:
            if self._too_many_names():
                raise TooManyNames(f"{self.backend.describe()} has more than {self.max_index_names:,} names: too many to index in memory")
            index = NameIndex(self.all_names())
            if directory:
                index.save(directory, stamp=stamp)
        return index

    def _text_search_index(self) -> TextSearchIndex:
        def resolve(entity_or_name: str) -> list[tuple[str, str]]:
            try:
                named = self.names([entity_or_name])
            except InvalidTermError:  # a name, not an id
                named = {}
            if named:
                return list(named.items())
            return [(entity, entity_or_name) for entity in self.link([entity_or_name]).get(entity_or_name, ())]

        self.search_names(["name"], limit=1)  # one search now: the store's table is built here, an endpoint without a text index says so
        return TextSearchIndex(self.search_names, resolve)

    def search_names(self, words: list[str], *, limit: int = 2_000) -> list[tuple[str, str]]:
        """(entity, name or alias) whose name contains one of `words`, best matches first: one query
        of the endpoint's text index (Virtuoso's `bif:contains`), or of the embedded store's table of
        names on disk (`kg.name_table`). A KGError names an endpoint that has no text index."""
        predicates = self._name_predicates()
        own_table = getattr(self.backend, "search_names", None)  # the embedded store's names on disk
        if own_table is not None:
            start = time.perf_counter()
            pairs = own_table(words, predicates=predicates, lang=self.profile.name_lang, limit=limit)
            self.stats.record(len(pairs), time.perf_counter() - start)
            found = [(entity, name) for iri, name in pairs if (entity := self.profile.entity_id(iri)) is not None]
            return list(dict.fromkeys(found))
        try:
            rows = self._select(queries.names_containing(words, predicates=predicates, lang=self.profile.name_lang, limit=limit))
        except KGError as exc:
            raise KGError(f"{self.backend.describe()} cannot search names by their words (a Virtuoso text index, "
                          f"bif:contains, is needed for names='search'): {exc}") from exc
        found = []
        for row in rows:
            entity = self.profile.entity_id(row["e"].value) if row["e"].kind == "iri" else None  # not a blank node
            if entity is not None:
                found.append((entity, row["name"].value))
        return list(dict.fromkeys(found))

    def _stamp(self) -> str:
        """What the saved index must have been built from: the backend and its size, where it tells it."""
        try:
            size = len(self.backend)
        except TypeError:
            size = None
        return f"{self.profile.name}:{size}"

    def ping(self) -> float:
        """Seconds a one-row query took: the graph answers (else `KGError`, as any query)."""
        start = time.perf_counter()
        self._select("SELECT ?s WHERE { ?s ?p ?o } LIMIT 1")
        return time.perf_counter() - start

    # -- plumbing --------------------------------------------------------------------------

    def _select(self, query: str) -> list[Row]:
        start = time.perf_counter()
        rows = self.backend.select(query)
        self.stats.record(len(rows), time.perf_counter() - start)
        return rows

    def _batched_rows(self, keys: list[K], per_key: int, query: Callable[[list[K], int], str]) -> list[Row]:
        """Rows for a batch of keys in one query asking at most `per_key` rows a key; when the
        query's LIMIT is reached, rows of later keys may be missing, so the batch is split in halves
        and asked again (rare: relations come one row per entity and direction)."""
        row_limit = min(per_key * len(keys) + 1, self.max_rows)
        rows = self._select(query(keys, row_limit))
        if len(rows) < row_limit or len(keys) == 1:
            return rows
        half = len(keys) // 2
        return self._batched_rows(keys[:half], per_key, query) + self._batched_rows(keys[half:], per_key, query)

    def _neighbour_rows(self, keys: list[Move], cap: int, query: Callable[..., str],
                        move_of: Callable[[Row], Move | None]) -> tuple[list[Row], set[Move]]:
        """Rows for a frontier's moves, each move's neighbours cut at `cap` (+1, which tells a cut
        list from a whole one) before names and relations are joined to them.

        The common case is one query keeping `cap` x moves (entity, neighbour) pairs in all, at most
        `FRONTIER_CAPS` caps (one move: its own cap). Where that cut (a hub among the moves, or a
        frontier of many large moves), the moves are asked again with
        each capped in a subquery of its own (`_each_capped`): the hub's rows stop at its cap, and the
        other moves lose nothing. A move found cut once (a hub's) is remembered by the client
        (`HUB_MOVES` of them), so a later frontier with it goes to the capped subqueries at once.
        Returns the rows and the moves whose lists a LIMIT may have cut.
        """
        hubs = [k for k in keys if k in self._hub_moves]
        rest = [k for k in keys if k not in self._hub_moves]
        rows: list[Row] = []
        if rest:
            kept = min(cap * min(len(rest), FRONTIER_CAPS) + 1, self.max_rows - 1)
            batch = self._select(query(rest, kept=kept))
            pairs = len({(row["e"], row.get("r"), row.get("d"), row["n"]) for row in batch})
            if pairs < kept and len(batch) < self.max_rows:
                rows += batch
            elif len(rest) == 1 and not hubs:  # its one cap: `_capped` sees the extra neighbour and says it was cut
                self._remember_hubs(batch, cap, move_of)
                return batch, set() if len(batch) < self.max_rows else set(rest)
            else:
                hubs += rest
        if not hubs:
            return rows, set()
        capped, cut = self._each_capped(hubs, cap, query)
        self._remember_hubs(capped, cap, move_of)
        return rows + capped, cut

    def _each_capped(self, keys: list[Move], cap: int, query: Callable[..., str]) -> tuple[list[Row], set[Move]]:
        """The moves' rows with each move capped in a subquery of its own, as many moves a query as
        their caps fit in `max_rows` (at most `MOVES_PER_QUERY`). A query whose answer still fills
        `max_rows` (neighbours of many names) is asked again in halves; a single move's that does
        is returned as cut."""
        per_query = max(1, min(MOVES_PER_QUERY, (self.max_rows - 1) // (cap + 1)))
        rows: list[Row] = []
        cut: set[Move] = set()
        for start in range(0, len(keys), per_query):
            part = keys[start : start + per_query]
            got = self._select(query(part, per_key=cap + 1))
            if len(got) < self.max_rows:
                rows += got
            elif len(part) == 1:
                rows += got
                cut |= set(part)
            else:
                for half in (part[: len(part) // 2], part[len(part) // 2 :]):
                    more, more_cut = self._each_capped(half, cap, query)
                    rows += more
                    cut |= more_cut
        return rows, cut

    def _remember_hubs(self, rows: list[Row], cap: int, move_of: Callable[[Row], Move | None]) -> None:
        """Keep the moves with more than `cap` neighbours in `rows`: a hub's, asked capped from now on."""
        pairs = {(move, row["n"]) for row in rows if (move := move_of(row)) is not None}
        with _INDEX_LOCK:
            for key, neighbours in Counter(key for key, _ in pairs).items():
                if neighbours > cap:
                    self._hub_moves[key] = None
            while len(self._hub_moves) > HUB_MOVES:
                self._hub_moves.pop(next(iter(self._hub_moves)))

    def _relation_index(self) -> tuple[str, str] | None:
        """The relation index (graph, predicate) the backend keeps in its store, if it does (a Virtuoso
        loaded by kgqa): a query joins it."""
        return getattr(self.backend, "relation_index", None)

    def _relation_table(self) -> RelationTable | None:
        """The relation index the backend keeps beside its store, if it does (`EmbeddedStore`): looked up by key."""
        return getattr(self.backend, "relation_table", None)

    def _indexed_relations(self, iris: list[str]) -> dict[str, str] | None:
        """{IRI: `>iri` / `<iri` tokens} of the entities the relation index holds (those it lacks
        have no relations), from the table beside the store or one query joining the index in it;
        None where the backend keeps no index. A lookup in the table is timed as the backend's, not counted a query."""
        table = self._relation_table()
        if table is not None:
            start = time.perf_counter()
            looked = table.relations([f"<{iri}>" for iri in iris])
            self.stats.record_lookup(time.perf_counter() - start)
            return {term[1:-1]: tokens for term, tokens in looked.items()}
        index = self._relation_index()
        if index is None:
            return None
        rows = self._select(queries.indexed_relations(iris, index=index, limit=len(iris))) if iris else []
        return {row["e"].value: row["rs"].value for row in rows}

    def _listed_edge_relations(self) -> list[str]:
        """The relation IRIs the relation index lists as joining two nodes; none where it keeps no list."""
        skips = {"skip_prefixes": self.profile.skip_iri_prefixes(), "skip_substrings": self.profile.skip_relation_substrings}
        table = self._relation_table()
        if table is not None:  # skipped as the query's filter skips them
            start = time.perf_counter()
            listed = table.edge_relations()
            self.stats.record_lookup(time.perf_counter() - start)
            return [iri for iri in listed if not iri.startswith(skips["skip_prefixes"])
                    and not any(part in iri for part in skips["skip_substrings"])]
        index = self._relation_index()
        return [row["p"].value for row in self._select(queries.edge_relations(**skips, limit=self.max_rows, index=index))] if index else []

    def _cap(self, limit: int | None, default: int) -> int:
        return max(1, min(limit or default, self.max_rows - 1))

    def _iris(self, entities: Iterable[str]) -> dict[str, str]:
        """Validated IRIs by entity id, first-seen order, duplicates dropped."""
        if isinstance(entities, str):
            raise TypeError("pass a list of entity ids, not one string")
        return {e: self.profile.entity_iri(e) for e in dict.fromkeys(entities)}

    def _node(self, term: RdfTerm) -> Node | None:
        if term.kind == "literal":
            datatype = term.datatype
            if datatype and datatype.startswith(XSD):
                datatype = datatype[len(XSD) :]
            # Plain literals: pyoxigraph says xsd:string, Virtuoso says nothing.
            return Node(term.value, literal=True, datatype=None if datatype == "string" else datatype)
        if term.kind == "iri":
            entity = self.profile.entity_id(term.value)
            return Node(entity) if entity is not None else None
        return None  # blank nodes cannot be named in a later query

    def _edges(self, tokens: str) -> Iterable[Edge]:
        """Edges from aggregated `>iri` / `<iri` tokens."""
        for token in tokens.split():
            relation = self.profile.relation_id(token[1:])
            if relation is not None:
                yield Edge(relation, Direction.OUT if token[0] == ">" else Direction.IN)

    def _linked(self, query: str) -> dict[str, set[str]]:
        matches: dict[str, set[str]] = defaultdict(set)
        for row in self._select(query):
            entity = self.profile.entity_id(row["e"].value)
            if entity is not None:
                matches[normalize_label(row["label"].value)].add(entity)
        return matches


def _mutual_mirrors(counts: Mapping[tuple[str, str], int], least: int) -> list[tuple[str, str]]:
    """The relation pairs (p, q) where q is the relation p mirrors most and p the one q mirrors most
    (ties to the first name), in at least `least` facts."""
    best: dict[str, tuple[int, str]] = {}
    for (p, q), n in sorted(counts.items()):
        if n > best.get(p, (0, ""))[0]:
            best[p] = (n, q)
    return [(p, q) for p, (n, q) in best.items() if p < q and n >= least and best.get(q, (0, ""))[1] == p]


def _name_rank(row: Row, predicates: tuple[str, ...]) -> tuple:
    """Orders candidate names: earlier predicate, then language-tagged over plain, then alphabetical.
    Queries over one name predicate do not return ?p."""
    name = row.get("name")
    if name is None:
        return (len(predicates), 1, "", None)
    predicate = predicates.index(row["p"].value) if "p" in row else 0
    return (predicate, 0 if name.lang else 1, name.value, name.value)


def _with_name(node: Node, rank: tuple) -> Node:
    return node if node.literal or rank[-1] is None else Node(node.id, name=rank[-1])


_MINOR_WORDS = {"a", "an", "and", "as", "at", "by", "de", "del", "for", "in", "of", "on", "or", "the", "to", "von"}


def _surface_forms(label: str) -> set[str]:
    """Spellings probed through the store's term index; matches are then checked by normal form."""
    collapsed = " ".join(label.split())
    words = collapsed.lower().split()
    headline = " ".join(w if i and w in _MINOR_WORDS else w[:1].upper() + w[1:] for i, w in enumerate(words))
    return {label, collapsed, collapsed.lower(), collapsed.title(), collapsed.capitalize(), collapsed.upper(), headline}


def _capped(found: Mapping[K, list[V]], cap: int, *, keys: Iterable[K], cut: set[K]) -> Fanout[K, V]:
    """Sort each list, cut it at `cap`, and report the keys that were cut (here or by a query LIMIT)."""
    items: dict[K, tuple[V, ...]] = {}
    truncated: set[K] = set(cut)
    for key in keys:
        values = sorted(dict.fromkeys(found.get(key, ())))
        if len(values) > cap:
            truncated.add(key)
        if values:
            items[key] = tuple(values[:cap])
    return Fanout(items, frozenset(truncated))
