"""How walk state is written for the model and for users. No logic lives here. How a relation
reads as words is the graph's convention: callers pass its profile's `relation_phrase`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kgqa.kg import Direction, Edge, Node
from kgqa.programs.trails import Trail


def relation_label(edge: Edge) -> str:
    return edge.relation if edge.direction is Direction.OUT else f"{edge.relation} (reverse)"


def compound_label(edges: Sequence[Edge]) -> str:
    """A relation followed through nameless (CVT) nodes, as one label: 'film.film.starring -> film.performance.actor'."""
    return " -> ".join(map(relation_label, edges))


def plain_path(trail: Trail, *, phrase: Callable[[str], str]) -> str:
    """A trail as names and relation phrases (`phrase`), nameless (CVT) nodes and directions left out:
    'Lou Seal -> mascot team -> San Francisco Giants -> championship event champion -> 2014 World Series'."""
    parts = [node_label(trail.topic)]
    for hop in trail.hops:
        parts.append(phrase(hop.relation))
        if hop.node.literal or hop.node.name:
            parts.append(node_label(hop.node))
    return " -> ".join(parts)


def fact(subject: str, relation: str, values: Sequence[str], *, phrase: Callable[[str], str]) -> str:
    """A fact about a candidate as the fact filter shows it: 'Titanic | film initial release date | 1997-12-19'."""
    return f"{subject} | {phrase(relation)} | {', '.join(values)}"


def fact_names(text: str) -> list[str]:
    """The names a fact written by `fact` holds: its subject, then its values."""
    subject, _, values = text.split(" | ", 2) if text.count(" | ") >= 2 else (text, "", "")
    return [subject, *(value for value in values.split(", ") if value)]


def node_label(node: Node) -> str:
    return node.label


def path_text(trail: Trail) -> str:
    parts = [node_label(trail.topic)]
    for hop in trail.hops:
        parts += [relation_label(hop.edge), node_label(hop.node)]
    return " -> ".join(parts)


def gcr_path(trail: Trail, answer: str) -> str:
    """A reasoning path as GCR's evaluation reads it."""
    return f"# Reasoning Path:\n{path_text(trail)}\n# Answer:\n{answer}"


def several(labels: list[str], *, shown: int = 3) -> str:
    """'A', 'A, B', or 'A, B, C and 4 more'."""
    labels = list(dict.fromkeys(labels))
    head = ", ".join(labels[:shown])
    return head if len(labels) <= shown else f"{head} and {len(labels) - shown} more"
