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

| step | method | predictor | signature | file | skipped when |
|---|---|---|---|---|---|
| topic choice | `_choose_topics` | `choose_topics` | `ChooseTopicEntities` | signatures/link.py | topics given; one plausible candidate |
| plan | `_plan` | `plan` | `Plan` | signatures/plan.py | never |
| relation prune | `_prune_relations` | `prune_relations` | `PruneRelations` | signatures/prune.py | the plan's last hop (extraction chooses there); one relation reached; the hop's target names its relation |
| entity prune | `_prune_entities` | `prune_entities` | `PruneEntities` | signatures/prune.py | the plan sets no condition; few entities to go on from |
| fact filter | `_filter_facts` | `filter_facts` | `FilterFacts` | signatures/facts.py | the question sets no condition; extraction is skipped (nothing reads the facts); no facts about the candidates |
| memory update | `_update_memory` | `update_memory` | `UpdateMemory` | signatures/memory.py | the question names one entity; sufficiency and extraction are both skipped (nothing reads the notes) |
| answer sufficiency | `_go_further` | `check_sufficiency` | `CheckSufficiency` | signatures/answer.py | at the deepest hop; extensions used up; the walk already went past the plan; nothing reached; the best path goes by the relation the plan's last hop names |
| path answer extraction | `_extract` | `extract_answers` | `ExtractAnswers` | signatures/answer.py | one candidate, or one relation chain; one candidate where the paths from the most topic entities meet in fewer hops than at any other; the question sets no condition and the best path, from every topic entity, goes by the relation the plan's last hop names |
| value check (no LLM call) | `ValueCheck` | none | none (`programs/values.py`) | programs/steps/value_check.py | the question compares no value; too few answers; no value of the answers is like the question's words |
| reflection | `_reflect` | `reflect` | `Reflect` | signatures/reflect.py | no dead end |

Every step can be switched off (`WalkConfig`), and the trace records, for each step, whether it ran,
was skipped (and why) or fell back. Choices are typed as the candidates offered
(`kgqa.signatures.choices`), so an LM that takes a JSON schema cannot invent or over-select one;
every selection is still checked against its candidates. A step whose reply is unusable falls back
to embedding similarity; an LM that does not answer ends the question (`StopReason.LM_ERROR`).
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

import dspy
import pydantic

from kgqa.data.questions import question_problem
from kgqa.kg import KnowledgeGraph, Step
from kgqa.programs import render
from kgqa.programs.base import KGProgram, WalkState
from kgqa.programs.chains import ChainPrior, Votes
from kgqa.programs.config import WalkConfig
from kgqa.programs.embedder import Embedder
from kgqa.programs.linking import Candidate as LinkCandidate
from kgqa.programs.linking import Linker, Linking
from kgqa.programs.question import Question, end_at_answer, hop_relation, start_after_topic
from kgqa.programs.scorer import PathScorer
from kgqa.programs.steps import ValueCheck
from kgqa.programs.trace import StopReason, Trace, token_totals
from kgqa.programs.trails import Hop, Trail
from kgqa.signatures import (
    CheckSufficiency,
    ChooseTopicEntities,
    ExtractAnswers,
    FilterFacts,
    Plan,
    PruneEntities,
    PruneRelations,
    Reflect,
    UpdateMemory,
)

log = logging.getLogger(__name__)
_LOGGED_RELATIONS, _LOGGED_EDGES = 12, 60  # per hop, in the trace's `walk`
_PAIRS_PER_CHAIN = 30  # ends of one relation chain scored with their names
_BEAM_TRAILS = 3  # trails of one relation the path scorer reads when it fills the beam
_NOT_GONE_ON = 0.25  # the score factor of a relation neither the prune nor the beam chose (its ends stay candidates)
_PLANNED_BONUS = 0.3  # added to the similarity (0..1) of a candidate on the plan's chosen chain at its depth
_VALUES_PER_FACT = 3  # values of one (candidate, relation) shown in one fact
_TOPIC_RELATIONS = 4  # relations shown with each candidate topic entity
_LOGGED_PRIOR = 3  # the chain prior's heaviest chains, in the trace
SCORED = 60  # candidates the path scorer orders (the hand-set order's first); the rest follow

__all__ = ["KGQA", "SCORED", "Candidate", "scored_text"]


@dataclass(frozen=True)
class Candidate:
    """One answer the walk reached: its best trail, how many topic entities reach it, and in how many
    hops in all (each topic entity's shortest trail to it, summed): where their paths meet."""

    label: str
    trail: Trail
    topics: int
    meets: int
    path: str  # the trail as the model reads it: names and relation phrases, directions left out (on graphs
    # cut from retrieved paths they point the way a retriever walked, not always Freebase's way)


