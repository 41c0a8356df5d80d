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
from dataclasses import dataclass, field

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
from kgqa.programs.ranking import SCORED, Candidate, chain_words, rank, scored_order, scored_text
from kgqa.programs.scorer import PathScorer
from kgqa.programs.state import WalkState
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
from kgqa.programs.steps.calls import demo_topic
from kgqa.programs.steps.relation_prune import named_relation
from kgqa.programs.trace import StopReason, Trace, token_totals
from kgqa.programs.trails import Hop, Trail
from kgqa.programs.tuned import BEAM_TRAILS, NOT_GONE_ON, PRIOR_WEIGHT

_LOGGED_RELATIONS, _LOGGED_EDGES = 12, 60  # per hop, in the trace's `walk`
_LOGGED_PRIOR = 3  # the chain prior's heaviest chains, in the trace

__all__ = ["KGQA", "SCORED", "Candidate", "scored_text"]


@dataclass
class Reached:
    """What one hop reached, by relation label ('a -> b' through nameless nodes), its trace entry,
    and, once the prune and the beam chose, each trail scored by that choice."""

    by_label: dict[str, list[Trail]]
    logged: dict
    scored: dict[str, list[Trail]] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return sorted(self.by_label)

    @property
    def trails(self) -> list[Trail]:
        return [t for trails in self.by_label.values() for t in trails]


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
        gives the walk's `candidates` (best first) and its `state`, errors raised: what compiling labels."""
        with self.walking(question, deadline=deadline, errors_end_it=answer) as state:
            ledger = state.ledger  # what the question spends: every step's outcome, calls and tokens
            if problem := question_problem(question, list(topic_entities) if topic_entities is not None else None):
                raise Ended(StopReason.BAD_QUESTION, problem)
            topics = self._topics(state, topic_entities)  # the given ids, or linked (with the topic choice); none ends it
            state.asking = state.asking.knowing(topics)  # its words, read once
            targets, conditions = self.plan.run(state.asking, ledger)  # what each hop reaches, what the answer satisfies
            state.asking = asking = state.asking.planned(targets, conditions, votes=self._chain_votes(state))
            frontier, hops = self._start(state)
            while True:
                while frontier and state.depth < hops and not ledger.budget_hit:
                    reached = self._expand(state, frontier)  # every relation of the frontier, in one query
                    if not reached.trails:  # a dead end: reflection, to resume from entities passed a hop before
                        frontier = self.reflect.run(asking, ledger, frontier, seen=state.seen, depth=state.depth,
                                                    made=state.trace.reflections)
                        state.depth -= bool(frontier)  # the hop is taken again from them
                        continue
                    depth, last = state.depth, state.depth >= hops  # the plan's last hop: extraction chooses there
                    chosen = self.prune_relations.run(asking, ledger, reached.labels, frontier, depth=depth, last=last)
                    ahead = self._beam(state, reached, chosen, last=last)  # with the beam's relations
                    kept = self.prune_entities.run(asking, ledger, ahead, depth=depth, last=last)  # entity prune
                    frontier = self._go_on(state, reached, kept, last=last)
                candidates = self._ranked(state)  # every end reached, ranked, then by the path scorer
                shown = self.extract_answers.choices(asking, candidates)  # what extraction would be shown
                settled = self.extract_answers.skip(asking, candidates, shown, sure=self.sure_at, reached=state.reached)
                short = self.check_sufficiency.skip(asking, candidates, depth=state.depth, extensions=state.extensions)
                state.facts = self.filter_facts.run(asking, ledger, shown, state.relations, settled=settled)
                state.memory = self.update_memory.run(asking, ledger, candidates, state.reached, state.memory,
                                                      short=short, settled=settled)
                if not self.check_sufficiency.run(asking, ledger, candidates, depth=state.depth,
                                                  extensions=state.extensions, notes=state.memory, skip=short):
                    break
                frontier, hops = self._extend(state, candidates), hops + 1
            if not answer:
                return dspy.Prediction(candidates=candidates, state=state)
            if not candidates:
                raise Ended(StopReason.DEAD_END)
            state.trace.candidates, state.trace.first_share = [c.label for c in shown], shown[0].share
            state.final, extracted = self.extract_answers.run(asking, ledger, candidates, shown, sure=self.sure_at,
                                                              reached=state.reached, facts=state.facts, notes=state.memory,
                                                              skip=settled)
            state.final = self.value_check.run(asking, ledger, state.final, state.relations)  # where a value is compared
            state.stop(StopReason.CHOSEN if extracted else StopReason.PLAN_DONE)
        return self.prediction(state)

    def before_extraction(self, question: str, topic_entities: Sequence[str] | None = None) -> tuple[list[Candidate], WalkState | None]:
        """The walk's candidates, best first, and its state, stopped before path answer extraction
        (none on a bad question or unknown topics): what compiling labels and the benches rank."""
        walk = self(question, topic_entities, answer=False)
        return walk.get("candidates") or [], walk.get("state")

    def labeling_inputs(self, question: str, topic_entities: Sequence[str] | None = None) -> dict | None:
        """What path answer extraction and answer sufficiency would be shown for `question` under the
        current LM, from one walk; None when the walk reaches nothing. What compiling labels with the
        gold answers (`optimizers.labels.gold_demos`):
        - `extraction`: its inputs and the candidates' labels (`candidates`);
        - `sufficiency`: the best paths it is shown once the walk has retrieved all it will
          (`best_paths`), each one's end (`ends`) and the same path cut back to the last named entity
          before its end (`cut_paths`; None where that is the topic entity): a path that ends at a
          gold answer reaches it, the same path cut back stops a hop short;
        - `scorer`: the first `SCORED` candidates in the order the walk ranks them, each as the path
          scorer reads it (`paths`) and its label (`candidates`): what the path scorer is fitted on
          (`optimizers.labels.gold_labels`), in the hand-set order while it is untrained."""
        candidates, state = self.before_extraction(question, topic_entities)
        if not candidates:
            return None
        asking = state.asking
        best = candidates[: asking.config.sufficiency_shown]
        choices = self.extract_answers.choices(asking, candidates)
        topic = demo_topic(asking)
        return {
            "extraction": {"candidate_paths": [c.path for c in choices], "known_facts": list(state.facts),
                           "memory_notes": list(state.memory), "candidates": [c.label for c in choices],
                           "topic": topic},
            "sufficiency": {"best_paths": [c.path for c in best], "ends": [c.label for c in best],
                            "cut_paths": [render.plain_path(cut, phrase=asking.kg.profile.relation_phrase) if cut else None
                                          for cut in (c.trail.cut_back() for c in best)],
                            "topic": topic},
            "scorer": {"paths": [scored_text(c) for c in candidates[:SCORED]], "candidates": [c.label for c in candidates[:SCORED]]},
        }

    def ranked_choices(self, question: str, topic_entities: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
        """Every candidate answer the walk reaches for `question` under the current LM, best first,
        and the ones path answer extraction would be shown (labels): what `bench.replay` compares."""
        candidates, state = self.before_extraction(question, topic_entities)
        shown = self.extract_answers.choices(state.asking, candidates) if candidates else []
        return [c.label for c in candidates], [c.label for c in shown]

    def link_question(self, question: str) -> tuple[Linking, Trace]:
        """A question without ids linked as the walk links it (the linker, then the topic choice),
        with the trace of it (LLM calls, the choice's outcome): what `bench.linking` scores."""
        state = self._new_state(question)
        kg = state.asking.kg
        linking = self.linker.link(question, self.names(kg), graph=kg)
        with dspy.track_usage() as usage:
            linking.linked = self._choose_topics(state, linking)
        state.trace.input_tokens, state.trace.output_tokens = token_totals(usage)
        return linking, state.trace

    def topic_choice_inputs(self, question: str) -> dict | None:
        """What the topic choice would be shown for `question` asked without ids (`candidate_entities`)
        and the linker's candidates behind them (`candidates`); None when it would not be asked.
        What compiling labels with the gold topic entities."""
        asking = self._new_state(question).asking
        plausible = self.linker.plausible(self.linker.link(question, self.names(asking.kg), graph=asking.kg))
        if len(plausible) <= 1:
            return None
        return {"candidate_entities": self.choose_topics.labels(asking, plausible), "candidates": plausible}

    # -- the walk's parts without an LLM call ---------------------------------------------------

    def _choose_topics(self, state: WalkState, linking: Linking) -> list[LinkCandidate]:
        """The topic entities among the linker's candidates: the topic choice's (`TopicChoice`)."""
        return self.choose_topics.run(state.asking, state.ledger, linking, self.linker.plausible(linking))

    def _chain_votes(self, state: WalkState) -> Votes:
        """The compiled chain prior's weights for this question's relation chains (`programs.chains`):
        none when the program was compiled without gold paths, or the prior is switched off."""
        if not state.asking.config.chain_prior:
            return Votes()
        votes = self.chain_prior.votes(state.asking.question, self.embedder.encode)
        heaviest = sorted(votes.chains.items(), key=lambda item: -item[1])[:_LOGGED_PRIOR]
        state.trace.prior_chains = [[" -> ".join(chain), round(weight, 3)] for chain, weight in heaviest]
        return votes

    def _start(self, state: WalkState) -> tuple[list[Trail], int]:
        """The first frontier (the topic entities, their relations fetched in one query) and the hops
        to walk: the plan's, at least `min_depth` (2 where nameless nodes are stepped through), at most `depth`."""
        asking = state.asking
        state.relations = dict(asking.kg.relations(asking.topic_ids).items)
        floor = asking.config.min_depth or (2 if asking.kg.profile.step_through_unnamed else 1)
        return [Trail(topic) for topic in asking.topics], min(max(len(asking.hop_targets), floor), asking.config.depth)

    def _expand(self, state: WalkState, frontier: list[Trail]) -> Reached:
        """One hop: every relation of the frontier followed in one query (CVT nodes stepped through),
        the trails reached grouped by relation label. At the plan's last hop, the chains by the
        relation its target clearly names are kept (`state.named`)."""
        state.depth += 1
        missing = [t.end.id for t in frontier if t.end.id not in state.relations and not t.end.literal]
        if missing:  # entities brought back by reflection or an extension
            state.relations.update(state.asking.kg.relations(missing).items)
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
        if state.depth == len(state.asking.hop_targets):  # the plan's last hop: does its target name one relation?
            named = named_relation(state.asking, sorted(by_label), self.embedder, depth=state.depth)[1]
            state.named |= {t.chain for t in by_label.get(named, ())}
        logged = {"depth": state.depth, "target": state.asking.hop_target(state.depth), "offered": sorted(by_label)[:_LOGGED_RELATIONS],
                  "pruned": [], "chosen": [], "edges": []}
        state.trace.walk.append(logged)
        return Reached(dict(by_label), logged)

    def _beam(self, state: WalkState, reached: Reached, chosen: list[str], *, last: bool) -> list[Trail]:
        """The trails the walk goes on by: the relation prune's choices (factor 1.0), then the other
        relations most likely to lead to the answer (0.5), up to `beam_width` (retrieval breadth: a
        poor choice loses no candidate the beam would find); the rest stay candidates at
        `NOT_GONE_ON`. Most likely: by the compiled path scorer where there is one
        (`_beam_scores`), else the chains most like the question, or beginning the chains that
        training questions like it went by. Nothing at the plan's last hop."""
        if last:
            return []
        reached.logged["pruned"] = list(chosen)  # the relation prune's own choice; "chosen" adds the beam's
        others = [label for label in reached.by_label if label not in chosen]
        scores = self._beam_scores(state, {label: reached.by_label[label] for label in others}) if others else {}
        filled = sorted(others, key=lambda label: (-scores[label], label))[: max(0, state.asking.config.beam_width - len(chosen))]
        factors = {label: NOT_GONE_ON for label in reached.by_label} | {label: 1.0 for label in chosen} | {label: 0.5 for label in filled}
        reached.logged["chosen"] = [label for label, factor in factors.items() if factor > NOT_GONE_ON]
        reached.scored = {label: [Trail(t.topic, t.hops, t.score * factors[label]) for t in trails]
                          for label, trails in reached.by_label.items()}
        return [t for label in reached.logged["chosen"] for t in reached.scored[label]]

    def _beam_scores(self, state: WalkState, by_label: dict[str, list[Trail]]) -> dict[str, float]:
        """How likely each relation is to lead to the answer. With the path scorer: its best score
        for the first `BEAM_TRAILS` trails the relation reached (a path to an entity on the way
        reads like one to an answer). Without: similarity of the chain's words to the question, plus
        the chain prior's weight for the chains it begins."""
        asking = state.asking
        if asking.config.path_scorer and self.path_scorer.trained:
            state.trace.path_scorer = True
            trails = [(label, t) for label, reached in by_label.items() for t in reached[:BEAM_TRAILS]]
            phrase = asking.kg.profile.relation_phrase
            scored = self.path_scorer.scores(asking.question, [render.plain_path(t, phrase=phrase) for _, t in trails])
            best: dict[str, float] = {}
            for (label, _), score in zip(trails, scored):
                best[label] = max(best.get(label, score), score)
            return best
        labels = list(by_label)
        phrase = asking.kg.profile.relation_phrase
        similar = self.embedder.similarities(asking.question, [chain_words(by_label[label][0].chain, phrase) for label in labels])
        return {label: s + PRIOR_WEIGHT * asking.votes.prefix(by_label[label][0].relations) for label, s in zip(labels, similar)}

    def _go_on(self, state: WalkState, reached: Reached, kept: list[Trail], *, last: bool) -> list[Trail]:
        """Every trail reached kept as a candidate, scored by the choice (but those the entity prune
        ruled out by the question's conditions), and the next frontier: the entities kept (none
        after the plan's last hop)."""
        if last:
            reached.logged["edges"] = [_edge(t, True) for t in reached.trails[:_LOGGED_EDGES]]
            state.reached += reached.trails
            return []
        ahead = {t.end.id for label in reached.logged["chosen"] for t in reached.scored[label]}
        ruled_out = ahead - {t.end.id for t in kept}  # by the question's conditions: no candidate either
        chosen = set(reached.logged["chosen"])
        reached.logged["edges"] = [_edge(t, label in chosen and t.end.id not in ruled_out)
                                   for label, trails in reached.by_label.items() for t in trails][:_LOGGED_EDGES]
        state.reached += [t for trails in reached.scored.values() for t in trails if t.end.id not in ruled_out]
        return self._frontier(state, kept)

    def _frontier(self, state: WalkState, trails: list[Trail]) -> list[Trail]:
        """The trails to go on from: one per entity, values excluded, best scores first, at most `max_frontier`."""
        frontier: dict[str, Trail] = {}
        for trail in sorted(trails, key=lambda t: -t.score):
            if not trail.end.literal and trail.end.id not in frontier and trail.end.id not in state.asking.topic_ids:
                frontier[trail.end.id] = trail
        return list(frontier.values())[: state.asking.config.max_frontier]

    def _ranked(self, state: WalkState) -> list[Candidate]:
        """Every answer reached, in the hand-set order (`programs.ranking.rank`), then the first ones
        in the compiled path scorer's where the program has one (`scored_order`)."""
        candidates = rank(state.asking, state.reached, self.embedder, depth=state.depth, extensions=state.extensions,
                          named=state.named)
        ordered = scored_order(state.asking, self.path_scorer, candidates)
        if ordered and ordered[0].share is not None:
            state.trace.path_scorer = True
        return ordered

    @property
    def sure_at(self) -> float | None:
        """The share of the path scorer's softmax at which its first candidate answers without
        extraction: the compiled one, unless the config sets it."""
        return self.path_scorer.sure_at if self.config.scorer_sure is None else self.config.scorer_sure

    def _extend(self, state: WalkState, candidates: list[Candidate]) -> list[Trail]:
        """One hop more, as sufficiency asked: the frontier is every end of the best candidates'
        relation chains, best first."""
        state.extensions += 1
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


def _edge(trail: Trail, kept: bool) -> list:
    """A hop's edge as the trace logs it: from, relation, to, whether the walk went on from it."""
    hops = trail.hops[-2:] if len(trail.hops) > 1 and not trail.hops[-2].node.name and not trail.hops[-2].node.literal else trail.hops[-1:]
    start = trail.nodes()[-len(hops) - 1]
    return [render.node_label(start), render.compound_label([h.edge for h in hops]), render.node_label(trail.end), kept]
