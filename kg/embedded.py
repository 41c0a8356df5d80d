"""The embedded backend: a pyoxigraph store, in memory or in a directory that reopens instantly."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

import pyoxigraph as ox

from kg.errors import KGError
from kg.terms import RDF_LANG_STRING, RdfTerm

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

    def __init__(self, store: ox.Store | None = None, *, path: Path | None = None) -> None:
        self.store = store if store is not None else ox.Store()
        self.path = path

    @classmethod
    def open(cls, path: str | Path, *, create: bool = False) -> EmbeddedStore:
        path = Path(path)
        if not create and not (path / META_FILE).is_file():
            raise KGError(f"no kgqa store at {path} (create one with `kgqa kg load SOURCE --store {path}`)")
        path.mkdir(parents=True, exist_ok=True)
        try:
            return cls(ox.Store(str(path)), path=path)
        except OSError as exc:
            raise KGError(f"cannot open the store at {path}: {exc}") from exc

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

    def add_triples(self, triples: Iterable[ox.Triple]) -> int:
        """Add triples (pyoxigraph terms) to the default graph; returns how many were given."""
        count = 0

        def quads():
            nonlocal count
            for t in triples:
                count += 1
                yield ox.Quad(t.subject, t.predicate, t.object)

        self.store.bulk_extend(quads())
        return count

    def load_file(self, path: str | Path, *, format: str) -> None:
        """Parse an N-Triples or Turtle file straight into the store."""
        try:
            rdf_format = FORMATS[format]
        except KeyError:
            raise KGError(f"unknown RDF format {format!r}; choose one of {', '.join(FORMATS)}") from None
        try:
            self.store.bulk_load(path=str(path), format=rdf_format)
        except (SyntaxError, ValueError, OSError) as exc:
            raise KGError(f"cannot load {path}: {exc}") from exc

    def __len__(self) -> int:
        return len(self.store)

    # Metadata kept beside an on-disk store.
    def read_meta(self) -> dict:
        if self.path is None or not (self.path / META_FILE).is_file():
            return {}
        return json.loads((self.path / META_FILE).read_text())

    def write_meta(self, **fields: object) -> None:
        if self.path is None:
            return
        meta = {**self.read_meta(), **fields, "updated": time.strftime("%Y-%m-%dT%H:%M:%S")}
        self.store.flush()
        (self.path / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
