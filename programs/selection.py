"""Checking a model's selections against the candidates it was given.

A selection is kept if it equals a candidate, equals one after normalization (case, spacing,
quotes, a backslash read as a slash), or is close enough to one (difflib ratio >= cutoff) to snap to it. Everything else
is dropped and counted: the walk never follows a relation or entity the model made up.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kgqa.kg import normalize_label


@dataclass
class Selection:
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _normal(text: str) -> str:
    # a backslash reads as a slash: the local engine's grammar respells one so (`kgqa.lm.chat.grammar_safe`)
    return normalize_label(text.strip().strip("\"'`[]()").strip().replace("\\", "/"))


def select(outputs: Iterable[object], candidates: Sequence[str], *, cutoff: float, limit: int | None = None) -> Selection:
    """Map model outputs onto candidates, in the model's order, without duplicates."""
    by_normal: dict[str, str] = {}
    for candidate in candidates:
        by_normal.setdefault(_normal(candidate), candidate)
    exact = set(candidates)
    result = Selection()
    for output in outputs:
        if not isinstance(output, str) or not output.strip():
            result.dropped.append(repr(output))
            continue
        if output in exact:
            match = output
        elif _normal(output) in by_normal:
            match = by_normal[_normal(output)]
        else:
            close = difflib.get_close_matches(_normal(output), list(by_normal), n=1, cutoff=cutoff)
            match = by_normal[close[0]] if close else None
        if match is None:
            result.dropped.append(output)
        elif match not in result.kept:
            result.kept.append(match)
    if limit is not None:
        result.kept = result.kept[:limit]
    return result
