"""What a question may be: the one check `ask`, `evaluate`, `serve` and the walk all use.

A question is text of ordinary characters, not empty and not over-long, with at most a few topic
entities of bounded length. Anything else ends as `bad_question` with the reason, before any LM or
KG call: text that is not valid Unicode (a lone surrogate, which JSON allows but UTF-8 cannot
encode), control characters other than whitespace (C0 and DEL: NUL, ESC, ...), bidirectional
overrides (which make a question read differently from what it holds), and topic entities too many,
too long or not text. C1 controls (U+0080-U+009F) are let through: real question files hold them
as mojibake ("UTC\u00e2\u0088\u009205:00" in CWQ, UTF-8 read as Latin-1), and such a question
can still be asked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MAX_QUESTION_CHARS = 4_000
MAX_TOPIC_ENTITIES = 32
MAX_TOPIC_CHARS = 500
_WHITESPACE = {"\t", "\n", "\r"}
_BIDI_CONTROLS = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


@dataclass(frozen=True)
class QuestionLimits:
    """How long a question and how many and how long its topic entities may be (serving sets its own)."""

    question_chars: int = MAX_QUESTION_CHARS
    topic_entities: int = MAX_TOPIC_ENTITIES
    topic_chars: int = MAX_TOPIC_CHARS


def few(items: Iterable[object], *, shown: int = 3, width: int = 60) -> str:
    """A few items for a message, each cut to `width` characters: "'x0', 'x1', 'x2' and 9,997 more"."""
    items = list(items)
    named = ", ".join(_short(repr(item), width) for item in items[:shown])
    return f"{named} and {len(items) - shown:,} more" if len(items) > shown else named


def text_problem(text: str, what: str = "the question") -> str | None:
    """Why `text` is not plain text (a lone surrogate, a control character, a bidi override), or None."""
    for position, char in enumerate(text):
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF:
            return f"{what} is not valid Unicode (a lone surrogate, U+{code:04X}, at character {position})"
        if char in _BIDI_CONTROLS:
            return f"{what} holds a bidirectional control character (U+{code:04X}) at character {position}"
        if (code < 0x20 or code == 0x7F) and char not in _WHITESPACE:
            return f"{what} holds a control character (U+{code:04X}) at character {position}"
    return None


def question_problem(question: object, topic_entities: object = None, *, limits: QuestionLimits = QuestionLimits()) -> str | None:
    """Why a question (and its topic entities, when given) cannot be asked, or None."""
    if not isinstance(question, str) or not question.strip():
        return "the question is missing or empty"
    if len(question) > limits.question_chars:
        return f"the question is {len(question):,} characters long (limit {limits.question_chars:,})"
    problem = text_problem(question)
    if problem or topic_entities is None:
        return problem
    if not isinstance(topic_entities, (list, tuple)):
        return f"topic entities must be a list of strings, not {type(topic_entities).__name__}"
    if len(topic_entities) > limits.topic_entities:
        return f"{len(topic_entities):,} topic entities (limit {limits.topic_entities})"
    for n, entity in enumerate(topic_entities):
        if not isinstance(entity, str) or not entity.strip():
            return f"topic entity {n} is not a non-empty string"
        if len(entity) > limits.topic_chars:
            return f"topic entity {n} is {len(entity):,} characters long (limit {limits.topic_chars})"
        problem = text_problem(entity, f"topic entity {n}")
        if problem:
            return problem
    return None


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
