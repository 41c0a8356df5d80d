"""Relation paths through the graph: following a known one (gold paths in the demo, benchmarks and
tests), and finding every chain from the topic entities (the compile's labels, from answers alone)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from kgqa.kg.graph import Edge, KnowledgeGraph, Move
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


Chain = tuple[Edge, ...]


def chains_from(
    kg: KnowledgeGraph, topics: Iterable[str], *, longest: int = 3
) -> Iterator[dict[Chain, set[Node]]]:
    """Every relation chain of 1, 2, ... `longest` relations from the topic entities, with directions,
    one length at a time: each chain with the nodes it ends at (never a topic entity; nameless CVT
    nodes, on a profile that steps through them, are gone through and never an end). The graph is
    read as the walk reads it: one `follow` per length for the whole frontier (the relations around
    what it reaches come with it), the same per-key caps, and, where the profile drops them, no
    relation walked straight back. A caller that has what it wants stops asking for the next length."""
    topics = list(dict.fromkeys(topics))
    excluded, through = set(topics), kg.profile.step_through_unnamed
    around: dict[str, tuple[Edge, ...]] = dict(kg.relations(topics).items) if topics else {}
    layer: dict[Chain, set[Node]] = {(): {Node(t) for t in topics}}
    for depth in range(1, longest + 1):
        # those reached by a hub's moves came without their relations
        kg.fill_relations(around, sorted({node.id for nodes in layer.values() for node in nodes if not node.literal}))
        steps = {(node.id, edge) for chain, nodes in layer.items() for node in nodes if not node.literal
                 for edge in _onward(kg, around, node.id, chain)}
        if not steps:
            return
        fanout = kg.follow([Move(e, edge.relation, edge.direction) for e, edge in sorted(steps)], relations=depth < longest)
        around.update(fanout.around)
        onward: dict[Chain, set[Node]] = defaultdict(set)
        for chain, nodes in layer.items():
            for node in nodes:
                if node.literal:
                    continue
                for edge in _onward(kg, around, node.id, chain):
                    reached = fanout[Move(node.id, edge.relation, edge.direction)]
                    onward[(*chain, edge)] |= {n for n in reached if n.literal or n.id not in excluded}
        layer = {chain: nodes for chain, nodes in onward.items() if nodes}
        ends = {chain: {n for n in nodes if n.literal or n.name or not through} for chain, nodes in layer.items()}
        ends = {chain: nodes for chain, nodes in ends.items() if nodes}
        yield ends


def _onward(kg: KnowledgeGraph, around: dict[str, tuple[Edge, ...]], entity: str, chain: Chain) -> list[Edge]:
    back = chain[-1].reversed if chain and kg.profile.drops_pre_relations else None
    return [edge for edge in around.get(entity, ()) if edge != back]
