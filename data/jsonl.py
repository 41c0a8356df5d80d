"""kgqa's own JSONL question format (the demo splits use it); also reads MetaQA-style JSONL.

A row: `{"question": ..., "topic_entities": [...] | "topic_entity": str | {id: name}, "answers": [...]}`
with optional `id`, `topic_names`, `aliases` ({answer: [alias, ...]}) and any metadata.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dspy

from kgqa.data.examples import DatasetError, make_example, read_jsonl, require

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
    for number, (source, row) in enumerate(read_jsonl(path)):
        ids, names = topics_of(row, source)
        extra = {k: v for k, v in row.items() if k not in _KNOWN}
        yield make_example(
            source=source,
            id=row.get("id", f"{Path(path).stem}-{number}"),
            question=require(row, "question", source),
            topic_entities=ids,
            topic_names=names,
            answers=answers_of(row, source),
            aliases=row.get("aliases") or {},
            **extra,
        )
