"""Trails: what the walk keeps. A trail is a path from a topic entity, hop by hop, with a score."""

from __future__ import annotations

from dataclasses import dataclass

from kg import Direction, Edge, Node


@dataclass(frozen=True)
class Hop:
    relation: str
    direction: Direction
    node: Node

    @property
    def edge(self) -> Edge:
        return Edge(self.relation, self.direction)


@dataclass(frozen=True)
class Fact:
    """A triple as the graph holds it: subject -relation-> object."""

    subject: Node
    relation: str
    object: Node


@dataclass(frozen=True)
class Trail:
    topic: Node
    hops: tuple[Hop, ...] = ()
    score: float = 1.0

    @property
    def end(self) -> Node:
        return self.hops[-1].node if self.hops else self.topic

    @property
    def arrival(self) -> Edge | None:
        """The edge the trail arrived through; walking it back is not offered (PoG's pre-relation)."""
        return self.hops[-1].edge if self.hops else None

    def extend(self, hops: tuple[Hop, ...], factor: float) -> Trail:
        return Trail(self.topic, self.hops + hops, self.score * factor)

    @property
    def steps(self) -> int:
        """Hops of the plan taken: a hop through a nameless (CVT) node and on out of it counts once."""
        return sum(1 for hop in self.hops if hop.node.literal or hop.node.name)

    def nodes(self) -> list[Node]:
        return [self.topic, *(hop.node for hop in self.hops)]

    def facts(self, since: int = 0) -> list[Fact]:
        """The triples along the trail, from hop `since` on, oriented as stored."""
        facts = []
        nodes = self.nodes()
        for i, hop in enumerate(self.hops[since:], since):
            before = nodes[i]
            if hop.direction is Direction.OUT:
                facts.append(Fact(before, hop.relation, hop.node))
            else:
                facts.append(Fact(hop.node, hop.relation, before))
        return facts

    def answer_candidates(self, topics: set[str]) -> list[Node]:
        """Nodes on the trail that may answer: not a topic entity, not a nameless (CVT) node."""
        return [n for n in self.nodes()[1:] if n.id not in topics and (n.literal or n.name)]
