"""The relation index of an embedded store, kept beside it in an SQLite table.

One row an entity: its N-Triples term (`<iri>`, or `_:id` for the store's own blank node) and the
relations around it as `>iri` (outgoing) and `<iri` (incoming) tokens, each kept as a number of the
table's list of tokens (4 bytes, not the relation's IRI again for every entity); and the list of
the relations seen joining two nodes (an IRI object), where the scan for mirrored relations starts.
A walk asks it for the entities a frontier reached, after the frontier's one query to the store.

Kept beside the store, not in it: a literal of pyoxigraph's named graph goes into six of its indexes,
so at 10^7 triples writing the index into the store took 49-58 s, 0.54 to 0.63 of the whole graph's
own bulk load (docs/scale.md); this table is written in key order, once, and read by key.

The table is written into `relations.sqlite` beside an on-disk store (atomically: a killed build
leaves nothing half-written) or kept in memory for an in-memory store, and stamped with what it was
built from (the store's triple count): a store changed since is read as having no index.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

from kgqa.kg.name_table import open_stamped

TABLE_FILE = "relations.sqlite"
LOOKUP_BATCH = 500  # terms a lookup statement (SQLite binds at most 32,766 parameters)
WRITE_BATCH = 50_000  # rows an executemany
TOKEN_TYPE = "I"  # a token's number: unsigned, 4 bytes (`array`)


class RelationTable:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self._db = connection
        self._lock = threading.Lock()  # one connection, shared by a walk's threads
        self._tokens = dict(connection.execute("SELECT id, token FROM tokens"))  # a few thousand relations, both ways

    @classmethod
    def open(cls, directory: Path, *, stamp: str) -> RelationTable | None:
        """The table beside the store in `directory` where it was built from the store as it is (`stamp`), else None."""
        kept = open_stamped(directory / TABLE_FILE, stamp)  # else the store reads as unindexed until it is indexed again
        return cls(kept) if kept is not None else None

    @classmethod
    def write(cls, entities: Iterable[tuple[bytes, bytes]], edges: Iterable[str], *, directory: Path | None,
              stamp: str) -> RelationTable:
        """A new table of `entities` ((N-Triples term, space-joined tokens), best in key order) and the
        relation IRIs `edges`, in `directory` (replacing the one there) or in memory."""
        if directory is None:
            return cls(_written(sqlite3.connect(":memory:", check_same_thread=False), entities, edges, stamp=stamp))
        target = directory / f"{TABLE_FILE}.partial-{os.getpid()}"
        write_file(target, entities, edges, stamp=stamp)
        return cls.adopt(target, directory=directory, stamp=stamp)

    @classmethod
    def adopt(cls, written: Path, *, directory: Path, stamp: str) -> RelationTable:
        """The table `write_file` wrote to `written` (elsewhere, or stamped before the store's size was
        known), stamped `stamp` and moved beside the store in `directory`, replacing the one there."""
        db = sqlite3.connect(str(written))
        db.execute("UPDATE meta SET value = ? WHERE key = 'built_from'", (stamp,))
        db.commit()
        db.close()
        written.replace(directory / TABLE_FILE)
        return cls(sqlite3.connect(f"file:{directory / TABLE_FILE}?mode=ro", uri=True, check_same_thread=False))

    @staticmethod
    def remove_partial(directory: Path) -> None:
        """Remove what a killed write of the table beside the store in `directory` left."""
        for path in directory.glob(TABLE_FILE + ".partial-*"):
            path.unlink(missing_ok=True)

    def relations(self, terms: Sequence[str]) -> dict[str, str]:
        """The tokens of each of `terms` (N-Triples: `<iri>`) the table holds; an entity without a row has none."""
        found: dict[str, str] = {}
        with self._lock:
            for start in range(0, len(terms), LOOKUP_BATCH):
                part = terms[start : start + LOOKUP_BATCH]
                marks = ",".join("?" * len(part))
                found.update(self._db.execute(f"SELECT entity, tokens FROM relations WHERE entity IN ({marks})", part))
        return {entity: self._decoded(tokens) for entity, tokens in found.items()}

    def _decoded(self, packed: bytes) -> str:
        return " ".join(self._tokens[i] for i in array(TOKEN_TYPE, packed))

    def edge_relations(self) -> list[str]:
        """The relation IRIs seen joining two nodes, in order."""
        with self._lock:
            return [relation for (relation,) in self._db.execute("SELECT relation FROM edges ORDER BY relation")]

    def entities(self) -> dict[str, set[str]]:
        """Every row, as {term: tokens}: for tests and small stores."""
        with self._lock:
            rows = self._db.execute("SELECT entity, tokens FROM relations").fetchall()
        return {entity: set(self._decoded(tokens).split()) for entity, tokens in rows}


def write_file(path: Path, entities: Iterable[tuple[bytes, bytes]], edges: Iterable[str], *, stamp: str) -> None:
    """A table of `entities` and `edges` written into a new file `path` (for `RelationTable.adopt`)."""
    path.unlink(missing_ok=True)
    _written(sqlite3.connect(str(path)), entities, edges, stamp=stamp).close()


def _written(db: sqlite3.Connection, entities: Iterable[tuple[bytes, bytes]], edges: Iterable[str], *, stamp: str) -> sqlite3.Connection:
    db.execute("PRAGMA journal_mode = OFF")  # a killed write leaves a partial file, never the table
    db.execute("PRAGMA synchronous = OFF")
    db.execute("CREATE TABLE relations (entity TEXT PRIMARY KEY, tokens BLOB NOT NULL) WITHOUT ROWID")
    db.execute("CREATE TABLE tokens (id INTEGER PRIMARY KEY, token TEXT NOT NULL)")
    db.execute("CREATE TABLE edges (relation TEXT PRIMARY KEY) WITHOUT ROWID")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    numbers: dict[bytes, int] = {}
    rows = ((entity.decode(), array(TOKEN_TYPE, [numbers.setdefault(t, len(numbers)) for t in tokens.split(b" ")]).tobytes())
            for entity, tokens in entities)
    while batch := [row for _, row in zip(range(WRITE_BATCH), rows)]:
        db.executemany("INSERT INTO relations VALUES (?, ?)", batch)
    db.executemany("INSERT INTO tokens VALUES (?, ?)", ((number, token.decode()) for token, number in numbers.items()))
    db.executemany("INSERT INTO edges VALUES (?)", ((relation,) for relation in sorted(set(edges))))
    db.execute("INSERT INTO meta VALUES ('built_from', ?)", (stamp,))
    db.commit()
    return db