class KGQA(KGProgram):
    """The walk. `forward(question, topic_entities=None)` returns answers, GCR-style reasoning paths
    and a trace of what each step did, what the walk spent and why it stopped."""

    def __init__(
        self, kg: KnowledgeGraph | None = None, *, config: WalkConfig | None = None, embedder: Embedder | None = None,
        linker: Linker | None = None, chain_prior: ChainPrior | None = None, path_scorer: PathScorer | None = None,
    ) -> None:
        super().__init__(kg, config=config, embedder=embedder, linker=linker, chain_prior=chain_prior)
        self.path_scorer = path_scorer or PathScorer()
        self.plan = dspy.Predict(Plan)
        self.prune_relations = dspy.Predict(PruneRelations)
        self.prune_entities = dspy.Predict(PruneEntities)
        self.filter_facts = dspy.Predict(FilterFacts)
        self.update_memory = dspy.Predict(UpdateMemory)
        self.check_sufficiency = dspy.Predict(CheckSufficiency)
        self.extract_answers = dspy.Predict(ExtractAnswers)
        self.reflect = dspy.Predict(Reflect)
        self.choose_topics = dspy.Predict(ChooseTopicEntities)
        self.value_check = ValueCheck(self.embedder)

    # -- the algorithm -----------------------------------------------------------------------

    def _walk(self, state: WalkState, topic_entities: Sequence[str] | None) -> None:
        candidates = self._retrieve(state, topic_entities)
        if state.trace.stop_reason is not None:
            return None
        if not candidates:
            return state.stop(StopReason.DEAD_END)
        extracted = self._extract(state, candidates)  # path answer extraction
        state.final = self.value_check.run(state, state.final)  # where the question compares a value, the answers it holds for
        state.stop(StopReason.CHOSEN if extracted else StopReason.PLAN_DONE)

    def _retrieve(self, state: WalkState, topic_entities: Sequence[str] | None) -> list[Candidate]:
        """Everything before the answer step: topics, plan, the hops with their prunes, facts, memory
        and sufficiency. The candidate answers, best first; none (and the state stopped) on a bad
        question or unknown topics."""
        problem = question_problem(state.question, list(topic_entities) if topic_entities is not None else None)
        if problem:
            state.stop(StopReason.BAD_QUESTION, error=problem)
            return []
        state.topics, problem = self._topics(state, topic_entities)
        if not state.topics:
            state.stop(StopReason.NO_TOPIC_ENTITY, error=problem)
            return []
        state.asked = Question(state.question, tuple(t.label for t in state.topics))  # its words, read once
        state.hop_targets, state.conditions = self._plan(state)  # decompose
        state.votes = self._chain_votes(state)  # what training questions like it went by
        state.relations = dict(state.kg.relations(state.topic_ids).items)
        floor = state.config.min_depth or (2 if state.kg.profile.step_through_unnamed else 1)
        frontier, hops = [Trail(topic) for topic in state.topics], min(max(len(state.hop_targets), floor), state.config.depth)
        while True:
            while frontier and state.depth < hops and not state.budget_hit:
                frontier = self._hop(state, frontier, last=state.depth + 1 >= hops)  # retrieve, prune relations and entities
            candidates = self._scored_order(state, self._rank(state))
            shown = self._answer_choices(state, candidates)  # what extraction would be shown
            settled = self._settled_answer(state, shown)  # why extraction has nothing to decide, if it has not
            short = self._enough_reached(state, candidates)  # why sufficiency has nothing to decide, if it has not
            self._filter_facts(state, shown, settled=settled)  # fact filter
            self._update_memory(state, candidates, short=short, settled=settled)  # memory update
            if not self._go_further(state, candidates, skipped=short):  # answer sufficiency
                return candidates
            hops += 1
            state.trace.extended_hops += 1
            best = dict.fromkeys(_chain(c.trail) for c in candidates[: state.config.sufficiency_shown])  # best first
            by_chain: dict[tuple, list[Trail]] = defaultdict(list)
            for trail in state.reached:
                if _chain(trail) in best:
                    by_chain[_chain(trail)].append(trail)
            frontier = self._frontier(state, [t for chain in best for t in by_chain[chain]])

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
        state = self._new_state(question)
        candidates = self._retrieve(state, topic_entities)
        if not candidates:
            return None
        best = candidates[: state.config.sufficiency_shown]
        choices = self._answer_choices(state, candidates)
        topic = _demo_topic(state)
        return {
            "extraction": {"candidate_paths": [c.path for c in choices], "known_facts": list(state.facts),
                           "memory_notes": list(state.memory), "candidates": [c.label for c in choices],
                           "topic": topic},
            "sufficiency": {"best_paths": [c.path for c in best], "ends": [c.label for c in best],
                            "cut_paths": [render.plain_path(cut, phrase=state.kg.profile.relation_phrase) if cut else None for cut in (c.trail.cut_back() for c in best)],
                            "topic": topic},
            "scorer": {"paths": [scored_text(c) for c in candidates[:SCORED]], "candidates": [c.label for c in candidates[:SCORED]]},
        }

    def ranked_choices(self, question: str, topic_entities: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
        """Every candidate answer the walk reaches for `question` under the current LM, best first,
        and the ones path answer extraction would be shown (labels): what `bench.replay` compares."""
        state = self._new_state(question)
        candidates = self._retrieve(state, topic_entities)
        return [c.label for c in candidates], [c.label for c in self._answer_choices(state, candidates)]

    def link_question(self, question: str) -> tuple[Linking, Trace]:
        """A question without ids linked as the walk links it (the linker, then the topic choice),
        with the trace of it (LLM calls, the choice's outcome): what `bench.linking` scores."""
        state = self._new_state(question)
        linking = self.linker.link(question, self.names(state.kg), graph=state.kg)
        with dspy.track_usage() as usage:
            linking.linked = self._choose_topics(state, linking)
        state.trace.input_tokens, state.trace.output_tokens = token_totals(usage)
        return linking, state.trace

    def topic_choice_inputs(self, question: str) -> dict | None:
        """What the topic choice would be shown for `question` asked without ids (`candidate_entities`)
        and the linker's candidates behind them (`candidates`); None when it would not be asked.
        What compiling labels with the gold topic entities."""
        state = self._new_state(question)
        plausible = self.linker.plausible(self.linker.link(question, self.names(state.kg), graph=state.kg))
        if len(plausible) <= 1:
            return None
        return {"candidate_entities": self.topic_labels(state, plausible), "candidates": plausible}

    # -- steps -------------------------------------------------------------------------------

    def _choose_topics(self, state: WalkState, linking: Linking) -> list[LinkCandidate]:
        """The topic entities of a question without ids: the linker's choice when it is the one
        plausible candidate; else the model chooses among the plausible ones (the linker's and those
        scoring near them), each shown with what the graph relates it to (one query), so "Houston"
        the city and "Houston" the county differ, and a common word ("location") can be left out."""
        if not state.config.topic_choice:
            state.trace.record("topic_choice", "skipped", "switched off: the linker's choice")
            return linking.linked
        plausible = self.linker.plausible(linking)
        if len(plausible) <= 1:
            state.trace.record("topic_choice", "skipped", f"{len(plausible)} plausible candidate: the linker's choice")
            return linking.linked
        labels = self.topic_labels(state, plausible)
        kept = self._checked_choice(state, self.choose_topics, chosen="entities_meant", candidates=labels,
                                    limit=state.config.topics_chosen, question=state.question, candidate_entities=labels)
        if not kept:
            state.trace.fallbacks += 1
            state.trace.record("topic_choice", "fell_back", "no usable choice: the linker's")
            return linking.linked
        state.trace.record("topic_choice", "ran")
        return [plausible[labels.index(label)] for label in kept]

    def topic_labels(self, state: WalkState, candidates: Sequence[LinkCandidate]) -> list[str]:
        """Each candidate as the topic choice reads it, 'name (matched words): relations', with the
        relations around it most like the question; distinct, so a choice names one candidate."""
        around = dict(state.kg.relations([c.entity for c in candidates]).items)
        labels: list[str] = []
        for c in candidates:
            phrases = list(dict.fromkeys(state.kg.profile.relation_phrase(e.relation) for e in around.get(c.entity, ())))
            if len(phrases) > _TOPIC_RELATIONS:
                phrases = self.embedder.top(state.question, phrases, _TOPIC_RELATIONS)
            label = f"{c.name} ({c.mention.text if c.mention else 'implied'}): {'; '.join(phrases) or 'no relations'}"
            labels.append(label if label not in labels else f"{label} [{len(labels) + 1}]")
        return labels

    def _plan(self, state: WalkState) -> tuple[list[str], list[str]]:
        """What each hop reaches and what the answer must satisfy; one hop when the plan is unusable."""
        depth = state.config.depth
        signature = self.plan.signature.with_updated_fields("hop_targets", type_=_at_most(list[str], depth))
        out = self._call(state, self.plan, signature=signature, question=state.question,
                         topic=render.several([t.label for t in state.topics]))
        targets = [t.strip() for t in (out.hop_targets if out else []) if isinstance(t, str) and t.strip()]
        conditions = [c.strip() for c in (out.answer_constraints if out else []) if isinstance(c, str) and c.strip()]
        state.trace.record("plan", "ran" if targets else "fell_back", "" if targets else "no usable plan: one hop")
        if not targets:
            state.trace.fallbacks += 1
        topic_kind, answer_kind = (getattr(out, name, "") if out else "" for name in ("topic_kind", "answer_kind"))
        state.trace.raw_plan = {"topic_kind": topic_kind, "answer_kind": answer_kind, "hop_targets": targets}
        log.debug("plan for %r: %s -> %s, hops %s, conditions %s", state.question, topic_kind, answer_kind, targets, conditions)
        targets = end_at_answer(start_after_topic(targets, topic_kind), answer_kind)
        return targets[:depth] or [state.question], conditions[:3]

    def _chain_votes(self, state: WalkState) -> Votes:
        """The compiled chain prior's weights for this question's relation chains (`programs.chains`):
        none when the program was compiled without gold paths, or the prior is switched off."""
        if not state.config.chain_prior:
            return Votes()
        votes = self.chain_prior.votes(state.question, self.embedder.encode)
        heaviest = sorted(votes.chains.items(), key=lambda item: -item[1])[:_LOGGED_PRIOR]
        state.trace.prior_chains = [[" -> ".join(chain), round(weight, 3)] for chain, weight in heaviest]
        return votes

    def _hop(self, state: WalkState, frontier: list[Trail], *, last: bool) -> list[Trail]:
        """One hop: every relation of the frontier followed in one query (CVT nodes stepped through),
        every trail reached kept as a candidate; then, unless this is the plan's last hop, the
        relation prune and the entity prune choose what the walk goes on from."""
        state.depth += 1
        missing = [t.end.id for t in frontier if t.end.id not in state.relations and not t.end.literal]
        if missing:  # entities brought back by reflection or an extension
            state.relations.update(state.kg.relations(missing).items)
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
        reached = [t for trails in by_label.values() for t in trails]
        target = self._hop_target(state)
        if state.depth == len(state.hop_targets):  # the plan's last hop: does its target name one relation?
            named = self._named_relation(state, sorted(by_label))[1]
            state.named |= {_chain(t) for t in by_label.get(named, ())}
        logged = {"depth": state.depth, "target": target, "offered": sorted(by_label)[:_LOGGED_RELATIONS], "pruned": [],
                  "chosen": [], "edges": []}
        state.trace.walk.append(logged)
        if not reached:  # a dead end: resume from entities passed a hop before, or stop here
            resumed = self._reflect(state, frontier)
            if resumed:
                state.depth -= 1  # take this hop again from them
            return resumed
        if last:
            state.trace.record("relation_prune", "skipped", f"hop {state.depth} is the plan's last: extraction chooses among its ends")
            state.trace.record("entity_prune", "skipped", f"hop {state.depth} is the plan's last")
            logged["edges"] = [_edge(t, True) for t in reached[:_LOGGED_EDGES]]
            state.reached += reached
            return []
        chosen = self._prune_relations(state, sorted(by_label), frontier)
        logged["pruned"] = list(chosen)  # the relation prune's own choice; "chosen" adds the beam's
        factors = {label: _NOT_GONE_ON for label in by_label} | dict(self._beam(state, by_label, chosen))
        logged["chosen"] = [label for label, factor in factors.items() if factor > _NOT_GONE_ON]
        scored = {label: [Trail(t.topic, t.hops, t.score * factors[label]) for t in trails] for label, trails in by_label.items()}
        ahead = [t for label in logged["chosen"] for t in scored[label]]
        kept = self._prune_entities(state, ahead)
        ruled_out = {t.end.id for t in ahead} - {t.end.id for t in kept}  # by the question's conditions: no candidate either
        logged["edges"] = [_edge(t, factors[label] > _NOT_GONE_ON and t.end.id not in ruled_out)
                           for label, trails in by_label.items() for t in trails][:_LOGGED_EDGES]
        state.reached += [t for trails in scored.values() for t in trails if t.end.id not in ruled_out]  # scored by the choice
        return self._frontier(state, kept)

    def _prune_relations(self, state: WalkState, labels: list[str], frontier: list[Trail]) -> list[str]:
        """The relation prune: which of the relations this hop reached things by the walk goes on by."""
        if not state.config.relation_prune:
            state.trace.record("relation_prune", "skipped", "switched off: the chains most like the question")
            return []
        if len(labels) <= 1:
            state.trace.record("relation_prune", "skipped", f"{len(labels)} relation reached")
            return labels
        target = self._hop_target(state)
        ranked, named = self._named_relation(state, labels)
        if named:
            state.trace.record("relation_prune", "skipped", f"the hop's target {target!r} names its relation")
            return [named]
        fallbacks = state.trace.fallbacks
        picked = self._pick(
            state, self.prune_relations, offered="candidate_relations", chosen="relations_to_follow", candidates=ranked,
            limit=state.config.relations_per_entity, query=f"{target} {state.question}",
            question=state.question, plan=state.hop_targets, hop=f"hop {state.depth} of {max(state.depth, len(state.hop_targets))}: {target}",
            entity=render.several([render.node_label(t.end) for t in frontier]),
        )
        state.trace.record("relation_prune", "fell_back" if state.trace.fallbacks > fallbacks else "ran")
        return [label for label, _ in picked]

    def _named_relation(self, state: WalkState, labels: list[str]) -> tuple[list[str], str | None]:
        """The relations ranked by similarity to the hop's target, and the one it clearly names
        ("movie (directed by)" -> directed_by), if one is similar enough and ahead of the next. A
        target that spells its relation words in parentheses is compared by them ("movie (written
        by)": "written by", not the "movie" that directed_by fits as well), and a target names a
        relation, not its direction: directions are left out of the comparison."""
        words = [state.kg.profile.relation_words(label.replace(" (reverse)", "")) for label in labels]
        scores = dict(zip(labels, self.embedder.similarities(hop_relation(self._hop_target(state)), words)))
        ranked = sorted(labels, key=lambda label: (-scores[label], label))
        return ranked, ranked[0] if _clear(ranked, scores, state.config) else None

    def _beam(self, state: WalkState, by_label: dict[str, list[Trail]], chosen: list[str]) -> list[tuple[str, float]]:
        """The relations the walk goes on by, with the factor their trails' scores take: the relation
        prune's choices (1.0), then the others most likely to lead to the answer (0.5), up to
        `beam_width` (retrieval breadth: a poor choice loses no candidate the beam would find). Most
        likely: by the compiled path scorer where there is one (`_beam_scores`), else the chains most
        like the question, or beginning the chains that training questions like it went by."""
        others = [label for label in by_label if label not in chosen]
        scores = self._beam_scores(state, {label: by_label[label] for label in others}) if others else {}
        filled = sorted(others, key=lambda label: (-scores[label], label))[: max(0, state.config.beam_width - len(chosen))]
        return [(label, 1.0) for label in chosen] + [(label, 0.5) for label in filled]

    def _beam_scores(self, state: WalkState, by_label: dict[str, list[Trail]]) -> dict[str, float]:
        """How likely each relation is to lead to the answer. With the path scorer: its best score
        for the first `_BEAM_TRAILS` trails the relation reached (a path to an entity on the way
        reads like one to an answer). Without: similarity of the chain's words to the question, plus
        the chain prior's weight for the chains it begins."""
        if state.config.path_scorer and self.path_scorer.trained:
            state.trace.path_scorer = True
            trails = [(label, t) for label, reached in by_label.items() for t in reached[:_BEAM_TRAILS]]
            scored = self.path_scorer.scores(state.question, [render.plain_path(t, phrase=state.kg.profile.relation_phrase) for _, t in trails])
            best: dict[str, float] = {}
            for (label, _), score in zip(trails, scored):
                best[label] = max(best.get(label, score), score)
            return best
        labels = list(by_label)
        similar = self.embedder.similarities(state.question, [_chain_words(_chain(by_label[label][0]), state) for label in labels])
        weight = state.config.prior_weight
        return {label: s + weight * state.votes.prefix(_relations(by_label[label][0])) for label, s in zip(labels, similar)}

    def _prune_entities(self, state: WalkState, trails: list[Trail]) -> list[Trail]:
        """The entity prune: when the plan sets conditions and more entities are reached than
        `entities_per_relation`, the ones that meet them to go on from (values always pass); the
        others are ruled out as candidate answers too."""
        named = list(dict.fromkeys(render.node_label(t.end) for t in trails if not t.end.literal))
        if not state.config.entity_prune:
            state.trace.record("entity_prune", "skipped", "switched off: every entity")
            return trails
        if not state.conditions:
            state.trace.record("entity_prune", "skipped", "the plan sets no condition")
            return trails
        if len(named) <= state.config.entities_per_relation:
            state.trace.record("entity_prune", "skipped", f"{len(named)} entities to go on from")
            return trails
        fallbacks = state.trace.fallbacks
        picked = self._pick(
            state, self.prune_entities, offered="candidate_entities", chosen="entities_to_keep", candidates=named,
            limit=state.config.entities_per_relation, query=f"{state.question} {' '.join(state.conditions)}",
            question=state.question, conditions=state.conditions,
            relation_walked=render.several(list(dict.fromkeys(render.compound_label([h.edge for h in t.hops]) for t in trails))),
        )
        state.trace.record("entity_prune", "fell_back" if state.trace.fallbacks > fallbacks else "ran")
        kept = {label for label, _ in picked}
        return [t for t in trails if t.end.literal or render.node_label(t.end) in kept]

    def _frontier(self, state: WalkState, trails: list[Trail]) -> list[Trail]:
        """The trails to go on from: one per entity, values excluded, best scores first, at most `max_frontier`."""
        frontier: dict[str, Trail] = {}
        for trail in sorted(trails, key=lambda t: -t.score):
            if not trail.end.literal and trail.end.id not in frontier and trail.end.id not in state.topic_ids:
                frontier[trail.end.id] = trail
        return list(frontier.values())[: state.config.max_frontier]

    def _hop_target(self, state: WalkState) -> str:
        """What the plan says this hop reaches ('one hop further' past a plan found short)."""
        return state.hop_targets[state.depth - 1] if state.depth <= len(state.hop_targets) else "one hop further"

    def _reflect(self, state: WalkState, dead_end: list[Trail]) -> list[Trail]:
        """Plan-on-Graph's reflection, only at a dead end: resume from entities passed one hop
        before, if the model picks any (entities the walk has not stood on yet)."""
        if state.trace.reflections >= state.config.max_reflections:
            return []
        level = state.depth - 1
        stood = {t.end.id for t in dead_end}
        earlier = {render.node_label(t.end): t for e, t in state.seen.items()
                   if e not in stood and t.steps == level and not t.end.literal}
        if not earlier:
            return []
        state.trace.reflections += 1
        if len(earlier) == 1:
            state.trace.record("reflection", "skipped", "one entity passed a hop before: the walk resumes from it")
            return list(earlier.values())
        fallbacks = state.trace.fallbacks
        picked = self._pick(
            state, self.reflect, offered="earlier_entities", chosen="entities_to_resume", candidates=list(earlier),
            limit=state.config.beam_width, query=state.question, question=state.question, plan=state.hop_targets,
            dead_end=render.several([render.node_label(t.end) for t in dead_end]),
        )
        state.trace.record("reflection", "fell_back" if state.trace.fallbacks > fallbacks else "ran")
        return [earlier[label] for label, _ in picked]

    def _rank(self, state: WalkState) -> list[Candidate]:
        """Every answer reached, each with its best trail: first those more topic entities reach
        (the city home to both people), among them first where their paths meet in fewest hops (each
        topic entity's shortest trail there, summed: the film one directed and the other starred in,
        before its sequel a hop further), then by similarity to the question, half the relation chain's
        words, half the chain with the answer's name ("mascot team ; championship champion : 2014
        World Series"), with a bonus for a trail the relation prune chose every hop of, at the plan's
        depth (a bonus, not a rule: a small planner's hop count is often wrong on Freebase), and the
        chain prior's weight for the trail's chain (`prior_weight` times the share of the nearest
        training questions that went by it). The plan's last hop is not pruned: there only the chain
        its target names takes the bonus."""
        ends = [t for t in state.reached if (t.end.literal or t.end.name) and t.end.id not in state.topic_ids]
        planned_depth = min(len(state.hop_targets) + state.trace.extended_hops, state.depth)
        named_chains = {chain for chain in state.named if len(chain) - 1 == planned_depth}  # the plan's last hop named its relation
        pruned_there = planned_depth < state.depth  # the plan's last hop was not the walk's: the relation prune chose there
        by_chain: dict[tuple, list[Trail]] = defaultdict(list)
        for trail in ends:
            by_chain[_chain(trail)].append(trail)
        chains = list(by_chain)
        chain_scores = dict(zip(chains, self.embedder.similarities(state.question, [_chain_words(c, state) for c in chains])))
        pairs = [t for chain in sorted(chains, key=lambda c: -chain_scores[c])[: state.config.max_candidates]
                 for t in by_chain[chain][:_PAIRS_PER_CHAIN]]
        named = self.embedder.similarities(state.question, [f"{_chain_words(_chain(t), state)} : {render.node_label(t.end)}" for t in pairs])
        pair_scores = {id(t): s for t, s in zip(pairs, named)}
        best: dict[str, tuple[float, Trail]] = {}
        topics: dict[str, dict[str, int]] = defaultdict(dict)  # label -> topic entity -> its fewest hops there
        for trail in ends:
            label = render.node_label(trail.end)
            planned = (state.config.relation_prune and trail.score >= 1.0 and trail.steps == planned_depth
                       and (_chain(trail) in named_chains if named_chains else pruned_there))
            score = (0.5 * chain_scores[_chain(trail)] + 0.5 * pair_scores.get(id(trail), 0.0) + _PLANNED_BONUS * planned
                     + state.config.prior_weight * state.votes.chain(_relations(trail)))
            hops = topics[label].get(trail.topic.label)
            topics[label][trail.topic.label] = trail.steps if hops is None else min(hops, trail.steps)
            if label not in best or score > best[label][0]:
                best[label] = (score, trail)
        meets = {label: sum(hops.values()) if len(hops) > 1 else 0 for label, hops in topics.items()}
        ranked = sorted(best, key=lambda label: (-len(topics[label]), meets[label], -best[label][0], label))
        phrase = state.kg.profile.relation_phrase
        return [Candidate(label, best[label][1], len(topics[label]), meets[label], render.plain_path(best[label][1], phrase=phrase))
                for label in ranked]

    def _scored_order(self, state: WalkState, candidates: list[Candidate]) -> list[Candidate]:
        """The first `SCORED` candidates in the compiled path scorer's order (`programs.scorer`: fitted
        on the gold-path teacher's walks of training questions), the rest after them; the hand-set
        order where the program has no scorer or it is switched off."""
        if not (state.config.path_scorer and self.path_scorer.trained) or len(candidates) < 2:
            return candidates
        state.trace.path_scorer = True
        head = candidates[:SCORED]
        shares = self.path_scorer.shares(state.question, [scored_text(c) for c in head])
        state.shares = {c.label: share for c, share in zip(head, shares)}
        return sorted(head, key=lambda c: -state.shares[c.label]) + candidates[SCORED:]

    def _filter_facts(self, state: WalkState, shown: list[Candidate], *, settled: str | None) -> None:
        """The fact filter: of the facts about the candidates `shown` to extraction (their relations
        to values and named entities, one query), keep the ones that bear on the question; skipped
        where extraction is (`settled` says why), the one step that reads them."""
        state.facts = []
        if not state.config.fact_filter:
            return state.trace.record("fact_filter", "skipped", "switched off")
        if not state.conditions and not state.asked.names_values:
            return state.trace.record("fact_filter", "skipped", "the question sets no condition")
        if settled:  # the kept facts are read by extraction alone
            return state.trace.record("fact_filter", "skipped", f"no step reads the facts: extraction is skipped ({settled})")
        offered = self._facts(state, shown)
        if not offered:
            return state.trace.record("fact_filter", "skipped", "no facts about the candidates")
        if len(offered) == 1:
            state.facts, state.trace.facts = list(offered), list(offered)
            return state.trace.record("fact_filter", "skipped", "one fact about the candidates: it is kept")
        fallbacks = state.trace.fallbacks
        picked = self._pick(
            state, self.filter_facts, offered="candidate_facts", chosen="relevant_facts", candidates=offered,
            limit=state.config.facts_kept, query=f"{state.question} {' '.join(state.conditions)}",
            question=state.question, conditions=state.conditions,
        )
        state.facts = [fact for fact, _ in picked]
        state.trace.facts = list(state.facts)
        state.trace.record("fact_filter", "fell_back" if state.trace.fallbacks > fallbacks else "ran")

    def _facts(self, state: WalkState, shown: list[Candidate]) -> list[str]:
        """Facts about the shown candidates, 'candidate | relation | value', most like the question
        first, `facts_shown` at most: every relation of each (but the one its trail arrived by) to
        values or named entities, up to a few values each."""
        entities = {c.trail.end.id: c for c in shown if not c.trail.end.literal}
        steps = [Step(entity, e.relation, e.direction) for entity, c in entities.items()
                 for e in state.relations.get(entity, ()) if e != (c.trail.arrival.reversed if c.trail.arrival else None)]
        if not steps:
            return []
        fanout = state.kg.follow(steps, relations=False)
        facts = []
        for step in steps:
            values = [render.node_label(n) for n in fanout[step] if (n.literal or n.name) and n.id not in state.topic_ids]
            if values:
                facts.append(render.fact(entities[step.entity].label, step.relation, values[:_VALUES_PER_FACT],
                                         phrase=state.kg.profile.relation_phrase))
        facts = list(dict.fromkeys(facts))
        query = f"{state.question} {' '.join(state.conditions)}"
        return self.embedder.top(query, facts, state.config.facts_shown) if len(facts) > state.config.facts_shown else facts

    def _update_memory(self, state: WalkState, candidates: list[Candidate], *, short: str | None, settled: str | None) -> None:
        """Memory update: when the question names several entities, one note per entity on what its
        paths established, the earlier notes updated (a conjunction's answer must fit them all).
        Skipped where nothing reads the notes, and where the entities' paths meet at no candidate
        and only extraction reads them (on CWQ-mini such notes said "X: no answer yet" or named a
        hop-short entity; skipping them saved 0.2 calls a question and answered 3 more of 300 right:
        1e132b4:bench/results/memory-meets-cwq-dev/). `short` and `settled`: why sufficiency and
        extraction have nothing to decide, if so."""
        names = list(dict.fromkeys(t.label for t in state.topics))
        if not state.config.memory_update:
            return state.trace.record("memory_update", "skipped", "switched off")
        if len(names) < 2:
            return state.trace.record("memory_update", "skipped", "the question names one entity")
        if short and settled:  # the notes are read by sufficiency and extraction alone
            return state.trace.record("memory_update", "skipped",
                                      f"no step reads the notes: sufficiency is skipped ({short}), extraction too ({settled})")
        if short and candidates and candidates[0].topics < 2:  # the ranking puts the most-reached first
            return state.trace.record("memory_update", "skipped",
                                      f"the named entities' paths meet at no candidate and sufficiency is skipped ({short}): "
                                      "each entity's note could only repeat its own paths, which extraction is shown")
        rank = {c.label: i for i, c in enumerate(candidates)}
        reached = {name: [t for t in state.reached if t.topic.label == name and render.node_label(t.end) in rank] for name in names}
        evidence = []
        for trails in reached.values():
            ranked = sorted(trails, key=lambda t: rank[render.node_label(t.end)])
            evidence += list(dict.fromkeys(render.plain_path(t, phrase=state.kg.profile.relation_phrase) for t in ranked))[: state.config.sufficiency_shown]
        signature = self.update_memory.signature.with_updated_fields(
            "memory_notes", type_=Annotated[list[str], pydantic.Field(max_length=len(names))])
        out = self._call(state, self.update_memory, signature=signature, question=state.question, plan=state.hop_targets,
                         memory=state.memory, new_evidence=evidence)
        notes = [n.strip()[:300] for n in (getattr(out, "memory_notes", None) or []) if isinstance(n, str) and n.strip()]
        if notes:
            state.memory = notes[: len(names)]
            state.trace.record("memory_update", "ran")
        else:  # what the graph says each entity reached, without the model
            state.trace.fallbacks += 1
            state.memory = [f"{name} reaches {render.several([render.node_label(t.end) for t in trails])}" for name, trails in reached.items()]
            state.trace.record("memory_update", "fell_back", "no usable notes: what each entity reaches")
        state.trace.memory = list(state.memory)

    def _go_further(self, state: WalkState, candidates: list[Candidate], *, skipped: str | None) -> bool:
        """Answer sufficiency: do the best paths reach the answer? True (walk one hop further) only
        when the model says they stop short and the walk may still go deeper. `skipped`: why it has
        nothing to decide (`_enough_reached`), if so."""
        if skipped:
            state.trace.record("sufficiency", "skipped", skipped)
            return False
        out = self._call(state, self.check_sufficiency, question=state.question, memory_notes=state.memory,
                         best_paths=[c.path for c in candidates[: state.config.sufficiency_shown]])
        verdict = getattr(out, "evidence_sufficient", None) if out is not None else None
        if not isinstance(verdict, bool):
            state.trace.fallbacks += 1
            state.trace.record("sufficiency", "fell_back", "no usable verdict: the plan's hops only")
            return False
        state.trace.record("sufficiency", "ran", "sufficient" if verdict else "one hop short")
        return not verdict

    def _enough_reached(self, state: WalkState, candidates: list[Candidate]) -> str | None:
        """Why answer sufficiency has nothing to decide (the walk cannot or need not go further);
        None when it asks the model."""
        if not state.config.sufficiency:
            return "switched off: the plan's hops only"
        if not candidates:
            return "nothing reached"
        if state.depth >= state.config.depth or state.trace.extended_hops >= state.config.max_extensions:
            return "no hop left to add"
        if state.depth > len(state.hop_targets):
            return "the walk already retrieved a hop past the plan"
        if _on_named_chain(candidates[0].trail, state):
            return "the best path ends by the relation the plan's last hop names"
        return None

    def _extract(self, state: WalkState, candidates: list[Candidate]) -> bool:
        """Path answer extraction: the model chooses among the answer choices (`_answer_choices`), each
        shown with its path (and the kept facts and notes), at least one (a question has an answer,
        and "none of these" would only hand the answer to the ranking: 7 of 100 CWQ-mini test
        questions did that, 6 of them with the gold answer shown); each chosen answer brings the
        other ends of its relation chain that as many topic entities reach, a relation and its
        inverse counted as one (`_same_chain`). True if the model chose."""
        shown = self._answer_choices(state, candidates)
        state.trace.candidates = [c.label for c in shown]
        state.trace.first_share = state.shares.get(shown[0].label) if shown else None
        chosen, extracted = [shown[0]], False
        settled = self._settled_answer(state, shown)
        if settled:
            state.trace.record("extraction", "skipped", settled)
        else:
            labels = [c.label for c in shown]
            kept = self._checked_choice(state, self.extract_answers, chosen="extracted_answers", candidates=labels,
                                        at_least=1, limit=state.config.answers_chosen, question=state.question,
                                        candidate_paths=[c.path for c in shown], known_facts=state.facts,
                                        memory_notes=state.memory)
            if kept:
                chosen, extracted = [shown[labels.index(label)] for label in kept], True
                state.trace.record("extraction", "ran")
            else:  # an LM that takes no schema may still answer "none"
                state.trace.fallbacks += 1
                state.trace.record("extraction", "fell_back", f"{'no answer chosen' if kept == [] else 'no usable choice'}: the first ranked")
        rank = {c.label: i for i, c in enumerate(candidates)}
        topics = {c.label: c.topics for c in candidates}
        inverse = state.kg.inverse_relations() if state.config.inverse_chains else {}
        final = [c.trail for c in chosen]
        for c in chosen:
            same = [t for t in state.reached if _same_chain(t, c.trail, inverse) and render.node_label(t.end) in rank
                    and topics[render.node_label(t.end)] >= c.topics]
            final += sorted(same, key=lambda t: rank[render.node_label(t.end)])
        state.final = final
        return extracted

    def _settled_answer(self, state: WalkState, shown: list[Candidate]) -> str | None:
        """Why path answer extraction has nothing to decide among the answers `shown` (the first
        ranked then answers, with the other ends of its chain); None when it asks the model."""
        if not state.config.extraction:
            return "switched off: the first ranked"
        if not shown:
            return "nothing reached"
        share = state.shares.get(shown[0].label)  # none where the scorer did not order the candidates
        sure = self.path_scorer.sure_at if state.config.scorer_sure is None else state.config.scorer_sure
        if share is not None and sure is not None and sure < 1.0 and share >= sure:
            return f"the path scorer is sure of the first ({share:.2f} of its softmax, at least {sure:.2f}): it answers"
        if self._meeting_point(state, shown):
            return f"the paths from {shown[0].topics} topic entities meet nearest at one candidate ({shown[0].meets} hops in all): it answers"
        if len({_relations(c.trail) for c in shown}) == 1:
            return "one relation chain: every end answers"
        if self._plain_answer(state, shown[0]):
            return ("the best path goes by the relation the plan's last hop names, every topic entity reaches it and "
                    "the question sets no condition: every end of it answers")
        return None

    def _answer_choices(self, state: WalkState, candidates: list[Candidate]) -> list[Candidate]:
        """The candidates extraction chooses among (and the fact filter reads about): the first
        `choices_shown` ranked, at most `choices_per_chain` of one relation chain while other chains'
        candidates wait. When some are reached from more than one topic entity, those reached from
        the most come first (a conjunction's answer meets every entity the question names, and the
        ranking puts them first, nearest meeting first), and the best of the others fill the places
        left: a meeting can be a hub (Belgium, where France's and Germany's wars meet) while the
        answer is reached from one entity alone (CWQ-mini dev, 100 questions: candidate recall 0.660
        -> 0.690, Hits@1 0.520 both). `agreed_answers` off: the first ranked, whoever reaches them."""
        shown, per_chain = state.config.choices_shown, state.config.choices_per_chain
        most = candidates[0].topics if candidates else 0
        if not (state.config.agreed_answers and most > 1):
            return _chains_spread(candidates, shown, per_chain)
        agreed = _chains_spread([c for c in candidates if c.topics == most], shown, per_chain)
        return agreed + _chains_spread([c for c in candidates if c.topics < most], shown - len(agreed), per_chain)

    def _meeting_point(self, state: WalkState, shown: list[Candidate]) -> bool:
        """Extraction has nothing to decide: the first answer shown is reached from the most topic
        entities (more than one), and their paths meet there in fewer hops than at any other
        candidate they all reach (a conjunction's answer is where the entities it names meet;
        farther meetings are mostly hubs a hop past it)."""
        if not (state.config.agreed_answers and shown and shown[0].topics > 1):
            return False
        return all(c.meets > shown[0].meets for c in shown[1:] if c.topics == shown[0].topics)

    def _plain_answer(self, state: WalkState, best: Candidate) -> bool:
        """Extraction has nothing to decide: the best candidate is reached by the relation the plan's
        last hop names, from every topic entity, and the question sets no condition to check."""
        every = len({t.label for t in state.topics})
        return (_on_named_chain(best.trail, state) and best.topics == every
                and not state.conditions and not state.asked.names_values)

    def _answer(self, state: WalkState) -> tuple[list[str], list[str]]:
        """The extracted answers, then the other ends of their chains; each once, with GCR paths."""
        answers, paths = [], []
        for trail in state.final:
            label = render.node_label(trail.end)
            if label not in answers:
                answers.append(label)
                if len(paths) < state.config.answer_paths:
                    paths.append(render.gcr_path(trail, label))
        return answers[: state.config.max_answers], paths


def scored_text(candidate: Candidate) -> str:
    """A candidate as the path scorer reads it: its path, and how many topic entities reach it
    where more than one does (a conjunction's answer is reached from each entity it names)."""
    more = f" ; reached from {candidate.topics} named entities" if candidate.topics > 1 else ""
    return candidate.path + more


def _on_named_chain(trail: Trail, state: WalkState) -> bool:
    """The trail followed the relation prune's choices to the relation the plan's last hop names."""
    return trail.score >= 1.0 and _chain(trail) in state.named


def _demo_topic(state: WalkState) -> str:
    """A question's topic names as a demo keeps them, for matching by shape (`_demo_shape` splits them)."""
    return ", ".join(dict.fromkeys(t.label for t in state.topics))


def _chain(trail: Trail) -> tuple[str, ...]:
    """The relations a trail followed, from its topic entity, directions left out."""
    return (trail.topic.id, *(hop.relation for hop in trail.hops))


def _same_chain(trail: Trail, chosen: Trail, inverse: dict[str, str]) -> bool:
    """`trail` follows the relation chain `chosen` did from the same topic entity, hop by hop by the
    same relation or its inverse (`inverse`: `KnowledgeGraph.inverse_relations`), whichever way
    (retrieved graphs point edges the way a retriever walked: `_chain`). So an actor's films reached
    through film.performance.film and through film.film.starring are one chain. A pair of one type
    (location.location.contains and containedby, people.person.parents and children) relates things
    of one kind, up or down: which way it goes cannot be read here, so it is not merged."""
    if trail.topic.id != chosen.topic.id or len(trail.hops) != len(chosen.hops):
        return False
    return all(a.relation == b.relation or _inverse_kinds(a.relation, b.relation, inverse) for a, b in zip(trail.hops, chosen.hops))


def _inverse_kinds(a: str, b: str, inverse: dict[str, str]) -> bool:
    """`a` and `b` are inverses that relate things of two kinds (their Freebase types differ)."""
    return a in inverse and inverse[a] == inverse.get(b) and a.rsplit(".", 1)[0] != b.rsplit(".", 1)[0]


def _relations(trail: Trail) -> tuple[str, ...]:
    """The relation chain a trail ends by, whatever its topic entity: what extraction tells apart."""
    return _chain(trail)[1:]


def _chains_spread(candidates: list[Candidate], shown: int, per_chain: int) -> list[Candidate]:
    """The first `shown` candidates in rank order, taking at most `per_chain` ends of one relation
    chain (directions and topic left out) before the other chains' candidates; the places left
    are filled in rank order."""
    taken: Counter[tuple[str, ...]] = Counter()
    first, waiting = [], []
    for c in candidates:
        chain = _relations(c.trail)
        (first if taken[chain] < per_chain else waiting).append(c)
        taken[chain] += 1
    picked = {id(c) for c in (first + waiting)[:shown]}
    return [c for c in candidates if id(c) in picked]


def _chain_words(chain: tuple[str, ...], state: WalkState) -> str:
    """A chain's relations as words for similarity: ('x', 'sports.mascot.team') -> 'mascot team'."""
    return " ; ".join(state.kg.profile.relation_phrase(relation) for relation in chain[1:])


def _edge(trail: Trail, kept: bool) -> list:
    """A hop's edge as the trace logs it: from, relation, to, whether the walk went on from it."""
    hops = trail.hops[-2:] if len(trail.hops) > 1 and not trail.hops[-2].node.name and not trail.hops[-2].node.literal else trail.hops[-1:]
    start = trail.nodes()[-len(hops) - 1]
    return [render.node_label(start), render.compound_label([h.edge for h in hops]), render.node_label(trail.end), kept]


def _clear(ranked: list[str], scores: dict[str, float], config: WalkConfig) -> bool:
    """The best candidate is similar enough to the target, and far enough ahead of the next (a lone
    relation has none to be ahead of: "year (release year)" names the one release_year reached)."""
    if not ranked:
        return False
    best = scores[ranked[0]]
    second = scores[ranked[1]] if len(ranked) > 1 else -1.0
    return best >= config.clear_similarity and best - second >= config.clear_margin


def _at_most(annotation, n: int):
    return Annotated[annotation, pydantic.Field(min_length=1, max_length=n)]
