"""The demo graph as the walk's tests read it (module fixtures; a test file may define its own)."""

from __future__ import annotations

import pytest

from kgqa.kg import KnowledgeGraph


@pytest.fixture(scope="module")
def kg(demo_store) -> KnowledgeGraph:
    return KnowledgeGraph(demo_store, profile="freebase")


@pytest.fixture(scope="module")
def ids(kg):
    names = ["Pulp Fiction", "Titanic", "James Cameron", "Ang Lee", "Parasite", "Science Fiction", "Inception"]
    return {name: kg.link([name])[name][0] for name in names}
