"""Value types of the graph layer and the only two ways a term is written into SPARQL.

Every IRI goes through `sparql_iri` and every string through `sparql_string`; query
builders never paste text into a query any other way.
"""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kgqa.kg.errors import InvalidTermError

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"

# Characters that may not appear in an IRIREF (SPARQL 1.1 grammar, rule [139]) plus controls.
_IRI_FORBIDDEN = re.compile(r'[\x00-\x20<>"{}|^`\\\x7f-\x9f]')
_ABSOLUTE_IRI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20]+$")
_LANG_TAG = re.compile(r"^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
MAX_TERM_CHARS = 2_000


class Direction(str, enum.Enum):
    """Which way a relation is walked from an entity: entity -r-> x (OUT) or x -r-> entity (IN)."""

    OUT = "out"
    IN = "in"

    @property
    def reverse(self) -> Direction:
        return Direction.IN if self is Direction.OUT else Direction.OUT


class RdfTerm(NamedTuple):
    """One cell of a SPARQL result, independent of the backend that produced it (a tuple: cheap to make)."""

    kind: str  # "iri" | "literal" | "bnode"
    value: str
    datatype: str | None = None
    lang: str | None = None


@dataclass(frozen=True, slots=True, order=True)
class Node:
    """What a walk reaches: an entity (by profile id) or a literal value (years, numbers, dates).

    The film titled "1941" is `Node("1941")`; the year 1941 is `Node("1941", literal=True, datatype="gYear")`.
    """

    id: str
    literal: bool = False
    datatype: str | None = None
    name: str | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        """What to show: the entity's name, else its id; a literal's value."""
        return self.name or self.id

    @property
    def value(self) -> str | int | float:
        """The literal as a Python value where its datatype says so (ints, decimals); else its text."""
        if self.literal and self.datatype in {"integer", "int", "long", "gYear", "nonNegativeInteger"}:
            try:
                return int(self.id)
            except ValueError:
                return self.id
        if self.literal and self.datatype in {"decimal", "double", "float"}:
            try:
                return float(self.id)
            except ValueError:
                return self.id
        return self.id

    def __str__(self) -> str:
        return self.id


def normalize_label(text: str) -> str:
    """Label normal form for entity linking: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def check_text(text: object, *, what: str) -> str:
    """Refuse anything that is not a short, printable string before it nears a query."""
    if not isinstance(text, str):
        raise InvalidTermError(f"{what} must be a string, got {type(text).__name__}")
    if not text.strip():
        raise InvalidTermError(f"{what} is empty")
    if len(text) > MAX_TERM_CHARS:
        raise InvalidTermError(f"{what} is {len(text)} characters long (limit {MAX_TERM_CHARS})")
    if _CONTROL.search(text) or "\n" in text or "\r" in text:
        raise InvalidTermError(f"{what} contains control characters: {text[:80]!r}")
    return text


def check_iri(iri: str, *, what: str = "IRI") -> str:
    """An absolute IRI that can be written as <...> without escaping, or InvalidTermError."""
    check_text(iri, what=what)
    if _IRI_FORBIDDEN.search(iri) or not _ABSOLUTE_IRI.match(iri):
        raise InvalidTermError(f"{what} is not a safe absolute IRI: {iri[:120]!r}")
    return iri


def sparql_iri(iri: str) -> str:
    """`<iri>`, after validation."""
    return f"<{check_iri(iri)}>"


def sparql_string(text: str, *, lang: str | None = None) -> str:
    """A SPARQL string literal whose content is exactly `text` (escaped per ECHAR)."""
    check_text(text, what="literal")
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
    if lang is None:
        return f'"{escaped}"'
    if not _LANG_TAG.match(lang):
        raise InvalidTermError(f"bad language tag {lang!r}")
    return f'"{escaped}"@{lang}'


MAX_TEXT_WORD = 40  # characters of a text-search word
_TEXT_WORD = re.compile(rf"^[a-z0-9]{{1,{MAX_TEXT_WORD}}}\*?$")


def text_pattern(words: Sequence[str]) -> str:
    """A free-text pattern matching any of `words` (folded tokens; a trailing `*` for a prefix of at
    least 4 characters), as Virtuoso's `bif:contains` reads it, written as a SPARQL literal:
    `'"houston" OR "celt*"'`. Anything but lower-case letters and digits is refused."""
    if not words:
        raise InvalidTermError("a text search needs at least one word")
    for word in words:
        if not isinstance(word, str) or not _TEXT_WORD.match(word) or (word.endswith("*") and len(word) < 5):
            raise InvalidTermError(f"not a text-search word: {str(word)[:80]!r}")
    return "'" + " OR ".join(f'"{word}"' for word in words) + "'"
