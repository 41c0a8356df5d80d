"""The relation index of an embedded store, built in bounded memory.

The index (`kg.queries.RELATION_INDEX`) keeps one literal per entity: the relations around it, as
`>iri` (outgoing) and `<iri` (incoming) tokens. One SPARQL GROUP BY over the whole graph builds it
(`kg.queries.index_relations`, what Virtuoso runs), but pyoxigraph holds every entity's group in
memory at once: 28 s and 1.2 GB at 10^6 triples, and at 10^7 past 9.6 GB after ten minutes, still
growing. Here the default graph is read back once as N-Triples (`Store.dump`, in the engine), each
line cut into its subject's token and its object's without parsing a term, the tokens gathered by
entity in runs of at most `run_entities` entities, each full run sorted and spilled to a file, and
the runs merged by entity into the index's literals, loaded back by the bulk loader, and the
relations seen joining two nodes listed beside them. Memory holds one run; disk holds the spilled
runs (smaller than the graph's N-Triples) until the end.
"""

from __future__ import annotations

import heapq
import itertools
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import pyoxigraph as ox

from kgqa.kg.queries import EDGE_RELATION, RELATION_INDEX, RELATIONS_OF
from kgqa.kg.terms import sparql_iri
from kgqa.progress import QUIET, Progress

RUN_ENTITIES = 500_000  # entities gathered in memory before a run is spilled
LOAD_LINES = 200_000  # index lines a bulk load: one load of 2.7 million held 3.9 GB at its peak
DROP_BATCH = 100_000  # quads removed a transaction when an old index is dropped
SPILL_PREFIX = "kgqa-relation-index-"  # a folder left by a build that was killed starts so
_LITERAL, _IRI = ord('"'), ord("<")


def build_relation_index(store: ox.Store, *, spill_dir: Path | None = None, run_entities: int = RUN_ENTITIES,
                         triples: int | None = None, progress: Progress = QUIET) -> None:
    """(Re)build the relation index of `store` from its default graph.
    Runs past the first are spilled under `spill_dir` (the system's temporary folder if None);
    `triples` (the default graph's size, if known) sizes the progress bar."""
    index = ox.NamedNode(RELATION_INDEX)
    _drop(store, index)
    with tempfile.TemporaryDirectory(prefix=SPILL_PREFIX, dir=spill_dir) as folder:
        with progress.advancing(desc="relation index", total=triples, unit="triple", scale=True) as advance:
            runs = _Runs(Path(folder), run_entities=run_entities, advance=advance)
            store.dump(runs, format=ox.RdfFormat.N_TRIPLES, from_graph=ox.DefaultGraph())
        blank = Path(folder) / "blank-nodes"
        with blank.open("wb") as blank_lines:  # the bulk loader would take `_:b` for a new blank node
            lines = _index_lines(runs.merged(), blank=blank_lines)
            while chunk := b"".join(itertools.islice(lines, LOAD_LINES)):  # a load holds its whole input's terms
                store.bulk_load(input=chunk, format=ox.RdfFormat.N_TRIPLES, to_graph=index)
        store.bulk_extend(_blank_quads(blank, graph=index))
        edge = ox.NamedNode(EDGE_RELATION)
        store.bulk_extend(ox.Quad(index, edge, ox.NamedNode(p[1:-1].decode()), index) for p in sorted(runs.edges))


def _drop(store: ox.Store, graph: ox.NamedNode, *, batch: int = DROP_BATCH) -> None:
    """Remove a named graph `batch` quads a transaction: pyoxigraph holds a whole graph's removal in
    memory (8.7 GB for an index of 2.7 million entities), and a store is indexed again after a kill."""
    if not store.contains_named_graph(graph):
        return
    iri = sparql_iri(graph.value)
    while next(iter(store.quads_for_pattern(None, None, None, graph)), None) is not None:
        store.update(f"DELETE {{ GRAPH {iri} {{ ?s ?p ?o }} }} WHERE {{ SELECT ?s ?p ?o WHERE {{ GRAPH {iri} {{ ?s ?p ?o }} }} LIMIT {batch} }}")
    store.remove_graph(graph)  # empty by now


