"""The entity prune: the entities the walk goes on from, where the plan sets conditions."""

from __future__ import annotations

from kgqa.programs import render
from kgqa.programs.state import Asking, Ledger, Reach
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.programs.trails import Trail
from kgqa.signatures import PruneEntities


class EntityPrune(LMStep):
    """When the plan sets conditions and more entities are reached than `entities_per_relation`,
    the ones that meet them (values always pass); the walk rules the others out as candidate answers
    too. Falls back to the entities most like the question and its conditions."""

    name, usage, signature = "entity_prune", "prune_entities", PruneEntities

    def skip(self, asking: Asking, given: Reach) -> str | None:
        """`given.ahead`: what the hop's chosen relations reached."""
        if given.last:
            return f"hop {given.depth} is the plan's last"
        if not asking.config.entity_prune:
            return "switched off: every entity"
        if not asking.conditions:
            return "the plan sets no condition"
        named = _named(given.ahead)
        if len(named) <= asking.config.entities_per_relation:
            return f"{len(named)} entities to go on from"
        return None

    def skipped(self, asking: Asking, given: Reach) -> list[Trail]:
        return given.ahead

    def forward(self, asking: Asking, ledger: Ledger, given: Reach) -> Outcome:
        trails = given.ahead
        picked, fell_back = self.pick(
            asking, ledger, offered="candidate_entities", chosen="entities_to_keep", candidates=_named(trails),
            limit=asking.config.entities_per_relation, query=asking.query,
            question=asking.question, conditions=list(asking.conditions),
            relation_walked=render.several(list(dict.fromkeys(render.compound_label([h.edge for h in t.hops]) for t in trails))),
        )
        kept = {label for label, _ in picked}
        return Outcome([t for t in trails if t.end.literal or render.node_label(t.end) in kept], "fell_back" if fell_back else "ran")


def _named(trails: list[Trail]) -> list[str]:
    """The entities the trails reached, each once: what the prune chooses among."""
    return list(dict.fromkeys(render.node_label(t.end) for t in trails if not t.end.literal))
