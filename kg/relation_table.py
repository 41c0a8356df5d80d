"""The relation index of an embedded store, kept beside it.

For each entity: a 64-bit key of its N-Triples term (`<iri>`, or `_:id` for the store's own blank
node; `term_keys`) and the relations around it as `>iri` (outgoing) and `<iri` (incoming) tokens,
each kept as a 4-byte number of the table's list of tokens; and the list of the relations seen
joining two nodes (an IRI object), where the scan for mirrored relations starts. A walk asks it for
the entities a frontier reached, after the frontier's one query to the store.

The key is a hash of the term's bytes, which the gathering computes for a whole chunk of N-Triples
at once (`kg.relation_index`), so that no term is ever a Python object there, and a lookup for the
terms it asks. The term itself is not kept: two terms of one key would share their relations, those
of both listed for each (a hop along one the other has then finds nothing). At 64 bits the chance
that any two of 10^8 entities do is about one in 3,700.

Three arrays hold it, each written in key order once, in a file of its own beside the store and read
mapped (`relations.sqlite.keys`, `.ends`, `.numbers`: every key, sorted; where each entity's tokens
end; the tokens), found by binary search; a small SQLite file beside them (`relations.sqlite`) keeps
the token list, the relations joining two nodes, the arrays' sizes and the stamp. At 10^7 triples:
2.3 million entities, 95 MB, written in under a second. One SQLite row an entity took 7 s to
write, 64 entities a row was written in 0.6 s but looked up 2-3 times slower (docs/scale.md).

Kept beside the store, not in it: a literal of pyoxigraph's named graph goes into six of its
indexes, so at 10^7 triples writing the index into the store took 49-58 s, 0.54 to 0.63 of the
whole graph's own bulk load.

The table is written beside an on-disk store (the arrays moved into place first, the SQLite file
that says what they are last: a killed write leaves nothing that reads as the table) or kept in
memory for an in-memory store, and stamped with what it was built from (the store's triple count)
and its format: a store changed since, or a table of another format, reads as no index.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from contextlib import ExitStack, closing
from pathlib import Path

import numpy as np

from kgqa.kg.name_table import open_stamped

TABLE_FILE = "relations.sqlite"
FORMAT = "arrays of term keys, 2"  # in the stamp: a table of an older format reads as no index
ARRAYS = {"keys": "<i8", "ends": "<i8", "numbers": "<u4"}  # the table's arrays, each in a file of its own: `relations.sqlite.keys`, ...
_BASE = np.uint64(0x100000001B3)  # the polynomial hash's base (odd: invertible modulo 2**64)
_INVERSE = np.uint64(pow(int(_BASE), -1, 1 << 64))
_LENGTH = np.uint64(0x9E3779B97F4A7C15)


class TermHasher:
    """64-bit keys of terms cut out of one byte buffer, all at once: a polynomial hash of each term's
    bytes from prefix sums (modulo 2**64, as numpy's unsigned arithmetic wraps), its length mixed in
    and the bits spread (splitmix64's finalizer), read as signed 64-bit integers (the arrays' keys).
    Keeps the powers of the base for the longest buffer it was given."""

    def __init__(self) -> None:
        self._powers = np.ones(1, np.uint64)
        self._inverses = np.ones(1, np.uint64)

    def keys(self, buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The keys of the terms `buffer[starts[i]:ends[i]]` (`buffer` of uint8)."""
        self._grow(len(buffer) + 1)
        with np.errstate(over="ignore"):
            prefix = np.zeros(len(buffer) + 1, np.uint64)
            np.cumsum(buffer * self._powers[: len(buffer)], out=prefix[1:])
            x = (prefix[ends] - prefix[starts]) * self._inverses[starts]
            x ^= (ends - starts).astype(np.uint64) * _LENGTH
            x ^= x >> np.uint64(30)
            x *= np.uint64(0xBF58476D1CE4E5B9)
            x ^= x >> np.uint64(27)
            x *= np.uint64(0x94D049BB133111EB)
            x ^= x >> np.uint64(31)
        return x.view(np.int64)

    def _grow(self, size: int) -> None:
        if len(self._powers) >= size:
            return
        size = max(size, 2 * len(self._powers))
        with np.errstate(over="ignore"):  # 1, B, B**2, ... and the inverse's, wrapped
            self._powers = np.concatenate(([np.uint64(1)], np.cumprod(np.full(size - 1, _BASE, np.uint64))))
            self._inverses = np.concatenate(([np.uint64(1)], np.cumprod(np.full(size - 1, _INVERSE, np.uint64))))


def term_keys(terms: Sequence[str], *, hasher: TermHasher | None = None) -> np.ndarray:
    """The table's keys of N-Triples `terms` (`<iri>`, `_:id`), as `TermHasher` gives them in a chunk."""
    encoded = [term.encode() for term in terms]
    lengths = np.fromiter((len(e) for e in encoded), np.int64, len(encoded))
    ends = np.cumsum(lengths)
    buffer = np.frombuffer(b"".join(encoded), np.uint8)
    return (hasher or TermHasher()).keys(buffer, ends - lengths, ends)


class RelationTable:
    """Three arrays, read mapped from files beside the store (or held in memory): every entity's key,
    sorted; where each one's tokens end; the tokens, as numbers of the list `tokens`. A lookup finds
    its keys by binary search (numpy), then slices their tokens."""

    def __init__(self, keys: np.ndarray, ends: np.ndarray, numbers: np.ndarray, tokens: Sequence[str], edges: Sequence[str]) -> None:
        self._keys, self._ends, self._numbers = keys, ends, numbers
        self._tokens, self._edges = list(tokens), sorted(edges)
        self._hasher = TermHasher()
        self._lock = threading.Lock()  # the hasher's powers, shared by a walk's threads

    @classmethod
    def open(cls, directory: Path, *, stamp: str) -> RelationTable | None:
        """The table beside the store in `directory` where it was built from the store as it is (`stamp`), else None."""
        db = open_stamped(directory / TABLE_FILE, _stamped(stamp))  # else the store reads as unindexed until indexed again
        if db is None:
            return None
        with closing(db):
            sizes = dict(db.execute("SELECT name, size FROM arrays"))
            tokens = [token for (token,) in db.execute("SELECT token FROM tokens ORDER BY id")]
            edges = [relation for (relation,) in db.execute("SELECT relation FROM edges")]
        arrays = []
        for name, dtype in ARRAYS.items():
            path = directory / f"{TABLE_FILE}.{name}"
            if not path.is_file() or path.stat().st_size != sizes.get(name, -1) * np.dtype(dtype).itemsize:
                return None  # a write killed between its files: read as unindexed
            arrays.append(np.memmap(path, dtype=dtype, mode="r") if sizes[name] else np.empty(0, dtype))
        return cls(*arrays, tokens, edges)

    @classmethod
    def write(cls, pairs: Iterable[tuple[np.ndarray, np.ndarray]], tokens: Sequence[str], edges: Iterable[str], *,
              directory: Path | None, stamp: str) -> RelationTable:
        """A new table of `pairs` (arrays of entity keys and token numbers, each pair once, sorted by key
        then token, each array's keys past the last's), the list `tokens` those numbers index and the
        relation IRIs `edges`, in `directory` (replacing the one there) or in memory."""
        if directory is None:
            parts = [_entities(keys, numbers) for keys, numbers in pairs]
            keys, ends, numbers = (np.concatenate([p[i] for p in parts] or [np.empty(0, d)]).astype(d)
                                   for i, d in enumerate(ARRAYS.values()))
            return cls(keys, _running(ends, parts), numbers, tokens, list(set(edges)))
        target = directory / f"{TABLE_FILE}.partial-{os.getpid()}"
        write_file(target, pairs, tokens, edges, stamp=stamp)
        return cls.adopt(target, directory=directory, stamp=stamp)

    @classmethod
    def adopt(cls, written: Path, *, directory: Path, stamp: str) -> RelationTable:
        """The table `write_file` wrote to `written` (and its arrays beside it; elsewhere, or stamped
        before the store's size was known), stamped `stamp` and moved beside the store in `directory`,
        replacing the one there: the arrays first, the file that says what they are last."""
        with closing(sqlite3.connect(str(written))) as db:
            db.execute("UPDATE meta SET value = ? WHERE key = 'built_from'", (_stamped(stamp),))
            db.commit()
        for name in ARRAYS:
            written.with_name(f"{written.name}.{name}").replace(directory / f"{TABLE_FILE}.{name}")
        written.replace(directory / TABLE_FILE)
        table = cls.open(directory, stamp=stamp)
        if table is None:
            raise OSError(f"the relation table written to {directory} does not read back")
        return table

    @staticmethod
    def remove_partial(directory: Path) -> None:
        """Remove what a killed write of the table beside the store in `directory` left."""
        for path in directory.glob(TABLE_FILE + ".partial-*"):
            path.unlink(missing_ok=True)

    def relations(self, terms: Sequence[str]) -> dict[str, str]:
        """The tokens of each of `terms` (N-Triples: `<iri>`) the table holds; an entity without a row has none."""
        if not terms or not len(self._keys):
            return {}
        with self._lock:
            keys = term_keys(terms, hasher=self._hasher)
        at = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        found = {}
        held = np.flatnonzero(self._keys[at] == keys)
        starts = np.where(at[held] > 0, self._ends[np.maximum(at[held] - 1, 0)], 0).tolist()
        for i, start, end in zip(held.tolist(), starts, self._ends[at[held]].tolist()):
            found[terms[i]] = " ".join([self._tokens[t] for t in self._numbers[start:end].tolist()])
        return found

    def edge_relations(self) -> list[str]:
        """The relation IRIs seen joining two nodes, in order."""
        return list(self._edges)

    def entities(self) -> dict[int, set[str]]:
        """Every row, as {key: tokens} (`term_keys` gives a term's): for tests and small stores."""
        starts = np.concatenate(([0], self._ends[:-1])).astype(np.int64)
        return {key: {self._tokens[t] for t in self._numbers[start:end].tolist()}
                for key, start, end in zip(self._keys.tolist(), starts.tolist(), self._ends.tolist())}


def _entities(keys: np.ndarray, numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct keys of sorted pairs, where each one's tokens end (counted from 0), the tokens."""
    if not len(keys):
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint32)
    new = np.flatnonzero(np.concatenate((keys[1:] != keys[:-1], [True])))  # each key's last pair
    return keys[new], new + 1, numbers


def _running(ends: np.ndarray, parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> np.ndarray:
    """Each part's ends counted on from the tokens of the parts before it."""
    offsets = np.repeat(np.cumsum([0, *(len(p[2]) for p in parts)])[:-1], [len(p[1]) for p in parts])
    return ends + offsets.astype(np.int64)


def write_file(path: Path, pairs: Iterable[tuple[np.ndarray, np.ndarray]], tokens: Sequence[str], edges: Iterable[str], *,
               stamp: str) -> None:
    """A table of `pairs`, `tokens` and `edges` written into a new file `path` and its arrays beside it
    (`path.keys`, ...; for `RelationTable.adopt`), a key range of pairs at a time."""
    sizes = dict.fromkeys(ARRAYS, 0)
    with ExitStack() as stack:
        out = {name: stack.enter_context(path.with_name(f"{path.name}.{name}").open("wb")) for name in ARRAYS}
        for keys, numbers in pairs:
            keys, ends, numbers = _entities(keys, numbers)
            for name, array in (("keys", keys), ("ends", ends + sizes["numbers"]), ("numbers", numbers)):
                out[name].write(array.astype(ARRAYS[name]).tobytes())
                sizes[name] += len(array)
    path.unlink(missing_ok=True)
    with closing(sqlite3.connect(str(path))) as db:
        db.execute("CREATE TABLE arrays (name TEXT PRIMARY KEY, size INTEGER NOT NULL)")
        db.execute("CREATE TABLE tokens (id INTEGER PRIMARY KEY, token TEXT NOT NULL)")
        db.execute("CREATE TABLE edges (relation TEXT PRIMARY KEY) WITHOUT ROWID")
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        db.executemany("INSERT INTO arrays VALUES (?, ?)", sizes.items())
        db.executemany("INSERT INTO tokens VALUES (?, ?)", enumerate(tokens))
        db.executemany("INSERT INTO edges VALUES (?)", ((relation,) for relation in sorted(set(edges))))
        db.execute("INSERT INTO meta VALUES ('built_from', ?)", (_stamped(stamp),))
        db.commit()


def _stamped(stamp: str) -> str:
    return f"{stamp}|{FORMAT}"
