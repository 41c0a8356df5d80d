"""Following a known relation path through the graph: gold paths in the demo, benchmarks and tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kgqa.kg.graph import KnowledgeGraph
from kgqa.kg.terms import Direction, Node


def walk(kg: KnowledgeGraph, topics: Iterable[str], path: Sequence[tuple[str, Direction | str]]) -> list[Node]:
    """Nodes at the end of `path` from the topic entities: one batched query per hop.

    Topic entities are never answers (as in MetaQA, where multi-hop answers exclude the topic).
    """
    topics = list(dict.fromkeys(topics))
    frontier, reached = topics, []
    for relation, direction in path:
        fanout = kg.neighbours(frontier, relation, direction=Direction(direction))
        reached = sorted({node for nodes in fanout.items.values() for node in nodes if node.id not in topics or node.literal})
        frontier = [node.id for node in reached if not node.literal]
    return reached


def answer_names(kg: KnowledgeGraph, nodes: Iterable[Node]) -> list[str]:
    """Display names of walked nodes: literal values as they are, entities by name (nameless ones dropped)."""
    nodes = list(nodes)
    names = kg.names(node.id for node in nodes if not node.literal)
    return sorted({node.id if node.literal else names[node.id] for node in nodes if node.literal or node.id in names})
