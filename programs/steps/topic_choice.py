"""The topic choice: which of the linker's plausible candidates the question means."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kgqa.programs.linking import LinkCandidate
from kgqa.programs.state import Asking, Ledger
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.programs.tuned import RELATIONS_SHOWN
from kgqa.signatures import ChooseTopicEntities


@dataclass(frozen=True)
class TopicOptions:
    """What the topic choice chooses among: the linker's choice (`linked`) and the candidates as
    plausible as it (`plausible`: `Linker.plausible`)."""

    linked: list[LinkCandidate]
    plausible: list[LinkCandidate]


class TopicChoice(LMStep):
    """The topic entities of a question without ids: the linker's choice when it is the one
    plausible candidate; else the model chooses among the plausible ones (the linker's and those
    scoring near them), each shown with what the graph relates it to (one query), so "Houston"
    the city and "Houston" the county differ, and a common word ("location") can be left out.
    Falls back to the linker's choice."""

    name, usage, signature = "topic_choice", "choose_topics", ChooseTopicEntities

    def skip(self, asking: Asking, given: TopicOptions) -> str | None:
        if not asking.config.topic_choice:
            return "switched off: the linker's choice"
        if len(given.plausible) <= 1:
            return f"{len(given.plausible)} plausible candidate: the linker's choice"
        return None

    def skipped(self, asking: Asking, given: TopicOptions) -> list[LinkCandidate]:
        return given.linked

    def forward(self, asking: Asking, ledger: Ledger, given: TopicOptions) -> Outcome:
        labels = self.labels(asking, given.plausible)
        kept = self.choose(asking, ledger, chosen="entities_meant", candidates=labels, limit=asking.config.topics_chosen,
                           question=asking.question, candidate_entities=labels)
        if not kept:
            return Outcome(given.linked, "fell_back", "no usable choice: the linker's")
        return Outcome([given.plausible[labels.index(label)] for label in kept])

    def labels(self, asking: Asking, candidates: Sequence[LinkCandidate]) -> list[str]:
        """Each candidate as the topic choice reads it, 'name (matched words): relations', with the
        relations around it most like the question; distinct, so a choice names one candidate."""
        around = dict(asking.kg.relations([c.entity for c in candidates]).items)
        labels: list[str] = []
        for c in candidates:
            phrases = list(dict.fromkeys(asking.kg.profile.relation_phrase(e.relation) for e in around.get(c.entity, ())))
            if len(phrases) > RELATIONS_SHOWN:
                phrases = self.embedder.top(asking.question, phrases, RELATIONS_SHOWN)
            label = f"{c.name} ({c.mention.text if c.mention else 'implied'}): {'; '.join(phrases) or 'no relations'}"
            labels.append(label if label not in labels else f"{label} [{len(labels) + 1}]")
        return labels