class _Runs:
    """A binary sink for `Store.dump`: every N-Triples line gives its subject a `>relation` token and
    its object, unless a literal, a `<relation` token, gathered by entity in runs."""

    def __init__(self, folder: Path, *, run_entities: int, advance) -> None:
        self.folder, self.run_entities, self.advance = folder, run_entities, advance
        self.run: defaultdict[bytes, set[bytes]] = defaultdict(set)
        self.spilled: list[Path] = []
        self.tail = b""
        self.tokens: dict[bytes, tuple[bytes, bytes]] = {}  # by predicate: one bytes object a token, shared
        self.edges: set[bytes] = set()  # predicates seen with an IRI object (`<iri>`, brackets kept)

    def write(self, data: bytes) -> int:
        lines = (self.tail + bytes(data)).split(b"\n")
        self.tail = lines.pop()  # a line cut at the chunk's end waits for the next chunk
        run, tokens, edges = self.run, self.tokens, self.edges
        for line in lines:
            subject, predicate, rest = line.split(b" ", 2)
            pair = tokens.get(predicate)
            if pair is None:
                pair = tokens[predicate] = (b">" + predicate[1:-1], b"<" + predicate[1:-1])
            run[subject].add(pair[0])
            if rest[0] != _LITERAL:
                run[rest[: rest.index(b" ")]].add(pair[1])
                if rest[0] == _IRI:
                    edges.add(predicate)
        self.advance(len(lines))
        if len(run) >= self.run_entities:
            self.spill()
        return len(data)

    def flush(self) -> None:
        pass

    def spill(self) -> None:
        path = self.folder / f"run-{len(self.spilled)}"
        with path.open("wb") as handle:
            handle.writelines(_run_lines(self.run))
        self.spilled.append(path)
        self.run.clear()

    def merged(self) -> Iterator[tuple[bytes, set[bytes]]]:
        """(entity, tokens), each entity once, in byte order."""
        if self.tail:
            raise ValueError("the N-Triples dump ended inside a line")
        if not self.spilled:  # one run: merged already
            yield from sorted(self.run.items())
            return
        if self.run:
            self.spill()
        handles = [path.open("rb") for path in self.spilled]
        try:
            lines = heapq.merge(*handles)  # "entity\ttokens" sorts as the entity does: no entity holds a tab
            for entity, group in itertools.groupby(lines, key=lambda line: line[: line.index(b"\t")]):
                yield entity, {token for line in group for token in line[len(entity) + 1 : -1].split(b" ")}
        finally:
            for handle in handles:
                handle.close()


def _run_lines(run: dict[bytes, set[bytes]]) -> Iterator[bytes]:
    for entity in sorted(run):
        yield entity + b"\t" + b" ".join(sorted(run[entity])) + b"\n"


def _index_lines(entities: Iterable[tuple[bytes, set[bytes]]], *, blank: BinaryIO) -> Iterator[bytes]:
    """N-Triples lines of the index, `<entity> <RELATIONS_OF> "tokens" .` (an IRI holds no `"` or `\\`),
    and those of blank nodes written to `blank` as `id\ttokens`."""
    predicate = f"<{RELATIONS_OF}>".encode()
    for entity, tokens in entities:
        if entity.startswith(b"_:"):
            blank.write(entity[2:] + b"\t" + b" ".join(sorted(tokens)) + b"\n")
        else:
            yield b"%s %s \"%s\" .\n" % (entity, predicate, b" ".join(sorted(tokens)))


def _blank_quads(path: Path, *, graph: ox.NamedNode) -> Iterator[ox.Quad]:
    """The index's quads of blank nodes: `ox.BlankNode(id)` is the store's own node of that id."""
    predicate = ox.NamedNode(RELATIONS_OF)
    with path.open("rb") as lines:
        for line in lines:
            node, tokens = line.decode().rstrip("\n").split("\t")
            yield ox.Quad(ox.BlankNode(node), predicate, ox.Literal(tokens), graph)
