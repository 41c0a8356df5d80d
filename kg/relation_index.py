"""The relation index of an embedded store, built in bounded memory.

The index (`kg.relation_table.RelationTable`, beside the store) keeps one row per entity: the
relations around it, as `>iri` (outgoing) and `<iri` (incoming) tokens. One SPARQL GROUP BY over
the whole graph would build it (`kg.queries.index_relations`, what Virtuoso runs into its own
store), but pyoxigraph holds every entity's group in memory at once: 28 s and 1.2 GB at 10^6
triples, and at 10^7 past 9.6 GB after ten minutes, still growing. Here the default graph is read
back once as N-Triples (`Store.dump`, in the engine), each line cut into its subject's token and
its object's without parsing a term, the tokens gathered by entity in runs of at most
`run_entities` entities, each full run sorted and spilled to a file, and the runs merged by entity
into the table's rows, with the relations seen joining two nodes listed beside them. Memory holds
one run; disk holds the spilled runs (smaller than the graph's N-Triples) until the end.

Reading the store back is most of that pass (pyoxigraph reads about 55,000 triples a second back
out of it, term by term, whether dumped, iterated or selected). A load of N-Triples files into an
empty store on disk gathers the same runs in a process of its own that reads the files beside the
bulk loader (`GatherProcess`), and any other (a stream, a store in memory) from the bytes the bulk loader reads
(`gathering`, `TeeReader`); the index is written from them (`write_relation_index`). The bulk
loader names a file's blank nodes anew, so a file that holds one (or a source of another kind) is
indexed by reading the store back.
"""

from __future__ import annotations

import gzip
import heapq
import itertools
import logging
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import pyoxigraph as ox

from kgqa.kg.relation_table import TABLE_FILE, RelationTable, write_file
from kgqa.kg.terms import sparql_iri
from kgqa.progress import QUIET, Progress

RUN_ENTITIES = 500_000  # entities gathered in memory before a run is spilled
GATHER_BYTES = 1 << 20  # N-Triples gathered at a time (a sink is handed a few KB a call)
ADVANCE_ROWS = 100_000  # rows written a step of the progress bar
DROP_BATCH = 100_000  # quads removed a transaction when an old index kept in the store is dropped
SPILL_PREFIX = "kgqa-relation-index-"  # a folder left by a build that was killed starts so
_LITERAL, _IRI, _BLANK = ord('"'), ord("<"), ord("_")
EXACT_FILE = "exact"  # written by the gathering process beside its table when the runs said what the files hold
logger = logging.getLogger(__name__)
_ESCAPED_IRI = re.compile(rb"<[^>\s]*\\[uU]")  # an IRI the parser decodes (`\u00E9`): not the one the store keeps


def _plain(lines: bytes) -> bool:
    """Whether whole lines of N-Triples are cut at their spaces into the triples the store keeps, as
    far as a scan of them can tell: no comment, empty or indented line, every line ending " .", no
    tab, no blank node label, no IRI with an escape. A literal may hold a tab, `_:` or an escape too:
    its file is then indexed by reading the store back, never wrongly. (Two spaces between terms
    are found as the lines are cut.)"""
    return (b"\t" not in lines and b"_:" not in lines and lines.count(b"\n") == lines.count(b" .\n")
            and not lines.startswith((b"#", b" ")) and b"\n#" not in lines and b"\n " not in lines
            and (b"\\u" not in lines and b"\\U" not in lines or not _ESCAPED_IRI.search(lines)))


def build_relation_index(store: ox.Store, *, directory: Path | None, stamp: str, spill_dir: Path | None = None,
                         run_entities: int = RUN_ENTITIES, triples: int | None = None,
                         progress: Progress = QUIET) -> RelationTable:
    """The relation index of `store`'s default graph, read back, written beside it in `directory` (in
    memory if None) and stamped `stamp`. Runs past the first are spilled under `spill_dir` (the
    system's temporary folder if None); `triples` (the default graph's size, if known) sizes the progress bar."""
    with gathering(spill_dir, run_entities=run_entities) as runs:
        with progress.advancing(desc="relation index", total=triples, unit="triple", scale=True) as advance:
            runs.advance = advance
            store.dump(runs, format=ox.RdfFormat.N_TRIPLES, from_graph=ox.DefaultGraph())
            runs.finish()
        return write_relation_index(runs, directory=directory, stamp=stamp, progress=progress)


