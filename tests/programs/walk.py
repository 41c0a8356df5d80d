"""Helpers for tests of the walk: ask a program under a scripted LM, read the trace's step outcomes,
load a small MetaQA-shaped graph."""

from __future__ import annotations

import dspy

from kgqa.kg import KnowledgeGraph
from kgqa.programs import KGQA, WalkConfig


def ask(kg, lm, question, topics=None, **config):
    program = KGQA(kg, config=WalkConfig(**config))
    with dspy.context(lm=lm):
        return program(question=question, topic_entities=topics)


def statuses(trace) -> dict[str, list[str]]:
    """Each step's outcomes, in order: 'ran', 'fell_back' or 'skipped: why'."""
    got: dict[str, list[str]] = {}
    for entry in trace.steps:
        got.setdefault(entry["step"], []).append(entry["status"] if entry["status"] != "skipped" else f"skipped: {entry['why']}")
    return got


def metaqa_kg(tmp_path, *triples: tuple[str, str, str]) -> KnowledgeGraph:
    """A MetaQA-shaped graph from kb.txt lines (`subject|relation|object`), loaded as a user loads one."""
    from kgqa.data.kb import build_store

    kb = tmp_path / "kb.txt"
    kb.write_text("".join(f"{s}|{r}|{o}\n" for s, r, o in triples), encoding="utf-8")
    store, profile, _ = build_store([kb], format="metaqa")
    return KnowledgeGraph(store, profile=profile)
