"""Trails: what the walk keeps. A trail is a path from a topic entity, hop by hop, with a score."""

from __future__ import annotations

from dataclasses import dataclass

from kgqa.kg import Direction, Edge, Node


@dataclass(frozen=True)
class Hop:
    relation: str
    direction: Direction
    node: Node

    @property
    def edge(self) -> Edge:
        return Edge(self.relation, self.direction)


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

    @property
    def chain(self) -> tuple[str, ...]:
        """The relations the trail followed, from its topic entity, directions left out."""
        return (self.topic.id, *(hop.relation for hop in self.hops))

    @property
    def relations(self) -> tuple[str, ...]:
        """The relation chain the trail ends by, whatever its topic entity."""
        return tuple(hop.relation for hop in self.hops)

    def nodes(self) -> list[Node]:
        return [self.topic, *(hop.node for hop in self.hops)]

    def behind(self, edge: Edge) -> set[str]:
        """Ids a step along EDGE must not reach: the entity the trail stands on, and the one it
        just left when EDGE walks the arrival edge back. Entities passed earlier, or left through
        another relation, may be answers (the writer of [X] who also directed the films found
        through him), so they stay reachable; the topic entities are excluded by the walk."""
        ids = {self.end.id}
        if self.hops and self.arrival == edge.reversed:
            ids.add(self.nodes()[-2].id)
        return ids

    def cut_back(self) -> Trail | None:
        """The trail cut back to the last named entity it passed before its end ('Bribri -> spoken in ->
        Costa Rica' of '... -> Costa Rica -> currency used -> Costa Rican colon'; the country a trail
        passed to reach its ISO code); None when it passed none but its topic entity (it came from the
        topic entity, or through nameless nodes only)."""
        at = next((i for i in range(len(self.hops) - 2, -1, -1) if self.hops[i].node.name and not self.hops[i].node.literal), None)
        return None if at is None else Trail(self.topic, self.hops[: at + 1], self.score)