@contextmanager
def gathering(spill_dir: Path | None = None, *, run_entities: int = RUN_ENTITIES, plain: bool = False) -> Iterator[RelationRuns]:
    """Runs to gather N-Triples into (as a file's sink: `Store.dump`, or `TeeReader`), spilled under
    `spill_dir` (the system's temporary folder if None) and removed at the end. `plain`: check that
    the lines are as the store's own dump writes them (`RelationRuns.exact` says if they all were)."""
    with tempfile.TemporaryDirectory(prefix=SPILL_PREFIX, dir=spill_dir) as folder:
        yield RelationRuns(Path(folder), run_entities=run_entities, plain=plain)


def write_relation_index(runs: RelationRuns, *, directory: Path | None, stamp: str, progress: Progress = QUIET) -> RelationTable:
    """The relation index `runs` gathered (every triple of a store's default graph), written beside
    the store in `directory` (in memory if None), replacing the one there."""
    with progress.advancing(desc="relation index: writing", total=None, unit="entity", scale=True) as advance:
        return RelationTable.write(_rows(runs, advance), _edges(runs), directory=directory, stamp=stamp)


def _rows(runs: RelationRuns, advance=lambda rows: None) -> Iterator[tuple[bytes, bytes]]:
    for count, (entity, tokens) in enumerate(runs.merged(), 1):
        yield entity, b" ".join(sorted(tokens))
        if count % ADVANCE_ROWS == 0:
            advance(ADVANCE_ROWS)


def _edges(runs: RelationRuns) -> Iterator[str]:
    return (p[1:-1].decode() for p in runs.edges)


class GatherProcess:
    """The relation index of N-Triples files gathered in a process of its own (`python -m
    kgqa.kg.relation_index`) while the bulk loader reads the same files into the store, and written
    there into a table (`RelationTable.adopt` moves it beside the store). Gathered in the loader's
    own reading thread (`TeeReader`), each chunk waited for the gathering before the loader had it;
    apart, it takes the share of the cores the loader leaves. The files are those of an empty store,
    loaded in this order; `exact` turns False where the store gets anything else (the caller's to say)
    or the lines are not as the store's own dump writes them, and the graph is then read back."""

    def __init__(self, files: Sequence[Path], folder: Path, *, run_entities: int = RUN_ENTITIES) -> None:
        self.folder, self.table, self.exact = folder, folder / TABLE_FILE, True
        self._errors = (folder / "errors.log").open("wb")
        command = [sys.executable, "-m", "kgqa.kg.relation_index", str(folder), str(run_entities), str(os.getpid()), *map(str, files)]
        self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._errors)

    def finish(self) -> bool:
        """Wait for the process; whether its table says what the store holds (False at once if the store got more)."""
        if not self.exact:
            self.stop()
            return False
        code = self._process.wait()
        self._errors.close()
        self.exact = code == 0 and (self.folder / EXACT_FILE).is_file()
        if code != 0:
            said = (self.folder / "errors.log").read_text(errors="replace").strip().splitlines()
            logger.warning("gathering the relation index beside the load failed (%s); reading the graph back instead",
                           said[-1] if said else f"exit code {code}")
        return self.exact

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._errors.close()


def gather_files(files: Sequence[Path], *, folder: Path, run_entities: int = RUN_ENTITIES, parent: int | None = None) -> bool:
    """`GatherProcess`'s work: the runs of the N-Triples `files` (gzipped where named .gz), in order,
    gathered under `folder` and, where every line was plain, written into the table `folder/TABLE_FILE`
    (its stamp left for `RelationTable.adopt`) with the file `EXACT_FILE` beside it. Whether it was.
    Stops as soon as the process `parent` (the load's) is gone: a load killed leaves no gathering behind."""
    runs = RelationRuns(folder, run_entities=run_entities, plain=True)
    for path in files:
        with gzip.open(path, "rb") if path.suffix.lower() == ".gz" else path.open("rb") as stream:
            while runs.exact and (chunk := stream.read(GATHER_BYTES)):
                if parent is not None and os.getppid() != parent:
                    raise SystemExit("the load that started this gathering is gone")
                runs.write(chunk)
        if not runs.finish():  # a file's last line, with no newline, is a line of its own
            return False
    write_file(folder / TABLE_FILE, _rows(runs), _edges(runs), stamp="")
    (folder / EXACT_FILE).touch()
    return True


