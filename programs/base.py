"""What every program over a knowledge graph shares: the per-question state (`programs.state`),
topic entities linked by label, neighbours fetched with nameless (CVT) nodes stepped through, and
the trace. How a step asks the LM is `programs.steps.calls`.

A program subclasses `KGProgram`, declares its steps and writes `forward` as the algorithm: it walks
inside `with self.walking(question) as state:` (the LM's usage counted; an error or `Ended` ends the
walk with its reason) and returns `self.prediction(state)`, with `_answer` giving the answers and
GCR reasoning paths from the state:

| program | walk | file |
|---|---|---|
| `KGQA` | plan, retrieve hop by hop, prune, filter facts, update memory, check sufficiency, extract | programs/kgqa.py |
| `LLMOnly`, `SimilarityWalk` | baselines: the model alone; the graph alone (every choice by similarity) | programs/baselines.py |
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import dspy

from kgqa.data.questions import few
from kgqa.errors import LMUnavailable
from kgqa.kg import Edge, KGError, KnowledgeGraph, Move, Node
from kgqa.kg.errors import InvalidTermError
from kgqa.programs.chains import ChainPrior
from kgqa.programs.config import WalkConfig
from kgqa.programs.deadline import Cut, Deadline
from kgqa.programs.embedder import Embedder
from kgqa.programs.linking import LinkCandidate, Linker, Linking
from kgqa.programs.question import BRACKETED
from kgqa.programs.state import Asking, Ledger, WalkState
from kgqa.programs.trace import StopReason, Trace, token_totals
from kgqa.programs.trails import Hop, Trail


@dataclass
class Branch:
    """Nodes reached from one trail through one relation, or a compound one through CVT nodes.

    `members` pairs each node with the hops before its last one: empty, or the hop to the
    (nameless) CVT node it was reached through. One prune decision covers the whole group.
    """

    trail: Trail
    edges: tuple[Edge, ...]
    members: list[tuple[tuple[Hop, ...], Node]]
    score: float



class Ended(Exception):
    """The walk ends here, for `reason`: a bad question, no topic entity, nothing reached."""

    def __init__(self, reason: StopReason, error: str | None = None) -> None:
        super().__init__(error or reason.value)
        self.reason, self.error = reason, error


class KGProgram(dspy.Module):
    """A program over a knowledge graph. `forward(question, topic_entities=None, *, deadline=None)`
    returns answers, GCR-style reasoning paths and a trace of what the walk spent and why it stopped.

    Two ends give no answer at all: an LM that did not answer (`StopReason.LM_ERROR`: an outage
    is not a fallback) and a run cut by its `deadline` (`StopReason.CUT`)."""

    def __init__(
        self,
        kg: KnowledgeGraph | None = None,
        *,
        config: WalkConfig | None = None,
        embedder: Embedder | None = None,
        linker: Linker | None = None,
        chain_prior: ChainPrior | None = None,
    ) -> None:
        super().__init__()
        self.kg = kg
        self.config = config or WalkConfig()
        self.embedder = embedder or Embedder()
        self.linker = linker or Linker()
        self.chain_prior = chain_prior or ChainPrior()

    @contextmanager
    def walking(self, question: str, *, deadline: Deadline | None = None, errors_end_it: bool = True) -> Iterator[WalkState]:
        """`question`'s walk state, for the `with` block that walks it. The LM's usage is counted into
        its trace, and the walk ends with its reason where the block raises `Ended` or, unless
        `errors_end_it` is off, where the graph failed (`KGError`), the LM did not answer
        (`LMUnavailable`) or the deadline passed (`Cut`)."""
        state = self.new_state(question, deadline=deadline)
        with dspy.track_usage() as usage:
            try:
                yield state
            except Ended as end:
                state.stop(end.reason, error=end.error)
            except (KGError, LMUnavailable, Cut) as exc:
                if not errors_end_it:
                    raise
                if isinstance(exc, KGError):
                    state.stop(StopReason.KG_ERROR, error=str(exc))
                else:  # no model decided anything: no answer, and the record says why
                    state.ledger.unanswered = True
                    state.stop(StopReason.LM_ERROR if isinstance(exc, LMUnavailable) else StopReason.CUT, error=str(exc))
        state.trace.input_tokens, state.trace.output_tokens = token_totals(usage)

    def prediction(self, state: WalkState) -> dspy.Prediction:
        """The answers, reasoning paths and trace of a walk that ended: no answer where the LM did not
        answer or the run was cut (no model decided them)."""
        answers, paths = ([], []) if state.ledger.unanswered else self._answer(state)
        return dspy.Prediction(answers=answers, paths=paths, trace=self._trace(state))

    def new_state(self, question: str, *, deadline: Deadline | None = None) -> WalkState:
        """A question's walk state, on a view of the graph that counts its queries."""
        if self.kg is None:
            raise ValueError(f"{type(self).__name__} needs a knowledge graph: {type(self).__name__}(kg) or program.kg = kg")
        return WalkState(Asking(question, self.kg.scoped(), self.config), Ledger(deadline=deadline))

    def _answer(self, state: WalkState) -> tuple[list[str], list[str]]:
        """Answers, best first, and the GCR reasoning paths of the first ones."""
        raise NotImplementedError

    # -- shared steps ------------------------------------------------------------------------

    def _topics(self, state: WalkState, given: Sequence[str] | None) -> list[Node]:
        """Topic entities with their names: the given ids, else labels found in the question. None
        found ends the walk (`StopReason.NO_TOPIC_ENTITY`, with what was not found)."""
        topics, problem = self._found_topics(state, given)
        if not topics:
            raise Ended(StopReason.NO_TOPIC_ENTITY, problem)
        return topics

    def _found_topics(self, state: WalkState, given: Sequence[str] | None) -> tuple[list[Node], str | None]:
        kg = state.asking.kg
        if given:
            ids, labels = [], []
            for entity in given:
                try:
                    kg.profile.entity_iri(entity)
                    ids.append(entity)
                except InvalidTermError:
                    labels.append(entity)
            names = kg.names(ids) if ids else {}
            labels += [e for e in ids if e not in names]  # unknown ids may still be labels
            linked = kg.link(labels) if labels else {}
            found = {e: names[e] for e in ids if e in names}
            for label in labels:
                for entity in linked.get(label, ()):
                    found.setdefault(entity, label)
            topics = [Node(e, name=name) for e, name in found.items()]
            missing = [e for e in given if e not in found and not linked.get(e)]
            return topics, (f"unknown topic entities: {few(missing)}" if not topics else None)
        bracketed = BRACKETED.findall(state.asking.question)
        if bracketed:  # the question marks its entities: their names, exactly
            linked = kg.link(bracketed)
            topics = [Node(e, name=label) for label in bracketed for e in linked[label]]
        else:
            linking = self.linker.link(state.asking.question, self.names(kg), graph=kg)
            linking.linked = self.choose_topics_of(state, linking)
            state.linking = linking
            topics = [Node(c.entity, name=c.name) for c in linking.linked]
        return topics, None if topics else "no entity of the question was found in the KG by its name"

    def names(self, kg: KnowledgeGraph):
        """Where the linker finds the graph's names: with their sentence vectors when it was compiled with them."""
        return kg.name_index(encode=self.embedder.encode if self.linker.uses_vectors else None)

    def choose_topics_of(self, state: WalkState, linking: Linking) -> list[LinkCandidate]:
        """The topic entities among the linker's candidates: here, the linker's own choice."""
        return linking.linked

    def _onward(self, state: WalkState, trail: Trail, relations: dict) -> list[Edge]:
        """The relations a trail can go on by: those around its end, less the one it arrived by
        walked back where the profile drops pre-relations (Freebase's inverse pairs; not MetaQA)."""
        back = trail.arrival.reversed if trail.arrival and state.asking.kg.profile.drops_pre_relations else None
        return [e for e in relations.get(trail.end.id, ()) if e != back]

    def _follow(self, state: WalkState, steps: list[tuple[Trail, Edge, float]], *, more: bool) -> tuple[list[Branch], dict]:
        """Neighbours of every chosen step in one query; unnamed (CVT) nodes are stepped through."""
        kg, topic_ids = state.asking.kg, state.asking.topic_ids
        fanout = kg.follow([Move(t.end.id, e.relation, e.direction) for t, e, _ in steps], relations=more)
        relations = dict(fanout.around)
        groups: list[Branch] = []
        through: list[tuple[Trail, Edge, float, Node]] = []
        for trail, edge, score in steps:
            excluded = trail.behind(edge) | topic_ids
            nodes = [n for n in fanout[Move(trail.end.id, edge.relation, edge.direction)] if n.literal or n.id not in excluded]
            if kg.profile.step_through_unnamed:
                through += [(trail, edge, score, n) for n in nodes if not n.literal and not n.name]
                nodes = [n for n in nodes if n.literal or n.name]
            if nodes:
                groups.append(Branch(trail, (edge,), [((), n) for n in nodes], score))
        if through:
            groups += self._step_through(state, through, relations, more=more)
        return groups, relations

    def _step_through(self, state: WalkState, through: list, relations: dict, *, more: bool) -> list[Branch]:
        """Follow every onward relation of unnamed (CVT) nodes but the one back, in one query."""
        kg, topic_ids = state.asking.kg, state.asking.topic_ids
        kg.fill_relations(relations, sorted({cvt.id for *_, cvt in through}))

        def onward(edge: Edge, cvt: Node) -> list[Edge]:
            return [e for e in relations.get(cvt.id, ()) if e != edge.reversed]

        steps = [Move(cvt.id, e.relation, e.direction) for _, edge, _, cvt in through for e in onward(edge, cvt)]
        fanout = kg.follow(steps, relations=more)
        relations.update(fanout.around)
        groups: dict[tuple, Branch] = {}
        for trail, edge, score, cvt in through:
            excluded = trail.behind(edge) | {cvt.id} | topic_ids
            for e in onward(edge, cvt):
                nodes = [n for n in fanout[Move(cvt.id, e.relation, e.direction)] if n.literal or n.id not in excluded]
                if nodes:
                    prefix = (Hop(edge.relation, edge.direction, cvt),)
                    group = groups.setdefault((trail, edge, e), Branch(trail, (edge, e), [], score))
                    group.members += [(prefix, n) for n in nodes]
        return list(groups.values())

    def _trace(self, state: WalkState) -> Trace:
        """The state's trace, completed with what is read off the walk at its end."""
        asking, trace, best = state.asking, state.trace, (state.final[0] if state.final else None)
        trace.sparql_queries, trace.kg_seconds = asking.kg.stats.queries, round(asking.kg.stats.seconds, 4)
        trace.depth, trace.planned_hops, trace.extended_hops = state.depth, len(asking.hop_targets), state.extensions
        trace.plan, trace.conditions = list(asking.hop_targets), list(asking.conditions)
        trace.hops_walked = best.steps if best else 0
        trace.relation_path = [[h.relation, h.direction.value] for h in best.hops] if best else []
        trace.topic_entities, trace.topic_names = [t.id for t in asking.topics], [t.label for t in asking.topics]
        trace.dropped_selections, trace.dropped_examples = len(state.ledger.dropped), state.ledger.dropped[:10]
        if state.linking is not None:
            trace.linking = state.linking.to_dict()
        return trace

