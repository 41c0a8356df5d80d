"""The type of a field that picks from the candidates it was offered: what constrains a choice.

A step's choice field is typed with `choices(candidates, at_most=k)` at each call. An adapter that
sends JSON schemas (`kgqa.lm.adapter.ConstrainedJSONAdapter`) turns it into an `enum` with
`maxItems`, so the model cannot invent, misspell or over-select a candidate."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pydantic


def choices(candidates: list[str], *, at_least: int = 0, at_most: int | None = None) -> Any:
    """The type of a field that picks from CANDIDATES: a list of their literal values, at least
    AT_LEAST and at most AT_MOST long."""
    if not candidates:
        raise ValueError("a choice needs at least one candidate")
    picked = list[Literal[tuple(dict.fromkeys(candidates))]]
    if not (at_least or at_most):
        return picked
    return Annotated[picked, pydantic.Field(min_length=at_least or None, max_length=at_most)]