def drop_stored_index(store: ox.Store, graph: ox.NamedNode, *, batch: int = DROP_BATCH) -> None:
    """Remove the relation index a store made before the table kept inside it (a named graph),
    `batch` quads a transaction: pyoxigraph holds a whole graph's removal in memory (8.7 GB for an
    index of 2.7 million entities)."""
    if not store.contains_named_graph(graph):
        return
    iri = sparql_iri(graph.value)
    while next(iter(store.quads_for_pattern(None, None, None, graph)), None) is not None:
        store.update(f"DELETE {{ GRAPH {iri} {{ ?s ?p ?o }} }} WHERE {{ SELECT ?s ?p ?o WHERE {{ GRAPH {iri} {{ ?s ?p ?o }} }} LIMIT {batch} }}")
    store.remove_graph(graph)  # empty by now


class TeeReader:
    """A binary stream that hands each chunk it reads to `runs` as well: the bulk loader reads the
    file through it, so the index's runs are gathered in the same pass as the load."""

    def __init__(self, source: BinaryIO, runs: RelationRuns) -> None:
        self.source, self.runs = source, runs

    def read(self, size: int = -1) -> bytes:
        data = self.source.read(size)
        self.runs.write(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True


class RelationRuns:
    """A binary sink for N-Triples: every line gives its subject a `>relation` token and its object,
    unless a literal, a `<relation` token, gathered by entity in runs. With `plain`, a chunk that
    holds anything the store's own dump does not write (`_plain`) stops the gathering, and
    `exact` turns False: the runs no longer say what the store holds."""

    def __init__(self, folder: Path, *, run_entities: int, advance=None, plain: bool = False) -> None:
        self.folder, self.run_entities, self.plain = folder, run_entities, plain
        self.advance = advance or (lambda lines: None)
        self.exact = True
        self.pending: list[bytes] = []  # what was written since the last gather (loaders write a few KB a call)
        self.pending_bytes = 0
        self.run: defaultdict[bytes, set[bytes]] = defaultdict(set)
        self.spilled: list[Path] = []
        self.tail = b""
        self.tokens: dict[bytes, tuple[bytes, bytes]] = {}  # by predicate: one bytes object a token, shared
        self.edges: set[bytes] = set()  # predicates seen with an IRI object (`<iri>`, brackets kept)

    def write(self, data: bytes) -> int:
        if self.exact:
            self.pending.append(bytes(data))
            self.pending_bytes += len(data)
            if self.pending_bytes >= GATHER_BYTES:
                self._gather()
        return len(data)

    def finish(self) -> bool:
        """Gather what is pending (a last line may end without a newline); whether the runs are exact."""
        if self.exact and (self.pending or self.tail):
            self._gather(last=True)
        return self.exact

    def _gather(self, *, last: bool = False) -> None:
        text = self.tail + b"".join(self.pending)
        self.pending.clear()
        self.pending_bytes = 0
        if last and self.plain and text and not text.endswith(b"\n"):
            text += b"\n"
        cut = text.rfind(b"\n") + 1
        whole, self.tail = text[:cut], text[cut:]  # a line cut at the chunk's end waits for the next chunk
        if self.plain and not _plain(whole):
            return self._give_up()
        lines = whole.split(b"\n")
        lines.pop()
        run, tokens, edges = self.run, self.tokens, self.edges
        try:
            for line in lines:
                subject, predicate, rest = line.split(b" ", 2)
                pair = tokens.get(predicate)
                if pair is None:
                    if predicate[:1] != b"<" or predicate[-1:] != b">":  # two spaces after the subject
                        raise ValueError(f"not a predicate: {predicate[:200]!r}")
                    pair = tokens[predicate] = (b">" + predicate[1:-1], b"<" + predicate[1:-1])
                run[subject].add(pair[0])
                first = rest[0]
                if first == _IRI:
                    run[rest[: rest.index(b" ")]].add(pair[1])
                    edges.add(predicate)
                elif first != _LITERAL:
                    if first != _BLANK:  # two spaces after the predicate
                        raise ValueError(f"not an object: {rest[:200]!r}")
                    run[rest[: rest.index(b" ")]].add(pair[1])
        except (ValueError, IndexError):
            if not self.plain:  # the store's own dump: every line is plain
                raise
            return self._give_up()
        self.advance(len(lines))
        if len(run) >= self.run_entities:
            self.spill()

    def _give_up(self) -> None:
        """Stop gathering: what passes is not what the store keeps (the index is read back instead)."""
        self.exact, self.tail = False, b""
        self.run.clear()

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
        self.finish()
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


if __name__ == "__main__":  # the gathering process: FOLDER RUN_ENTITIES PARENT_PID FILE...
    gather_files([Path(name) for name in sys.argv[4:]], folder=Path(sys.argv[1]), run_entities=int(sys.argv[2]),
                 parent=int(sys.argv[3]))
