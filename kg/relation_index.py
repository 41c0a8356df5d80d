"""The relation index of an embedded store, built in bounded memory.

The index (`kg.relation_table.RelationTable`, beside the store) keeps one row per entity: the
relations around it, as `>iri` (outgoing) and `<iri` (incoming) tokens. One SPARQL GROUP BY over
the whole graph would build it (`kg.queries.index_relations`, what Virtuoso runs into its own
store), but pyoxigraph holds every entity's group in memory at once: 28 s and 1.2 GB at 10^6
triples, and at 10^7 past 9.6 GB after ten minutes, still growing. Here N-Triples are cut a chunk
of lines at a time in numpy, never a line or a term as a Python object: the line ends and spaces
found, each subject and IRI object keyed by a 64-bit hash of its bytes (`TermHasher`), each
predicate numbered; the (entity key, relation token) pairs held until they pass `run_bytes`, then
sorted, made distinct and spilled to a file (a run); and the runs merged a range of keys at a time
into the table, with the relations seen joining two nodes listed beside it. Memory holds about a
run; disk holds the spilled runs until the end. At 10^7 triples (1.5 GB of N-Triples) that takes
about 26 s on one core, against 83 s when each line was cut and gathered in Python (docs/scale.md).

A load of N-Triples files into an empty store on disk gathers the runs in a process of its own that
reads the files beside the bulk loader (`GatherProcess`), and any other (a stream, a store in
memory) from the bytes the bulk loader reads (`gathering`, `TeeReader`); the index is written from
them (`write_relation_index`). A store whose triples came otherwise is read back as N-Triples
(`Store.dump`) into the same runs (`build_relation_index`): pyoxigraph reads about 55,000 triples a
second back out of a store, so this costs more than the load. The bulk loader names a file's blank
nodes anew, so a file that holds one (or a source of another kind) is indexed by reading the store back.
"""

from __future__ import annotations

import gzip
import itertools
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyoxigraph as ox

from kgqa.kg.relation_table import TABLE_FILE, RelationTable, TermHasher, write_file
from kgqa.kg.terms import sparql_iri
from kgqa.progress import QUIET, Progress

RUN_BYTES = 128 << 20  # pairs held in memory before a run is spilled (and the pairs of a key range merged at a time)
GATHER_BYTES = 4 << 20  # N-Triples cut at a time (a sink is handed a few KB a call)
GATHER_NICENESS = 10  # the gathering process yields the cores to the bulk loader, and ends during the compaction
DROP_BATCH = 100_000  # quads removed a transaction when an old index kept in the store is dropped
SPILL_PREFIX = "kgqa-relation-index-"  # a folder left by a build that was killed starts so
_LITERAL, _IRI, _CLOSE, _BLANK, _SPACE, _DOT, _ESCAPE, _NEWLINE = (ord(c) for c in '"<>_ .\\\n')
EXACT_FILE = "exact"  # written by the gathering process beside its table when the runs said what the files hold
logger = logging.getLogger(__name__)


def build_relation_index(store: ox.Store, *, directory: Path | None, stamp: str, spill_dir: Path | None = None,
                         run_bytes: int = RUN_BYTES, gather_bytes: int = GATHER_BYTES, triples: int | None = None,
                         progress: Progress = QUIET) -> RelationTable:
    """The relation index of `store`'s default graph, read back, written beside it in `directory` (in
    memory if None) and stamped `stamp`. Runs past `run_bytes` are spilled under `spill_dir` (the
    system's temporary folder if None), cut `gather_bytes` at a time; `triples` (the default graph's size, if known) sizes the progress bar."""
    with gathering(spill_dir, run_bytes=run_bytes, gather_bytes=gather_bytes) as runs:
        with progress.advancing(desc="relation index", total=triples, unit="triple", scale=True) as advance:
            runs.advance = advance
            store.dump(runs, format=ox.RdfFormat.N_TRIPLES, from_graph=ox.DefaultGraph())
            runs.finish()
        return write_relation_index(runs, directory=directory, stamp=stamp, progress=progress)


@contextmanager
def gathering(spill_dir: Path | None = None, *, run_bytes: int = RUN_BYTES, gather_bytes: int = GATHER_BYTES,
              plain: bool = False) -> Iterator[RelationRuns]:
    """Runs to gather N-Triples into (as a file's sink: `Store.dump`, or `TeeReader`), spilled under
    `spill_dir` (the system's temporary folder if None) and removed at the end. `plain`: check that
    the lines are as the store's own dump writes them (`RelationRuns.exact` says if they all were)."""
    with tempfile.TemporaryDirectory(prefix=SPILL_PREFIX, dir=spill_dir) as folder:
        yield RelationRuns(Path(folder), run_bytes=run_bytes, gather_bytes=gather_bytes, plain=plain)


