"""The names of an embedded store in an SQLite full-text table on disk beside it: the linker's
names at Freebase size, where an in-memory index of every name does not fit (`TooManyNames`).

The table is built once per store, streamed from the store's name triples (no list of them in
memory), into `names.sqlite` beside an on-disk store (atomically: a killed build leaves nothing
half-written) or in memory for an in-memory one, and rebuilt when the store's size, the name
predicates or the language change. `search(words)` returns the (entity IRI, name) pairs whose name
holds one of the words, best BM25 matches first: what `bif:contains` gives on a Virtuoso.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyoxigraph as ox

TABLE_FILE = "names.sqlite"
BATCH = 10_000  # names written a transaction


def open_stamped(path: Path, stamp: str) -> sqlite3.Connection | None:
    """A table file kept beside a store, opened read-only where its `meta` says it was built from
    `stamp`; None where it is missing, built from something else, damaged or another file."""
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        if db.execute("SELECT value FROM meta WHERE key = 'built_from'").fetchone() == (stamp,):
            return db
        db.close()
    except sqlite3.DatabaseError:
        pass
    return None


class NameTable:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self._db = connection

    @classmethod
    def build(cls, store: ox.Store, *, directory: Path | None, predicates: Sequence[str], lang: str | None,
              stamp: str) -> NameTable:
        """The table for these name predicates and language: opened from `directory` where it was
        built with the same `stamp`, else built (and kept there)."""
        key = f"{stamp}|{' '.join(predicates)}|{lang}"
        path = directory / TABLE_FILE if directory is not None else None
        kept = open_stamped(path, key) if path is not None else None
        if kept is not None:
            return cls(kept)
        target = path.with_suffix(f".partial-{os.getpid()}") if path is not None else None
        db = sqlite3.connect(str(target) if target else ":memory:", check_same_thread=False)
        db.execute("CREATE VIRTUAL TABLE names USING fts5(name, entity UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')")
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        rows = _names(store, predicates, lang)
        while batch := [row for _, row in zip(range(BATCH), rows)]:
            db.executemany("INSERT INTO names (name, entity) VALUES (?, ?)", batch)
        db.execute("INSERT INTO meta VALUES ('built_from', ?)", (key,))
        db.commit()
        if target is None:
            return cls(db)
        db.close()
        target.replace(path)
        return cls(sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False))

    def search(self, words: Sequence[str], *, limit: int) -> list[tuple[str, str]]:
        """(entity IRI, name) whose name holds one of `words` (any case, accents or none; `jamai*`: a
        word beginning so), best first."""
        terms = [_term(w) for w in words if w.strip("* ")]
        if not terms:
            return []
        match = " OR ".join(terms)
        rows = self._db.execute("SELECT entity, name FROM names WHERE names MATCH ? ORDER BY rank LIMIT ?", (match, int(limit)))
        return list(rows)

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM names").fetchone()[0]


def _term(word: str) -> str:
    """One word of an FTS5 query, quoted; a trailing `*` asks for the names holding a word it begins
    (`"jamai"*`: written inside the quotes, FTS5 would look for the word "jamai" itself)."""
    stem = word.rstrip("*")
    return '"' + stem.replace('"', '""') + '"' + ("*" if stem != word else "")


def _names(store: ox.Store, predicates: Sequence[str], lang: str | None) -> Iterator[tuple[str, str]]:
    """(name, entity IRI) of every IRI named through the predicates, in the language or untagged."""
    for predicate in predicates:
        for quad in store.quads_for_pattern(None, ox.NamedNode(predicate), None, ox.DefaultGraph()):
            subject, name = quad.subject, quad.object
            if not isinstance(subject, ox.NamedNode) or not isinstance(name, ox.Literal):
                continue
            tag = name.language
            if lang is None or not tag or tag == lang or tag.startswith(lang + "-"):
                yield name.value, subject.value
