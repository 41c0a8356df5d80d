"""The relation prune: which of the relations a hop reached things by the walk goes on by."""

from __future__ import annotations

from kgqa.programs import render
from kgqa.programs.config import WalkConfig
from kgqa.programs.embedder import Embedder
from kgqa.programs.question import hop_relation
from kgqa.programs.state import Asking, Ledger, Reach
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.programs.tuned import CLEAR_MARGIN
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
        ranked, named = named_relation(asking, given.labels, self.embedder, depth=depth)
        if named:
            return Outcome([named], "skipped", f"the hop's target {given.target!r} names its relation")
        hops = max(depth, len(asking.hop_targets))
        picked, fell_back = self.pick(
            asking, ledger, offered="candidate_relations", chosen="relations_to_follow", candidates=ranked,
            limit=asking.config.relations_per_entity, query=f"{given.target} {asking.question}",
            question=asking.question, plan=list(asking.hop_targets), hop=f"hop {depth} of {hops}: {given.target}",
            entity=render.several([render.node_label(t.end) for t in given.frontier]),
        )
        return Outcome([label for label, _ in picked], "fell_back" if fell_back else "ran")


def named_relation(asking: Asking, labels: list[str], embedder: Embedder, *, depth: int) -> tuple[list[str], str | None]:
    """The relations ranked by similarity to hop `depth`'s target, and the one it clearly names
    ("movie (directed by)" -> directed_by), if one is similar enough and ahead of the next. A
    target that spells its relation words in parentheses is compared by them ("movie (written
    by)": "written by", not the "movie" that directed_by fits as well), and a target names a
    relation, not its direction: directions are left out of the comparison."""
    words = [asking.kg.profile.relation_words(label.replace(" (reverse)", "")) for label in labels]
    scores = dict(zip(labels, embedder.similarities(hop_relation(asking.hop_target(depth)), words)))
    ranked = sorted(labels, key=lambda label: (-scores[label], label))
    return ranked, ranked[0] if _clear(ranked, scores, asking.config) else None


def _clear(ranked: list[str], scores: dict[str, float], config: WalkConfig) -> bool:
    """The best candidate is similar enough to the target, and far enough ahead of the next (a lone
    relation has none to be ahead of: "year (release year)" names the one release_year reached)."""
    if not ranked:
        return False
    best = scores[ranked[0]]
    second = scores[ranked[1]] if len(ranked) > 1 else -1.0
    return best >= config.clear_similarity and best - second >= CLEAR_MARGIN
