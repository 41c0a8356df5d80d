"""The fact filter: of the facts about the candidates extraction is shown, the ones that bear on the question."""

from __future__ import annotations

from kgqa.kg import Move
from kgqa.programs import render
from kgqa.programs.ranking import Candidate, Ranked
from kgqa.programs.state import Asking, Ledger
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.programs.tuned import VALUES_PER_FACT
from kgqa.signatures import FilterFacts


class FactFilter(LMStep):
    """The facts about the candidates `shown` to extraction (their relations to values and named
    entities, one query) that bear on the question's conditions, at most `facts_kept`. Nothing to
    decide where the question sets no condition, or where extraction, the one step that reads the
    facts, is skipped (`Ranked.settled` says why). Falls back to the facts most like the question."""

    name, usage, signature = "fact_filter", "filter_facts", FilterFacts

    def skip(self, asking: Asking, given: Ranked) -> str | None:
        if not asking.config.fact_filter:
            return "switched off"
        if not asking.conditions and not asking.analysis.names_values:
            return "the question sets no condition"
        if given.settled:
            return f"no step reads the facts: extraction is skipped ({given.settled})"
        return None

    def skipped(self, asking: Asking, given: Ranked) -> list[str]:
        return []

    def forward(self, asking: Asking, ledger: Ledger, given: Ranked) -> Outcome:
        offered = self.facts(asking, given.shown, given.relations)
        if not offered:
            return Outcome([], "skipped", "no facts about the candidates")
        if len(offered) == 1:
            return Outcome(list(offered), "skipped", "one fact about the candidates: it is kept", {"facts": list(offered)})
        picked, fell_back = self.pick(
            asking, ledger, offered="candidate_facts", chosen="relevant_facts", candidates=offered,
            limit=asking.config.facts_kept, query=asking.query, question=asking.question, conditions=list(asking.conditions),
        )
        kept = [fact for fact, _ in picked]
        return Outcome(kept, "fell_back" if fell_back else "ran", traced={"facts": list(kept)})

    def facts(self, asking: Asking, shown: list[Candidate], relations: dict) -> list[str]:
        """Facts about the shown candidates, 'candidate | relation | value', most like the question
        first, `facts_shown` at most: every relation of each (but the one its trail arrived by) to
        values or named entities, up to a few values each."""
        kg, config = asking.kg, asking.config
        entities = {c.trail.end.id: c for c in shown if not c.trail.end.literal}
        kg.fill_relations(relations, entities)  # those reached by a hub's moves came without them
        steps = [Move(entity, e.relation, e.direction) for entity, c in entities.items()
                 for e in relations.get(entity, ()) if e != (c.trail.arrival.reversed if c.trail.arrival else None)]
        if not steps:
            return []
        fanout = kg.follow(steps, relations=False)
        facts = []
        for step in steps:
            values = [render.node_label(n) for n in fanout[step] if (n.literal or n.name) and n.id not in asking.topic_ids]
            if values:
                facts.append(render.fact(entities[step.entity].label, step.relation, values[:VALUES_PER_FACT],
                                         phrase=kg.profile.relation_phrase))
        facts = list(dict.fromkeys(facts))
        return self.embedder.top(asking.query, facts, config.facts_shown) if len(facts) > config.facts_shown else facts
