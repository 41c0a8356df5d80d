"""The embedded backend: a pyoxigraph store, in memory or in a directory that reopens instantly."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import BinaryIO

import pyoxigraph as ox

from kgqa.kg.errors import KGError
from kgqa.kg.name_table import NameTable
from kgqa.kg.queries import RELATION_INDEX
from kgqa.kg.relation_index import (
    SPILL_PREFIX,
    GatherProcess,
    RelationRuns,
    TeeReader,
    build_relation_index,
    drop_stored_index,
    gathering,
    write_relation_index,
)
from kgqa.kg.relation_table import RelationTable
from kgqa.kg.terms import RDF_LANG_STRING, RdfTerm
from kgqa.progress import QUIET, Progress

META_FILE = "kgqa-store.json"
FORMATS = {"ntriples": ox.RdfFormat.N_TRIPLES, "turtle": ox.RdfFormat.TURTLE}


def _term(term: object) -> RdfTerm:
    if isinstance(term, ox.NamedNode):
        return RdfTerm("iri", term.value)
    if isinstance(term, ox.Literal):
        lang = term.language
        datatype = None if lang or term.datatype.value == RDF_LANG_STRING else term.datatype.value
        return RdfTerm("literal", term.value, datatype=datatype, lang=lang)
    return RdfTerm("bnode", str(term))


class EmbeddedStore:
    """A pyoxigraph store. `EmbeddedStore()` lives in memory; `EmbeddedStore.open(dir)` on disk.

    A directory store keeps `kgqa-store.json` beside the data: the profile it was loaded for,
    its sources and how long loading took.
    """

    def __init__(self, store: ox.Store | None = None, *, path: Path | None = None, read_only: bool = False) -> None:
        self.store = store if store is not None else ox.Store()
        self.path = path
        self._size: int | None = None  # counted once where the store is read-only (pyoxigraph counts 2.7 s at 10^7)
        self._read_only = read_only
        self._table: RelationTable | None = None  # the relation index beside the store: opened when first asked
        self._table_checked = False  # a store opened from disk may predate its table, or have changed since
        self._name_tables: dict[tuple, NameTable] = {}  # by (predicates, lang): opened or built on the first search

    @classmethod
    def open(cls, path: str | Path, *, create: bool = False, read_only: bool = False) -> EmbeddedStore:
        """The store in directory `path`. One process at a time may open it for writing (loading);
        any number may open it `read_only` at once (evaluating, answering), while none writes."""
        path = Path(path)
        if not create and not (path / META_FILE).is_file():
            raise KGError(f"no kgqa store at {path} (create one with `kgqa kg load SOURCE --store {path}`)")
        loading = _read_meta(path).get("loading") if not create else None
        if loading:  # a load into it stopped before its end (killed): part of a source is missing
            raise KGError(f"the store at {path} was still loading {', '.join(loading)} when the load stopped: run the same "
                          f"`kgqa kg load ... --store {path}` again (the triples already there are kept once)")
        if not read_only:
            path.mkdir(parents=True, exist_ok=True)
        try:
            store = ox.Store.read_only(str(path)) if read_only else ox.Store(str(path))
        except (OSError, RuntimeError) as exc:  # locked by a writer, or changed under a reader
            raise KGError(f"cannot open the store at {path}: {exc}") from exc
        return cls(store, path=path, read_only=read_only)

    def describe(self) -> str:
        return f"embedded:{self.path}" if self.path else "embedded:memory"

    def select(self, query: str) -> list[dict[str, RdfTerm]]:
        try:
            solutions = self.store.query(query)
        except SyntaxError as exc:
            raise KGError(f"{self.describe()} refused a query: {exc}") from exc
        names = [v.value for v in solutions.variables]
        rows = []
        for solution in solutions:
            row = {}
            for name, term in zip(names, solution):
                if term is not None:
                    row[name] = _term(term)
            rows.append(row)
        return rows

    def search_names(self, words: list[str], *, predicates: Sequence[str], lang: str | None, limit: int) -> list[tuple[str, str]]:
        """(entity IRI, name) whose name holds one of `words`, best matches first, from the store's
        full-text table of names (`kg.name_table`: on disk beside the store, built on first use)."""
        key = (tuple(predicates), lang)
        table = self._name_tables.get(key)
        if table is None:  # once per store as it is: every change clears them (`index_relations`)
            table = self._name_tables[key] = NameTable.build(self.store, directory=self.path, predicates=predicates,
                                                             lang=lang, stamp=str(len(self)))
        return table.search(words, limit=limit)

    def add_triples(self, triples: Iterable[ox.Triple], *, index: bool = True) -> int:
        """Add triples (pyoxigraph terms) to the default graph; returns how many were given. With
        `index` (the default), the relation index is rebuilt; without, the caller rebuilds it."""
        count = 0

        def quads():
            nonlocal count
            for t in triples:
                count += 1
                yield ox.Quad(t.subject, t.predicate, t.object)

        self._forget_table()
        self.store.bulk_extend(quads())
        if index:
            self.index_relations()
        return count

    def index_relations(self, *, progress: Progress = QUIET, gathered: RelationRuns | GatherProcess | None = None,
                        triples: int | None = None) -> None:
        """(Re)build the relation index from the default graph, in bounded memory (`kg.relation_index`;
        `add_triples` and `load_file` do, unless told not to), into its table beside the store
        (`kg.relation_table`): from the runs `gathered` while every triple of it was loaded where they
        are exact (`gathering`), else by reading the graph back. A store on disk spills beside its
        data, where what a killed build left is removed first (no other process writes to an open store).
        `triples`: the store's size, where the caller has just counted it (counting reads every triple)."""
        stamp = str(len(self) if triples is None else triples)
        if isinstance(gathered, GatherProcess) and _waited(gathered, progress):
            self._table = RelationTable.adopt(gathered.table, directory=self.path, stamp=stamp)
        elif isinstance(gathered, RelationRuns) and gathered.finish():
            self._table = write_relation_index(gathered, directory=self.path, stamp=stamp, progress=progress)
        else:
            self._remove_spilled(keep=gathered.folder if gathered is not None else None)
            self._table = build_relation_index(self.store, directory=self.path, stamp=stamp, spill_dir=self.path,
                                               triples=int(stamp), progress=progress)
        self._table_checked = True
        drop_stored_index(self.store, ox.NamedNode(RELATION_INDEX))  # where a store made before the table kept it
        self._name_tables.clear()  # the names may have changed with the data

    @contextmanager
    def gathering(self, files: Sequence[Path] = ()) -> Iterator[RelationRuns | GatherProcess]:
        """What gathers the relation index from the N-Triples `load_file(..., gather=...)` loads, for
        `index_relations(gathered=...)`: the caller's to use only while the store holds nothing else.
        Reading the graph back out of the store costs more than loading it. With the `files` the
        store will be loaded from, in order, a store on disk gathers them in a process of its own
        (`GatherProcess`), beside the bulk loader; else the runs gather what the loader reads (`TeeReader`)."""
        self._remove_spilled()
        with gathering(self.path, plain=True) as runs:
            if not files or self.path is None:
                yield runs
                return
            process = GatherProcess([Path(f) for f in files], runs.folder)
            try:
                yield process
            finally:
                process.stop()

    def compact(self) -> float:
        """Compact the store's files (RocksDB's compaction: pyoxigraph's `Store.optimize`), a load's
        last step; returns its seconds. The bulk loader writes each batch as files of their own,
        which a read from disk searches one by one: at 10^7 triples compacting took 14-28 s (5-9% of
        the load), left 2.4 GB of 3.1, and cut the seconds of a walk's queries read cold from disk
        2.9x, though a walk served from the page cache ran the same (docs/scale.md). A store in
        memory has no files to compact."""
        if self.path is None:
            return 0.0
        start = time.perf_counter()
        self.store.optimize()
        return time.perf_counter() - start

    def _remove_spilled(self, *, keep: Path | None = None) -> None:
        """Remove what a killed build of the relation index left beside the store: its spilled runs, a table half-written."""
        for stale in self.path.glob(SPILL_PREFIX + "*") if self.path else ():
            if stale != keep:
                shutil.rmtree(stale, ignore_errors=True)
        if self.path is not None:
            RelationTable.remove_partial(self.path)

    @property
    def relation_table(self) -> RelationTable | None:
        """The relation index beside the store (`kg.relation_table`), or None for a store without one:
        made before the table, or changed since it was built (a store of another version: load it again)."""
        if not self._table_checked:
            self._table = RelationTable.open(self.path, stamp=str(len(self))) if self.path is not None else None
            self._table_checked = True
        return self._table

    def load_file(self, source: str | Path | BinaryIO, *, format: str, name: str | None = None, index: bool = True,
                  gather: RelationRuns | GatherProcess | None = None) -> None:
        """Parse N-Triples or Turtle straight into the store (pyoxigraph's bulk loader), from a file or
        from a binary stream (`name` says what it is in errors). A bad triple is an error naming its line.
        With `index` (the default), the relation index is rebuilt; without, the caller rebuilds it.
        `gather` (from `gathering`) is handed the N-Triples as they are read (Turtle makes it inexact)."""
        try:
            rdf_format = FORMATS[format]
        except KeyError:
            raise KGError(f"unknown RDF format {format!r}; choose one of {', '.join(FORMATS)}") from None
        streamed = not isinstance(source, (str, Path))
        self._forget_table()
        try:
            if isinstance(gather, RelationRuns) and format == "ntriples":
                with nullcontext(source) if streamed else open(source, "rb") as stream:
                    self.store.bulk_load(input=TeeReader(stream, gather), format=rdf_format)
                gather.finish()  # the file's last line, with no newline, is a line of its own
            elif streamed:
                self.store.bulk_load(input=source, format=rdf_format)
            else:
                self.store.bulk_load(path=str(source), format=rdf_format)
        except (SyntaxError, ValueError, OSError, EOFError) as exc:
            raise KGError(f"cannot load {name or source}: {exc}") from exc
        finally:
            if gather is not None and format != "ntriples":
                gather.exact = False
        if index:
            self.index_relations(gathered=gather)

    def _forget_table(self) -> None:
        """The data is about to change: its relation index no longer says what it holds (until indexed again)."""
        self._table, self._table_checked = None, True

    def __len__(self) -> int:
        """Triples in the default graph (a relation index that a store made before the table kept inside it is not
        counted), counted each time unless the store is open read-only."""
        if self._size is not None:
            return self._size
        counted = self.store.query(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{RELATION_INDEX}> {{ ?e ?p ?tokens }} }}")
        size = len(self.store) - int(next(iter(counted))["n"].value)  # counted in the engine: 0.06 s, not 7 s, at 10^6
        if self._read_only:
            self._size = size
        return size

    # Metadata kept beside an on-disk store.
    def read_meta(self) -> dict:
        if self.path is None or not (self.path / META_FILE).is_file():
            return {}
        return _read_meta(self.path)

    def write_meta(self, **fields: object) -> None:
        if self.path is None:
            return
        meta = {**self.read_meta(), **fields, "updated": time.strftime("%Y-%m-%dT%H:%M:%S")}
        meta = {key: value for key, value in meta.items() if value is not None}  # None: the field is gone
        self.store.flush()
        (self.path / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")


def _waited(gathered: GatherProcess, progress: Progress) -> bool:
    """Wait for the gathering process after the load (it reads the files at its own pace); whether its table is exact."""
    with progress.advancing(desc="relation index: gathered beside the load", total=1, unit="table") as advance:
        exact = gathered.finish()
        advance(1)
    return exact


def _read_meta(path: Path) -> dict:
    """The metadata kept beside the store in `path`; a file that is not a JSON object (cut short by
    a full disk, edited by hand) is a KGError that says so, not a parser's traceback."""
    meta_file, again = path / META_FILE, f"load the store again (`kgqa kg load SOURCE --store {path}`)"
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KGError(f"cannot read the store's metadata {meta_file}: {exc}; {again}") from exc
    if not isinstance(meta, dict):
        raise KGError(f"the store's metadata {meta_file} is not a JSON object; {again}")
    return meta
