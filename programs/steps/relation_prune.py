"""The relation prune: which of the relations a hop reached things by the walk goes on by."""

from __future__ import annotations

from kgqa.programs import render
from kgqa.programs.state import Asking, Ledger, Reach
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.signatures import PruneRelations


class RelationPrune(LMStep):
    """The relations (labels, 'a -> b' through nameless nodes) the walk goes on by, at most
    `relations_per_entity`: the one the hop's target clearly names, else the model's choice among
    them, most like the target first. Nothing to decide at the plan's last hop (extraction chooses
    among its ends) and where one relation was reached. Falls back to the most similar."""

    name, usage, signature = "relation_prune", "prune_relations", PruneRelations

    def skip(self, asking: Asking, given: Reach) -> str | None:
        if given.last:
            return f"hop {given.depth} is the plan's last: extraction chooses among its ends"
        if not asking.config.relation_prune:
            return "switched off: the chains most like the question"
        if len(given.labels) <= 1:
            return f"{len(given.labels)} relation reached"
        return None

    def skipped(self, asking: Asking, given: Reach) -> list[str]:
        return [] if given.last or not asking.config.relation_prune else given.labels  # the one relation reached

    def forward(self, asking: Asking, ledger: Ledger, given: Reach) -> Outcome:
        depth = given.depth
        if given.named:
            return Outcome([given.named], "skipped", f"the hop's target {given.target!r} names its relation")
        hops = max(depth, len(asking.hop_targets))
        picked, fell_back = self.pick(
            asking, ledger, offered="candidate_relations", chosen="relations_to_follow", candidates=list(given.ranked),
            limit=asking.config.relations_per_entity, query=f"{given.target} {asking.question}",
            question=asking.question, plan=list(asking.hop_targets), hop=f"hop {depth} of {hops}: {given.target}",
            entity=render.several([render.node_label(t.end) for t in given.frontier]),
        )
        return Outcome([label for label, _ in picked], "fell_back" if fell_back else "ran")