def write_relation_index(runs: RelationRuns, *, directory: Path | None, stamp: str, progress: Progress = QUIET) -> RelationTable:
    """The relation index `runs` gathered (every triple of a store's default graph), written beside
    the store in `directory` (in memory if None), replacing the one there."""
    with progress.advancing(desc="relation index: writing", total=None, unit="entity", scale=True) as advance:
        return RelationTable.write(runs.pairs(advance), runs.tokens(), runs.edge_relations(), directory=directory, stamp=stamp)


class GatherProcess:
    """The relation index of N-Triples files gathered in a process of its own (`python -m
    kgqa.kg.relation_index`) while the bulk loader reads the same files into the store, and written
    there into a table (`RelationTable.adopt` moves it beside the store). Gathered in the loader's
    own reading thread (`TeeReader`), each chunk waited for the gathering before the loader had it;
    apart, it takes the share of the cores the loader leaves. The files are those of an empty store,
    loaded in this order; `exact` turns False where the store gets anything else (the caller's to say)
    or the lines are not as the store's own dump writes them, and the graph is then read back."""

    def __init__(self, files: Sequence[Path], folder: Path, *, run_bytes: int = RUN_BYTES) -> None:
        self.folder, self.table, self.exact = folder, folder / TABLE_FILE, True
        self._errors = (folder / "errors.log").open("wb")
        command = [sys.executable, "-m", "kgqa.kg.relation_index", str(folder), str(run_bytes), str(os.getpid()), *map(str, files)]
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


