"""The one shape every loader produces: a `dspy.Example` with question, topic entities and gold answers."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import dspy

from kgqa.data.questions import MAX_QUESTION_CHARS, question_problem  # noqa: F401 (the one question check)
from kgqa.errors import KGQAError
from kgqa.progress import QUIET, Progress

INPUT_FIELDS = ("question", "topic_entities")


class DatasetError(KGQAError, ValueError):
    """A dataset file or row that cannot be read; the message names the file and line."""


def make_example(
    *,
    source: str,
    id: str,
    question: object,
    topic_entities: list[str],
    answers: list[str],
    topic_names: list[str] | None = None,
    aliases: Mapping[str, list[str]] | None = None,
    **extra: object,
) -> dspy.Example:
    """Validate one row and build its Example; `source` ("file:line") prefixes every error."""
    problem = question_problem(question, topic_entities)
    if problem:
        raise DatasetError(f"{source}: {problem}")
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise DatasetError(f"{source}: answers must be a list of strings, got {answers!r}")
    if topic_names and not (isinstance(topic_names, list) and all(isinstance(n, str) for n in topic_names)):
        raise DatasetError(f"{source}: topic names must be a list of strings")
    if aliases and not (isinstance(aliases, Mapping) and all(
            isinstance(v, list) and all(isinstance(a, str) for a in v) for v in aliases.values())):
        raise DatasetError(f"{source}: aliases must be an object of answer -> list of strings")
    names = list(topic_names) if topic_names else list(topic_entities)
    if len(names) != len(topic_entities):
        raise DatasetError(f"{source}: {len(topic_entities)} topic entities but {len(names)} topic names")
    return dspy.Example(
        id=str(id),
        question=question.strip(),
        topic_entities=list(topic_entities),
        topic_names=names,
        answers=[a.strip() for a in answers if a.strip()],
        aliases={k: list(v) for k, v in (aliases or {}).items()},
        source=source,
        **extra,
    ).with_inputs(*INPUT_FIELDS)


def bad_row(*, source: str, id: str, problem: str, question: object = None) -> dspy.Example:
    """The Example of a row that cannot be asked (not JSON, a field missing, a bad question): it
    carries `bad_row`, the reason, so evaluation writes its record without asking anything. Its
    question keeps its first `MAX_QUESTION_CHARS` characters: enough to say which one it was."""
    text = question[:MAX_QUESTION_CHARS] if isinstance(question, str) else ""
    return dspy.Example(id=str(id), question=text, topic_entities=[], topic_names=[], answers=[], aliases={},
                        source=source, bad_row=problem).with_inputs(*INPUT_FIELDS)


def numbered_lines(path: str | Path, *, errors: str = "strict", progress: Progress = QUIET) -> Iterator[tuple[str, str]]:
    """(`file:line`, line without its newline) for each non-blank line (gunzipped where the name ends
    in .gz); an unreadable file is a DatasetError. `errors="surrogateescape"` reads bytes that are not
    UTF-8 as lone surrogates, which the question check then names, instead of failing the file."""
    path = Path(path)
    with open_bytes(path, progress=progress) as raw, io.TextIOWrapper(raw, encoding="utf-8", errors=errors) as handle:
        try:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    yield f"{path}:{number}", line.rstrip("\n")
        except (OSError, EOFError) as exc:  # a damaged or cut gzip stream
            raise DatasetError(f"cannot read {path}: {exc}") from exc


@contextmanager
def open_bytes(path: str | Path, *, progress: Progress = QUIET) -> Iterator[BinaryIO]:
    """`path`'s bytes, gunzipped where its name ends in .gz, with a bar of the file's bytes read."""
    path = Path(path)
    try:
        raw = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with raw, progress.reading(raw, desc=path.name, total=path.stat().st_size) as counted:
        yield gzip.GzipFile(fileobj=counted) if path.suffix.lower() == ".gz" else counted


def json_row(line: str, source: str) -> dict:
    """One JSONL line as an object; anything else (not JSON, nested too deep, not an object) is a DatasetError."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{source}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise DatasetError(f"{source}: JSON nested too deep") from None
    if not isinstance(row, dict):
        raise DatasetError(f"{source}: expected a JSON object, got {type(row).__name__}")
    return row


def read_json(path: str | Path) -> object:
    """A whole JSON file; unreadable or invalid JSON is a DatasetError naming the file and line."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None


def read_json_list(path: str | Path) -> list:
    """A JSON file holding a list of objects (the ToG/PoG question files)."""
    rows = read_json(path)
    if not isinstance(rows, list):
        raise DatasetError(f"{path}: expected a JSON list of questions, got {type(rows).__name__}")
    return rows


def require(row: Mapping, key: str, source: str) -> object:
    """row[key], or a DatasetError that names the missing field."""
    if key not in row:
        raise DatasetError(f"{source}: missing field {key!r} (fields: {', '.join(sorted(map(str, row))) or 'none'})")
    return row[key]
