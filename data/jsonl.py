"""kgqa's own JSONL question format (the demo splits use it); also reads MetaQA-style JSONL.

A row: `{"question": ..., "topic_entities": [...] | "topic_entity": str | {id: name}, "answers": [...]}`
with optional `id`, `topic_names`, `aliases` ({answer: [alias, ...]}) and any metadata.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dspy

from kgqa.data.examples import DatasetError, bad_row, json_row, make_example, numbered_lines, require

_KNOWN = {"id", "question", "topic_entities", "topic_entity", "topic_names", "answers", "answer", "aliases"}


def topics_of(row: dict, source: str) -> tuple[list[str], list[str] | None]:
    """Topic entity ids and names from `topic_entities` (list), or `topic_entity` (str or {id: name})."""
    if "topic_entities" in row:
        ids = row["topic_entities"]
        if not isinstance(ids, list):
            raise DatasetError(f"{source}: topic_entities must be a list, got {type(ids).__name__}")
        return ids, row.get("topic_names")
    topic = require(row, "topic_entity", source)
    if isinstance(topic, str):
        return [topic], None
    if isinstance(topic, dict):
        return list(topic), [str(name) for name in topic.values()]
    raise DatasetError(f"{source}: topic_entity must be a string or an {{id: name}} object")


def answers_of(row: dict, source: str) -> list[str]:
    answers = row.get("answers", row.get("answer"))
    if answers is None:
        raise DatasetError(f"{source}: missing field 'answers'")
    if isinstance(answers, str):
        return [answers]
    if isinstance(answers, list) and all(isinstance(a, (str, int, float)) for a in answers):
        return [str(a) for a in answers]
    raise DatasetError(f"{source}: answers must be a list of strings")


def load_jsonl(path: str | Path) -> Iterator[dspy.Example]:
    """One Example per non-blank line. A line that cannot be asked (not a JSON object, a field
    missing or of the wrong type, a bad question) is an Example carrying `bad_row`, the reason:
    evaluation writes its record, so one bad row neither stops a run nor is lost."""
    for number, (source, line) in enumerate(numbered_lines(path, errors="surrogateescape")):
        row: dict = {}
        try:
            row = json_row(line, source)
            yield row_example(row, source, default_id=f"{Path(path).stem}-{number}")
        except DatasetError as exc:
            id_ = row.get("id") if isinstance(row.get("id"), (str, int)) else f"{Path(path).stem}-{number}"
            yield bad_row(source=source, id=id_, problem=str(exc), question=row.get("question"))


def row_example(row: dict, source: str, *, default_id: str) -> dspy.Example:
    ids, names = topics_of(row, source)
    extra = {k: v for k, v in row.items() if k not in _KNOWN}
    return make_example(
        source=source,
        id=row.get("id", default_id),
        question=require(row, "question", source),
        topic_entities=ids,
        topic_names=names,
        answers=answers_of(row, source),
        aliases=row.get("aliases") or {},
        **extra,
    )