def gather_files(files: Sequence[Path], *, folder: Path, run_bytes: int = RUN_BYTES, parent: int | None = None) -> bool:
    """`GatherProcess`'s work: the runs of the N-Triples `files` (gzipped where named .gz), in order,
    gathered under `folder` and, where every line was plain, written into the table `folder/TABLE_FILE`
    (its stamp left for `RelationTable.adopt`) with the file `EXACT_FILE` beside it. Whether it was.
    Stops as soon as the process `parent` (the load's) is gone: a load killed leaves no gathering behind."""
    runs = RelationRuns(folder, run_bytes=run_bytes, plain=True)
    for path in files:
        with gzip.open(path, "rb") if path.suffix.lower() == ".gz" else path.open("rb") as stream:
            while runs.exact and (chunk := stream.read(runs.gather_bytes)):
                if parent is not None and os.getppid() != parent:
                    raise SystemExit("the load that started this gathering is gone")
                runs.write(chunk)
        if not runs.finish():  # a file's last line, with no newline, is a line of its own
            return False
    write_file(folder / TABLE_FILE, runs.pairs(), runs.tokens(), runs.edge_relations(), stamp="")
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
    unless a literal, a `<relation` token. Each `gather_bytes` of whole lines are cut at once (`_cut`);
    their (entity key, token) pairs are held until they pass `run_bytes`, then spilled as a run, and
    the runs are merged by key range (`pairs`). With `plain`, lines the store's own dump would not
    write so (a tab, a blank node, an escape in an IRI, a line not ending " .": the bulk loader would
    keep other terms than the bytes say) stop the gathering, and `exact` turns False: the runs no
    longer say what the store holds."""

    def __init__(self, folder: Path, *, run_bytes: int = RUN_BYTES, gather_bytes: int = GATHER_BYTES, advance=None,
                 plain: bool = False) -> None:
        self.folder, self.run_bytes, self.gather_bytes, self.plain = folder, run_bytes, gather_bytes, plain
        self.advance = advance or (lambda lines: None)
        self.exact = True
        self.pending: list[bytes] = []  # what was written since the last gather (loaders write a few KB a call)
        self.pending_bytes = 0
        self.tail = b""
        self.hasher = TermHasher()
        self.numbers: dict[int, int] = {}  # a predicate's key: its number
        self.relations: list[bytes] = []  # by number: the predicate's IRI; its tokens are 2n (outgoing) and 2n + 1
        self.edges: set[int] = set()  # the numbers of the predicates seen with an IRI object
        self.held: list[_Chunk] = []  # cut since the last spill
        self.held_bytes = 0
        self.spilled: list[_Run] = []

    def write(self, data: bytes) -> int:
        if self.exact:
            self.pending.append(bytes(data))
            self.pending_bytes += len(data)
            if self.pending_bytes >= self.gather_bytes:
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
        if self.plain and b"\t" in whole:  # a tab between terms (or in a literal, which reading back handles too)
            return self._give_up()
        if not whole:
            return
        chunk = self._cut(whole)
        if chunk is None:
            return self._give_up()
        self.held.append(chunk)
        self.held_bytes += chunk.nbytes
        if self.held_bytes >= self.run_bytes:
            self.spill()

    def _cut(self, whole: bytes) -> _Chunk | None:
        """The (entity key, token) pairs of whole lines; None where a line is not cut into three terms (`plain`:
        the runs are then not exact; else an error: the store's own dump)."""
        a = np.frombuffer(whole, np.uint8)
        ends = np.flatnonzero(a == _NEWLINE)
        starts = np.concatenate(([0], ends[:-1] + 1))
        spaces = np.flatnonzero(a == _SPACE)
        first = np.searchsorted(spaces, starts)
        last = max(len(spaces) - 1, 0)
        s1, s2, s3 = (spaces[np.minimum(first + k, last)] if len(spaces) else ends for k in range(3))
        subject, obj = a[starts], a[np.minimum(s2 + 1, len(a) - 1)]
        node = obj != _LITERAL
        if self.plain:  # as the store's own dump writes a file's triples: no blank node (the loader names them anew), " ." last
            good = ((subject == _IRI) & ((obj == _IRI) | (obj == _LITERAL)) & (a[ends - 1] == _DOT) & (a[np.maximum(ends - 2, 0)] == _SPACE))
        else:
            good = ((subject == _IRI) | (subject == _BLANK)) & ((obj == _IRI) | (obj == _LITERAL) | (obj == _BLANK))
        good &= (s1 > starts) & (s2 < ends) & (a[s1 + 1] == _IRI) & (a[s2 - 1] == _CLOSE) & (~node | (s3 < ends))
        if self.plain and good.all() and (escapes := np.flatnonzero(a == _ESCAPE)).size:  # an IRI with an escape (`\u00E9`)
            line = np.searchsorted(ends, escapes)  # is one the parser decodes: not the term the store keeps
            good[line[(escapes < s2[line]) | (node[line] & (escapes < s3[line]))]] = False
        if not good.all():
            if self.plain:
                return None
            bad = int(np.argmin(good))
            raise ValueError(f"not a triple: {whole[starts[bad] : ends[bad]][:200]!r}")
        term_starts = np.concatenate((starts, s1 + 1, s2[node] + 1))
        term_ends = np.concatenate((s1, s2, s3[node]))
        keys = self.hasher.keys(a, term_starts, term_ends)
        lines = len(starts)
        numbers = self._numbered(whole, keys[lines : 2 * lines], s1 + 1, s2)
        self.edges.update(numbers[obj == _IRI].tolist())
        self.advance(lines)
        return _Chunk(np.concatenate((keys[:lines], keys[2 * lines :])), np.concatenate((2 * numbers, 2 * numbers[node] + 1)).astype(np.uint32))

    def _numbered(self, whole: bytes, keys: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Each line's predicate's number, new ones numbered as met."""
        unique, first_at, inverse = _sorted_once(keys)
        numbers = np.empty(len(unique), np.int64)
        for i, (key, at) in enumerate(zip(unique.tolist(), first_at.tolist())):
            number = self.numbers.get(key)
            if number is None:
                number = self.numbers[key] = len(self.relations)
                self.relations.append(whole[starts[at] + 1 : ends[at] - 1])  # the IRI, brackets off
            numbers[i] = number
        return numbers[inverse]

    def _give_up(self) -> None:
        """Stop gathering: what passes is not what the store keeps (the index is read back instead)."""
        self.exact, self.tail = False, b""
        self.held.clear()

    def flush(self) -> None:
        pass

    def spill(self) -> None:
        """The chunks held, as one run in files of its own."""
        self.spilled.append(_Run.of(self.held).saved(self.folder / f"run-{len(self.spilled)}"))
        self.held.clear()
        self.held_bytes = 0

    def tokens(self) -> list[str]:
        """The table's tokens, in text order: a row's numbers index this list."""
        return [text for text, _ in self._token_order()]

    def _token_order(self) -> list[tuple[str, int]]:
        gathered = [(f"{mark}{relation.decode()}", 2 * n + way) for n, relation in enumerate(self.relations)
                    for way, mark in ((0, ">"), (1, "<"))]
        return sorted(gathered)

    def edge_relations(self) -> list[str]:
        return sorted(self.relations[n].decode() for n in self.edges)

    def pairs(self, advance=lambda entities: None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Every (entity key, token) pair once, sorted by key then token (as the table's numbers, `tokens`):
        the runs merged a range of keys at a time, each range about one run's size, as two arrays."""
        self.finish()
        if self.tail:
            raise ValueError("the N-Triples dump ended inside a line")
        runs = [*self.spilled, _Run.of(self.held)]
        rank = np.empty(2 * len(self.relations), np.uint32)
        rank[[number for _, number in self._token_order()]] = np.arange(len(rank), dtype=np.uint32)
        parts = max(1, -(-sum(run.nbytes for run in runs) // self.run_bytes))
        bounds = [None, *(np.int64(-(1 << 63) + (i << 64) // parts) for i in range(1, parts)), None]
        for low, high in itertools.pairwise(bounds):
            cut = [run.between(low, high) for run in runs]
            keys, tokens = _distinct(_joined([k for k, _ in cut], np.int64), rank[_joined([t for _, t in cut], np.uint32)])
            yield keys, tokens
            advance(int(np.count_nonzero(_first_of_each(keys))))


class _Chunk:
    """(entity key, token) pairs, as cut from a chunk of lines."""

    def __init__(self, keys: np.ndarray, tokens: np.ndarray) -> None:
        self.keys, self.tokens = keys, tokens

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + self.tokens.nbytes


class _Run(_Chunk):
    """Chunks' pairs sorted by key and token and made distinct: in memory, or spilled (`saved`) and read back mapped."""

    @classmethod
    def of(cls, chunks: Sequence[_Chunk]) -> _Run:
        return cls(*_distinct(_joined([c.keys for c in chunks], np.int64), _joined([c.tokens for c in chunks], np.uint32)))

    def saved(self, prefix: Path) -> _Run:
        arrays = []
        for field in ("keys", "tokens"):
            path = prefix.with_name(f"{prefix.name}-{field}.npy")
            np.save(path, getattr(self, field))
            arrays.append(np.load(path, mmap_mode="r") if getattr(self, field).size else getattr(self, field))
        return _Run(*arrays)

    def between(self, low: np.int64 | None, high: np.int64 | None) -> tuple[np.ndarray, np.ndarray]:
        """This run's pairs of keys in [low, high) (None: unbounded)."""
        start = 0 if low is None else int(np.searchsorted(self.keys, low))
        end = len(self.keys) if high is None else int(np.searchsorted(self.keys, high))
        return self.keys[start:end], self.tokens[start:end]


def _joined(arrays: Sequence[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype)


def _distinct(keys: np.ndarray, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs sorted by key, then token, each once: as one number each (the key's place among the
    distinct keys, then the token) sorted and made distinct; two sorts of 8 bytes, not a lexsort."""
    distinct, _, place = _sorted_once(keys)
    pairs = np.sort((place.astype(np.uint64) << np.uint64(32)) | tokens.astype(np.uint64))
    pairs = pairs[_first_of_each(pairs)]
    return distinct[(pairs >> np.uint64(32)).astype(np.int64)], (pairs & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def _sorted_once(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`values` distinct and sorted, where each is first found, and each value's place among them:
    `np.unique`'s three answers by one unstable sort (numpy 2.4's own takes 10 times as long)."""
    order = np.argsort(values)
    ordered = values[order]
    new = _first_of_each(ordered)
    place = np.empty(len(values), np.int64)
    place[order] = np.cumsum(new) - 1
    return ordered[new], order[new], place


def _first_of_each(ordered: np.ndarray) -> np.ndarray:
    """Where a sorted array holds a value for the first time."""
    new = np.ones(len(ordered), bool)
    new[1:] = ordered[1:] != ordered[:-1]
    return new


if __name__ == "__main__":  # the gathering process: FOLDER RUN_BYTES PARENT_PID FILE...
    os.nice(GATHER_NICENESS)
    gather_files([Path(name) for name in sys.argv[4:]], folder=Path(sys.argv[1]), run_bytes=int(sys.argv[2]),
                 parent=int(sys.argv[3]))
