"""Memory update: one note per entity the question names, on what its paths established."""

from __future__ import annotations

from typing import Annotated

import pydantic

from kgqa.programs import render
from kgqa.programs.ranking import Ranked
from kgqa.programs.state import Asking, Ledger
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.programs.tuned import NOTE_CHARS
from kgqa.signatures import UpdateMemory


class MemoryUpdate(LMStep):
    """When the question names several entities, one note per entity on what its paths established,
    the earlier notes updated (a conjunction's answer must fit them all). Nothing to decide where no
    step reads the notes, or where the entities' paths meet at no candidate and only extraction
    reads them: such a note can only repeat the entity's own paths, which extraction is shown
    (1e132b4:bench/results/memory-meets-cwq-dev/). `Ranked.short` and `Ranked.settled`: why
    sufficiency and extraction have nothing to decide, if so. Falls back to what each entity's paths reach."""

    name, usage, signature = "memory_update", "update_memory", UpdateMemory

    def skip(self, asking: Asking, given: Ranked) -> str | None:
        short, settled = given.short, given.settled
        if not asking.config.memory_update:
            return "switched off"
        if len(asking.topic_names) < 2:
            return "the question names one entity"
        if short and settled:
            return f"no step reads the notes: sufficiency is skipped ({short}), extraction too ({settled})"
        if short and given.candidates and given.candidates[0].topics < 2:  # the ranking puts the most-reached first
            return (f"the named entities' paths meet at no candidate and sufficiency is skipped ({short}): "
                    "each entity's note could only repeat its own paths, which extraction is shown")
        return None

    def skipped(self, asking: Asking, given: Ranked) -> list[str]:
        return list(given.notes)

    def forward(self, asking: Asking, ledger: Ledger, given: Ranked) -> Outcome:
        """`given.notes`: the notes so far, updated or kept."""
        names = asking.topic_names
        rank = {c.label: i for i, c in enumerate(given.candidates)}
        by_name = {name: [t for t in given.reached if t.topic.label == name and render.node_label(t.end) in rank] for name in names}
        evidence = []
        for trails in by_name.values():
            ranked = sorted(trails, key=lambda t: rank[render.node_label(t.end)])
            paths = dict.fromkeys(render.plain_path(t, phrase=asking.kg.profile.relation_phrase) for t in ranked)
            evidence += list(paths)[: asking.config.sufficiency_shown]
        signature = self.predict.signature.with_updated_fields(
            "memory_notes", type_=Annotated[list[str], pydantic.Field(max_length=len(names))])
        out = self.ask(asking, ledger, signature=signature, question=asking.question, plan=list(asking.hop_targets),
                       memory=list(given.notes), new_evidence=evidence)
        kept = [n.strip()[:NOTE_CHARS] for n in (getattr(out, "memory_notes", None) or []) if isinstance(n, str) and n.strip()]
        if kept:
            return Outcome(kept[: len(names)], traced={"memory": kept[: len(names)]})
        reaches = [f"{name} reaches {render.several([render.node_label(t.end) for t in trails]) or 'nothing'}"
                   for name, trails in by_name.items()]
        return Outcome(reaches, "fell_back", "no usable notes: what each entity reaches", {"memory": list(reaches)})
