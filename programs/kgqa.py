"""KGQA: one program over a knowledge graph, every LLM step a typed DSPy predictor.

    topic entities (given, or linked from the question's words; the model chooses among plausible ones)
    -> plan (decompose: how many hops, what each reaches, conditions on the answer)
    -> per planned hop: retrieve every relation of the frontier (one batched query, nameless CVT
       nodes stepped through) -> relation prune (the chains to go on by) -> entity prune (the
       entities to go on from, and to keep as candidates, when the plan sets conditions)
       (reflection, only at a dead end)
    -> candidate answers: every end reached, ranked (question similarity, the compiled chain prior),
       then ordered by the compiled path scorer where there is one (`programs.scorer`)
    -> fact filter (the facts about the candidates, values included, that bear on the question)
    -> memory update (what each entity the question names has established)
    -> answer sufficiency (do the best paths reach the answer? if not, one hop more, bounded)
    -> path answer extraction (the answers the paths support, each with its GCR path)
    -> value check (where the question compares a value, the answers it holds for; no LLM call)

| step | module (`programs/steps/`) | attribute | signature | skipped when |
|---|---|---|---|---|
| topic choice | `TopicChoice` (topic_choice.py) | `choose_topics` | `ChooseTopicEntities` | topics given; one plausible candidate |
| plan | `Planning` (plan.py) | `plan` | `Plan` | never |
| relation prune | `RelationPrune` (relation_prune.py) | `prune_relations` | `PruneRelations` | the plan's last hop (extraction chooses there); one relation reached; the hop's target names its relation |
| entity prune | `EntityPrune` (entity_prune.py) | `prune_entities` | `PruneEntities` | the plan sets no condition; few entities to go on from |
| fact filter | `FactFilter` (fact_filter.py) | `filter_facts` | `FilterFacts` | the question sets no condition; extraction is skipped (nothing reads the facts); no facts about the candidates |
| memory update | `MemoryUpdate` (memory_update.py) | `update_memory` | `UpdateMemory` | the question names one entity; sufficiency and extraction are both skipped (nothing reads the notes) |
| answer sufficiency | `Sufficiency` (sufficiency.py) | `check_sufficiency` | `CheckSufficiency` | at the deepest hop; extensions used up; the walk already went past the plan; nothing reached; the best path goes by the relation the plan's last hop names |
| path answer extraction | `Extraction` (extraction.py) | `extract_answers` | `ExtractAnswers` | one candidate, or one relation chain; the path scorer is sure of its first; the question sets no condition and the best path, from every topic entity, goes by the relation the plan's last hop names |
| value check (no LLM call) | `ValueCheck` (value_check.py) | `value_check` | none (`programs/values.py`) | the question compares no value; too few answers; no value of the answers is like the question's words |
| reflection | `Reflection` (reflection.py) | `reflect` | `Reflect` | no dead end; no entity passed a hop before |

Each step is a `dspy.Module` (`programs.steps.Step`) holding its one predictor (`predict`, what compiling
tunes: `program.plan.predict.demos`); `Step.run` records whether it ran, was skipped (and why) or fell back.

Every step can be switched off (`WalkConfig`). Choices are typed as the candidates offered
(`kgqa.signatures.choices`), so an LM that takes a JSON schema cannot invent or over-select one;
every selection is still checked against its candidates. A step whose reply is unusable falls back
to embedding similarity; an LM that does not answer ends the question (`StopReason.LM_ERROR`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

import dspy

from kgqa.data.questions import question_problem
from kgqa.kg import KnowledgeGraph
from kgqa.programs import render
from kgqa.programs.base import Ended, KGProgram
from kgqa.programs.chains import ChainPrior, Votes
from kgqa.programs.config import WalkConfig
from kgqa.programs.deadline import Deadline
from kgqa.programs.embedder import Embedder
from kgqa.programs.linking import LinkCandidate, Linker, Linking
from kgqa.programs.ranking import Ranked, chain_words, chains_spread, named_relation, rank, scored_order
from kgqa.programs.scorer import PathScorer
from kgqa.programs.state import Asking, Reach, WalkState
from kgqa.programs.steps import (
    EntityPrune,
    Extraction,
    FactFilter,
    LMCalls,
    MemoryUpdate,
    Planning,
    Reflection,
    RelationPrune,
    Sufficiency,
    TopicChoice,
    ValueCheck,
)
from kgqa.programs.steps.extraction import settled
from kgqa.programs.steps.reflection import DeadEnd
from kgqa.programs.steps.sufficiency import GOES_ON, short
from kgqa.programs.steps.topic_choice import TopicOptions
from kgqa.programs.steps.value_check import Answers
from kgqa.programs.trace import StopReason, Trace
from kgqa.programs.trails import Hop, Trail
from kgqa.programs.tuned import BEAM_TRAILS, NOT_GONE_ON, PRIOR_SURE, PRIOR_WEIGHT

_LOGGED_RELATIONS, _LOGGED_EDGES = 12, 60  # per hop, in the trace's `walk`
_LOGGED_PRIOR = 3  # the chain prior's heaviest chains, in the trace

__all__ = ["KGQA"]


class KGQA(KGProgram):
    """The walk. `forward(question, topic_entities=None)` returns answers, GCR-style reasoning paths
    and a trace of what each step did, what the walk spent and why it stopped."""

    def __init__(
        self, kg: KnowledgeGraph | None = None, *, config: WalkConfig | None = None, embedder: Embedder | None = None,
        linker: Linker | None = None, chain_prior: ChainPrior | None = None, path_scorer: PathScorer | None = None,
        calls: LMCalls | None = None,
    ) -> None:
        super().__init__(kg, config=config, embedder=embedder, linker=linker, chain_prior=chain_prior)
        self.path_scorer = path_scorer or PathScorer()
        calls = calls or LMCalls(self.embedder)
        self.plan = Planning(calls)
        self.prune_relations = RelationPrune(calls)
        self.prune_entities = EntityPrune(calls)
        self.filter_facts = FactFilter(calls)
        self.update_memory = MemoryUpdate(calls)
        self.check_sufficiency = Sufficiency(calls)
        self.extract_answers = Extraction(calls)
        self.reflect = Reflection(calls)
        self.choose_topics = TopicChoice(calls)
        self.value_check = ValueCheck(self.embedder)

    # -- the algorithm -----------------------------------------------------------------------

    def forward(self, question: str, topic_entities: Sequence[str] | None = None, *, deadline: Deadline | None = None,
                answer: bool = True) -> dspy.Prediction:
        """The walk, step by step: answers, GCR-style reasoning paths and a trace of what each step did,
        what the walk spent and why it stopped. `answer=False` stops before path answer extraction and
        gives the walk's `ranked` candidates and its `state`, errors raised (`programs.inspection`)."""
        with self.walking(question, deadline=deadline, errors_end_it=answer) as state:
            ledger = state.ledger  # what the question spends: every step's outcome, calls and tokens
            if problem := question_problem(question, list(topic_entities) if topic_entities is not None else None):
                raise Ended(StopReason.BAD_QUESTION, problem)
            state.asking = state.asking.knowing(self._topics(state, topic_entities))  # given, or linked and chosen
            targets, conditions = self.plan.run(state.asking, ledger)  # what each hop reaches, what the answer satisfies
            state.asking = asking = state.asking.planned(targets, conditions, votes=self._chain_votes(state.asking))
            frontier, hops = self._start(state)
            while True:
                self._walk(state, frontier, hops)  # hop by hop: retrieve, prune relations, prune entities
                ranked = self._ranked(state)  # every end reached, ranked, and what that settles
                state.facts = self.filter_facts.run(asking, ledger, ranked)
                state.memory = self.update_memory.run(asking, ledger, ranked.knowing(notes=state.memory))
                if not self.check_sufficiency.run(asking, ledger, ranked.knowing(notes=state.memory)):
                    break
                frontier, hops = self._extend(state, ranked), hops + 1
            if not answer:
                return dspy.Prediction(ranked=ranked, state=state)
            if not ranked.candidates:
                raise Ended(StopReason.DEAD_END)
            state.final, extracted = self.extract_answers.run(asking, ledger, ranked.knowing(notes=state.memory,
                                                                                            facts=state.facts))
            state.final = self.value_check.run(asking, ledger, Answers(state.final, state.relations))  # a value compared
            state.stop(StopReason.CHOSEN if extracted else StopReason.PLAN_DONE)
        return self.prediction(state)

    def _walk(self, state: WalkState, frontier: list[Trail], hops: int) -> None:
        """Hop by hop from `frontier` until hop `hops`, nothing is left to go on from, or the LLM
        budget is spent: every relation of the frontier retrieved in one query, the relations to go
        on by (the prune's, then the beam's), the entities to go on from; at a dead end, reflection."""
        asking, ledger = state.asking, state.ledger
        while frontier and state.depth < hops and not ledger.budget_hit:
            reach = self._expand(state, frontier, hops=hops)
            if not reach.trails:
                frontier = self._resume(state, reach)
                continue
            state.depth = reach.depth
            reach = self._beam(state, reach, self.prune_relations.run(asking, ledger, reach))
            frontier = self._go_on(state, reach, self.prune_entities.run(asking, ledger, reach))

    def _resume(self, state: WalkState, reach: Reach) -> list[Trail]:
        """At the dead end `reach`, reflection's entities passed a hop before, to take the same hop
        again from; none ends the walk at this hop."""
        frontier, state.reflections = self.reflect.run(state.asking, state.ledger,
                                                       DeadEnd.of(reach, state.seen, state.reflections))
        if not frontier:
            state.depth = reach.depth
        return frontier

    # -- the walk's parts without an LLM call ---------------------------------------------------

    def choose_topics_of(self, state: WalkState, linking: Linking) -> list[LinkCandidate]:
        """The topic entities among the linker's candidates: the topic choice's (`TopicChoice`)."""
        options = TopicOptions(linking.linked, self.linker.plausible(linking))
        return self.choose_topics.run(state.asking, state.ledger, options)

    def _chain_votes(self, asking: Asking) -> Votes:
        """The compiled chain prior's weights for this question's relation chains (`programs.chains`):
        none when the program was compiled without gold paths, or the prior is switched off."""
        if not asking.config.chain_prior:
            return Votes()
        return self.chain_prior.ask(asking.question, [t.label for t in asking.topics], self.embedder.encode)

    def _start(self, state: WalkState) -> tuple[list[Trail], int]:
        """The first frontier (the topic entities, their relations fetched in one query) and the hops
        to walk: the plan's, at least `min_depth` (2 where nameless nodes are stepped through), at most `depth`."""
        asking = state.asking
        state.relations = dict(asking.kg.relations(asking.topic_ids).items)
        floor = asking.config.min_depth or (2 if asking.kg.profile.step_through_unnamed else 1)
        return [Trail(topic) for topic in asking.topics], min(max(len(asking.hop_targets), floor), asking.config.depth)

    def _expand(self, state: WalkState, frontier: list[Trail], *, hops: int) -> Reach:
        """The next hop: every relation of the frontier followed in one query (CVT nodes stepped
        through), the trails reached grouped by relation label. At the plan's last hop, the chains
        by the relation its target clearly names are kept (`state.named`); every hop's
        relations are ranked by the relation its target names, once (`Reach.ranked`, `Reach.named`)."""
        asking, depth = state.asking, state.depth + 1
        asking.kg.fill_relations(state.relations, (t.end.id for t in frontier if not t.end.literal))
        steps = [(t, e, t.score) for t in frontier for e in self._onward(state, t, state.relations)]
        groups, around = self._follow(state, steps, more=True) if steps else ([], {})
        state.relations.update(around)
        by_label: dict[str, list[Trail]] = defaultdict(list)
        for group in groups:
            label = render.compound_label(group.edges)
            for prefix, node in group.members:
                trail = group.trail.extend(prefix + (Hop(group.edges[-1].relation, group.edges[-1].direction, node),), 1.0)
                by_label[label].append(trail)
                state.seen.setdefault(node.id, trail)
        ranked, named = named_relation(asking, sorted(by_label), self.embedder, depth=depth)
        if depth == len(asking.hop_targets):  # the plan's last hop: its candidates by the relation it names
            state.named |= {t.chain for t in by_label.get(named, ())}
        reach = Reach(depth, asking.hop_target(depth), depth >= hops, tuple(frontier), dict(by_label), tuple(ranked), named)
        state.hops.append(reach)
        return reach

    def _beam(self, state: WalkState, reach: Reach, pruned: list[str]) -> Reach:
        """The hop with the labels the walk goes on by: the relation prune's choices (factor 1.0),
        then the other relations most likely to lead to the answer (0.5), up to `beam_width`
        (retrieval breadth: a poor choice loses no candidate the beam would find); the rest stay
        candidates at `NOT_GONE_ON`. Most likely: by the compiled path scorer where there is one
        (`_beam_scores`), else the chains most like the question, or beginning the chains that
        training questions like it went by. Nothing at the plan's last hop."""
        if reach.last:
            return reach
        others = [label for label in reach.by_label if label not in pruned]
        scores = self._beam_scores(state, {label: reach.by_label[label] for label in others}) if others else {}
        filled = sorted(others, key=lambda label: (-scores[label], label))[: max(0, state.asking.config.beam_width - len(pruned))]
        factors = {label: NOT_GONE_ON for label in reach.by_label} | {label: 1.0 for label in pruned} | {label: 0.5 for label in filled}
        scored = {label: [Trail(t.topic, t.hops, t.score * factors[label]) for t in trails] for label, trails in reach.by_label.items()}
        chosen = tuple(label for label, factor in factors.items() if factor > NOT_GONE_ON)
        state.hops[-1] = reach = replace(reach, pruned=tuple(pruned), chosen=chosen, scored=scored)
        return reach

    def _beam_scores(self, state: WalkState, by_label: dict[str, list[Trail]]) -> dict[str, float]:
        """How likely each relation is to lead to the answer. With the path scorer: its best score
        for the first `BEAM_TRAILS` trails the relation reached (a path to an entity on the way
        reads like one to an answer). Without: similarity of the chain's words to the question, plus
        the chain prior's weight for the chains it begins."""
        asking = state.asking
        phrase = asking.kg.profile.relation_phrase
        if asking.config.path_scorer and self.path_scorer.trained:
            state.scorer_used = True
            trails = [(label, t) for label, reached in by_label.items() for t in reached[:BEAM_TRAILS]]
            scored = self.path_scorer.scores(asking.question, [render.plain_path(t, phrase=phrase) for _, t in trails])
            best: dict[str, float] = {}
            for (label, _), score in zip(trails, scored):
                best[label] = max(best.get(label, score), score)
            return best
        labels = list(by_label)
        similar = self.embedder.similarities(asking.question, [chain_words(by_label[label][0].chain, phrase) for label in labels])
        return {label: s + PRIOR_WEIGHT * asking.votes.prefix(by_label[label][0].relations) for label, s in zip(labels, similar)}

    def _go_on(self, state: WalkState, reach: Reach, kept: list[Trail]) -> list[Trail]:
        """Every trail the hop reached kept as a candidate, scored by the choice (but those the entity
        prune ruled out by the question's conditions), and the next frontier: the entities kept (none
        after the plan's last hop)."""
        if reach.last:
            state.hops[-1] = replace(reach, ruled_out=frozenset())
            state.reached += reach.trails
            return []
        ruled_out = {t.end.id for t in reach.ahead} - {t.end.id for t in kept}  # by the conditions: no candidate either
        state.hops[-1] = replace(reach, ruled_out=frozenset(ruled_out))
        state.reached += [t for trails in reach.scored.values() for t in trails if t.end.id not in ruled_out]
        return self._frontier(state, kept)

    def _frontier(self, state: WalkState, trails: list[Trail]) -> list[Trail]:
        """The trails to go on from: one per entity, values excluded, best scores first, at most `max_frontier`."""
        frontier: dict[str, Trail] = {}
        for trail in sorted(trails, key=lambda t: -t.score):
            if not trail.end.literal and trail.end.id not in frontier and trail.end.id not in state.asking.topic_ids:
                frontier[trail.end.id] = trail
        return list(frontier.values())[: state.asking.config.max_frontier]

    def _ranked(self, state: WalkState) -> Ranked:
        """Every answer reached, in the hand-set order (`programs.ranking.rank`), then the first ones in
        the compiled path scorer's where the program has one (`scored_order`); the ones extraction is
        shown; and, worked out once here, whether extraction and sufficiency have anything to decide."""
        asking, config = state.asking, state.asking.config
        candidates = rank(asking, state.reached, self.embedder, depth=state.depth, extensions=state.extensions,
                          named=state.named)
        ordered = scored_order(asking, self.path_scorer, candidates)
        state.scorer_used |= bool(ordered) and ordered[0].share is not None
        shown = chains_spread(ordered, config.choices_shown, config.choices_per_chain)
        onward = self._prior_onward(state)
        state.ranked = Ranked(ordered, shown, list(state.reached), state.relations, state.depth, state.extensions,
                              settled=settled(asking, shown, sure=self.sure_at),
                              short=short(asking, ordered, depth=state.depth, extensions=state.extensions, onward=bool(onward)),
                              onward=onward)
        return state.ranked

    def _prior_onward(self, state: WalkState) -> tuple[Trail, ...]:
        """Where the walk stopped on the way of the chain the compiled prior is sure of (it weighs at
        least `PRIOR_SURE`) and reached none of its ends: the trails that went furthest along it, to
        go on from. The 1.5B plan counts hops worse than questions worded alike answer: "the films
        written by the writer of [X] starred who" planned `written by`, `starred actors`."""
        chain = state.asking.votes.sure(PRIOR_SURE)
        if chain is None or any(trail.relations == chain for trail in state.reached):
            return ()
        along = [trail for trail in state.reached if trail.relations and chain[: len(trail.relations)] == trail.relations]
        furthest = max((len(trail.relations) for trail in along), default=0)
        return tuple(trail for trail in along if len(trail.relations) == furthest)

    @property
    def sure_at(self) -> float | None:
        """The share of the path scorer's softmax at which its first candidate answers without
        extraction: the compiled one, unless the config sets it."""
        return self.path_scorer.sure_at if self.config.scorer_sure is None else self.config.scorer_sure

    def _extend(self, state: WalkState, ranked: Ranked) -> list[Trail]:
        """One hop more, as sufficiency asked: the frontier is the trails the chain prior's sure chain
        goes on from (`Ranked.onward`) where it decided, else every end of the best candidates'
        relation chains, best first."""
        state.extensions += 1
        if ranked.short == GOES_ON:
            return self._frontier(state, list(ranked.onward))
        candidates = ranked.candidates
        best = dict.fromkeys(c.trail.chain for c in candidates[: state.asking.config.sufficiency_shown])  # best first
        by_chain: dict[tuple, list[Trail]] = defaultdict(list)
        for trail in state.reached:
            if trail.chain in best:
                by_chain[trail.chain].append(trail)
        return self._frontier(state, [t for chain in best for t in by_chain[chain]])

    def _answer(self, state: WalkState) -> tuple[list[str], list[str]]:
        """The extracted answers, then the other ends of their chains; each once, with GCR paths."""
        answers, paths = [], []
        for trail in state.final:
            label = render.node_label(trail.end)
            if label not in answers:
                answers.append(label)
                if len(paths) < state.asking.config.answer_paths:
                    paths.append(render.gcr_path(trail, label))
        return answers[: state.asking.config.max_answers], paths

    def _trace(self, state: WalkState) -> Trace:
        """The trace, completed from the walk's state: each hop, the chain prior's heaviest votes, whether
        the path scorer ordered anything, the reflections, and the candidates extraction was shown."""
        trace = super()._trace(state)
        trace.walk = [_hop_log(reach) for reach in state.hops]
        heaviest = sorted(state.asking.votes.chains.items(), key=lambda item: -item[1])[:_LOGGED_PRIOR]
        trace.prior_chains = [[" -> ".join(chain), round(weight, 3)] for chain, weight in heaviest]
        trace.path_scorer, trace.reflections = state.scorer_used, state.reflections
        if state.ranked is not None and state.ranked.shown:
            trace.candidates = [c.label for c in state.ranked.shown]
            trace.first_share = state.ranked.shown[0].share
        return trace


def _hop_log(reach: Reach) -> dict:
    """A hop as the trace logs it: what it reached by, the prune's choice, the labels gone on by, and
    its edges (once the walk went on), each with whether the walk went on from it."""
    edges = [] if reach.ruled_out is None else [
        _edge(t, reach.last or (label in reach.chosen and t.end.id not in reach.ruled_out))
        for label, trails in reach.by_label.items() for t in trails][:_LOGGED_EDGES]
    return {"depth": reach.depth, "target": reach.target, "offered": reach.labels[:_LOGGED_RELATIONS],
            "pruned": list(reach.pruned), "chosen": list(reach.chosen), "edges": edges}


def _edge(trail: Trail, kept: bool) -> list:
    """A hop's edge as the trace logs it: from, relation, to, whether the walk went on from it."""
    hops = trail.hops[-2:] if len(trail.hops) > 1 and not trail.hops[-2].node.name and not trail.hops[-2].node.literal else trail.hops[-1:]
    start = trail.nodes()[-len(hops) - 1]
    return [render.node_label(start), render.compound_label([h.edge for h in hops]), render.node_label(trail.end), kept]
