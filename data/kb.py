"""Loading graph sources (RDF files, MetaQA's kb.txt, RoG graphs) into an embedded store.

Files are streamed (gzipped where the name ends in .gz), with a bar of the bytes read; a bad triple
is an error naming its line. While a load runs, the store's metadata says so (`loading`): a store
whose load was killed refuses to open until the same load is run again."""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from kgqa.data.examples import DatasetError, open_bytes
from kgqa.data.metaqa import kb_triples
from kgqa.data.rog import graph_triples, load_rog
from kgqa.kg import EmbeddedStore, KnowledgeGraph, get_profile
from kgqa.kg.profiles import FREEBASE_NS
from kgqa.kg.relation_index import GatherProcess, RelationRuns
from kgqa.progress import QUIET, Progress

FORMATS = ("ntriples", "turtle", "metaqa", "rog")
_SUFFIXES = {".nt": "ntriples", ".ttl": "turtle", ".txt": "metaqa", ".parquet": "rog", ".jsonl": "rog", ".json": "rog"}
_PROFILE_OF_FORMAT = {"metaqa": "metaqa", "rog": "rog"}


def guess_format(source: str | Path) -> str:
    path = Path(source)
    suffix = (path.with_suffix("") if path.suffix.lower() == ".gz" else path).suffix.lower()
    if suffix not in _SUFFIXES:
        raise DatasetError(f"cannot tell the format of {source}; pass --format ({', '.join(FORMATS)})")
    return _SUFFIXES[suffix]


@dataclass(frozen=True)
class LoadReport:
    source: str
    format: str
    triples: int  # added by this source
    seconds: float
    total: int  # in the store after it


def load_source(store: EmbeddedStore, source: str | Path, *, format: str | None = None,
                gather: RelationRuns | GatherProcess | None = None, progress: Progress = QUIET) -> LoadReport:
    """Add one source to the store; `format` is guessed from the file suffix when not given. Its
    triples are handed to `gather` (`EmbeddedStore.gathering`, given every source of an empty store)
    where the relation index can be gathered as the source is read; the caller indexes the store
    after the last source (`build_store`)."""
    format = format or guess_format(source)
    if format not in FORMATS:
        raise DatasetError(f"unknown KG format {format!r}; choose one of {', '.join(FORMATS)}")
    if format != "rog" and not Path(source).is_file():
        raise DatasetError(f"no such file: {source}")
    before, start = len(store), time.perf_counter()
    if format in ("ntriples", "turtle"):
        with open_bytes(source, progress=progress) as handle:
            store.load_file(handle, format=format, name=str(source), index=False, gather=gather)
    else:
        if gather is not None:
            gather.exact = False  # triples made in Python: indexed by reading the graph back
        if format == "metaqa":
            store.add_triples(kb_triples(source, progress=progress), index=False)
        else:
            store.add_triples((t for ex in load_rog(source) for t in graph_triples(ex.graph)), index=False)
    after = len(store)
    return LoadReport(str(source), format, after - before, time.perf_counter() - start, after)


def guess_profile(store: EmbeddedStore, formats: list[str]) -> str:
    """`metaqa`/`rog` by source format; RDF with Freebase names is `freebase`; else `generic`."""
    for format in formats:
        if format in _PROFILE_OF_FORMAT:
            return _PROFILE_OF_FORMAT[format]
    rows = store.select(f"SELECT ?s WHERE {{ ?s <{FREEBASE_NS}type.object.name> ?o }} LIMIT 1")
    return "freebase" if rows else "generic"


def build_store(
    sources: list[str | Path], *, path: str | Path | None = None, format: str | None = None, profile: str | None = None,
    progress: Progress = QUIET,
) -> tuple[EmbeddedStore, str, list[LoadReport]]:
    """Load sources into a new store (on disk when `path` is given), compact its files
    (`EmbeddedStore.compact`), index its relations once, and record its metadata (the index's seconds
    counted in the load's, the compaction's apart). The compaction comes before the index: a process
    gathering the index beside the load (`EmbeddedStore.gathering`) finishes meanwhile."""
    store = EmbeddedStore.open(path, create=True) if path is not None else EmbeddedStore()
    store.write_meta(loading=[str(source) for source in sources])  # until the last source is in
    files = [Path(s) for s in sources if (format or guess_format(s)) == "ntriples" and Path(s).is_file()]
    gathered = store.gathering(files if len(files) == len(sources) else ())  # N-Triples files: gathered beside the load
    with gathered if len(store) == 0 else nullcontext() as runs:  # a load run again after a kill reads back
        reports = [load_source(store, source, format=format, gather=runs, progress=progress) for source in sources]
        with progress.advancing(desc="compacting", total=1, unit="store") as advance:
            compacted = store.compact()
            advance(1)
        start = time.perf_counter()
        store.index_relations(progress=progress, gathered=runs, triples=reports[-1].total if reports else None)
        indexed = time.perf_counter() - start
    profile = get_profile(profile).name if profile else guess_profile(store, [r.format for r in reports])
    store.write_meta(
        profile=profile,
        sources=[{"source": r.source, "format": r.format, "triples": r.triples} for r in reports],
        load_seconds=round(sum(r.seconds for r in reports) + indexed, 3),
        compact_seconds=round(compacted, 3),
        loading=None,
    )
    return store, profile, reports


def store_stats(kg: KnowledgeGraph) -> dict[str, int]:
    """Triples, entities (distinct profile entities in subject or object position) and relations."""
    backend = kg.backend
    triples = int(backend.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")[0]["n"].value)
    nodes = backend.select("SELECT DISTINCT ?e WHERE { { ?e ?p ?o } UNION { ?s ?p ?e FILTER(isIRI(?e)) } }")
    predicates = backend.select("SELECT DISTINCT ?p WHERE { ?s ?p ?o }")
    profile = kg.profile
    return {
        "triples": triples,
        "entities": sum(1 for row in nodes if profile.entity_id(row["e"].value) is not None),
        "relations": sum(1 for row in predicates if profile.relation_id(row["p"].value) is not None),
    }
