"""KGQA: a plan-driven walk over a knowledge graph, every LLM step a DSPy predictor.

    topic entities (given, or linked by label) -> plan (how many hops, what each reaches,
    conditions on the answer) -> per planned hop:
        relations of the frontier -> relation prune (one constrained choice for the whole
        frontier; none when the hop's target names its relation) -> neighbours (CVT nodes
        stepped through) -> entity prune (only when the answer has conditions) ->
        (reflection, only at a dead end)
    -> (opt-in judge: did the last hop reach the asked kind? if not, one hop more) -> answers ranked

| step | method | predictor | signature | file |
|---|---|---|---|---|
| plan | `_plan` | `plan` | `Plan` | signatures/plan.py |
| relation prune | `_prune_relations`, `_prune_compounds` | `prune_relations` | `PruneRelations` | signatures/prune.py |
| entity prune | `_prune_entities` | `prune_entities` | `PruneEntities` | signatures/prune.py |
| judge | `_judge` | `judge` | `Judge` | signatures/answer.py |
| reflection | `_reflect` | `reflect` | `Reflect` | signatures/reflect.py |

The plan, not an open "is this enough?" at every depth, decides how far the walk goes: a small
model asked that at every depth stops early. Choices are typed as the candidates offered
(`kgqa.lm.adapter.choices`), so an LM that takes a JSON schema cannot invent or over-select
one; every selection is still checked against its candidates, calls are made only where a
decision exists, and a step whose reply is unusable falls back to embedding similarity; an LM that
does not answer ends the question (`StopReason.LM_ERROR`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Annotated

import dspy
import pydantic

from kgqa.data.examples import question_problem
from kgqa.kg import Edge, KnowledgeGraph, Node
from kgqa.programs import render
from kgqa.programs.base import Candidates, KGProgram, WalkState, question_shape
from kgqa.programs.config import WalkConfig
from kgqa.programs.embedder import Embedder
from kgqa.programs.trace import StopReason
from kgqa.programs.trails import Hop, Trail
from kgqa.signatures import Judge, Plan, PruneEntities, PruneRelations, Reflect

log = logging.getLogger(__name__)
_LOGGED_RELATIONS, _LOGGED_EDGES = 12, 60  # per hop, in the trace's `walk`

__all__ = ["KGQA", "hop_kind", "question_shape"]


class KGQA(KGProgram):
    """The plan-driven walk. `forward(question, topic_entities=None)` returns answers, GCR-style
    reasoning paths and a trace of what the walk spent and why it stopped."""

    def __init__(
        self, kg: KnowledgeGraph | None = None, *, config: WalkConfig | None = None, embedder: Embedder | None = None
    ) -> None:
        super().__init__(kg, config=config, embedder=embedder)
        self.plan = dspy.Predict(Plan)
        self.prune_relations = dspy.Predict(PruneRelations)
        self.prune_entities = dspy.Predict(PruneEntities)
        self.judge = dspy.Predict(Judge)
        self.reflect = dspy.Predict(Reflect)

    # -- the algorithm -----------------------------------------------------------------------

    def _walk(self, state: WalkState, topic_entities: Sequence[str] | None) -> None:
        problem = question_problem(state.question)
        if problem:
            return state.stop(StopReason.BAD_QUESTION, error=problem)
        state.topics, problem = self._topics(state, topic_entities)
        if not state.topics:
            return state.stop(StopReason.NO_TOPIC_ENTITY, error=problem)
        state.hop_targets, state.conditions = self._plan(state)
        frontier = [Trail(topic) for topic in state.topics]
        relations = dict(state.kg.relations(state.topic_ids).items)
        hops = len(state.hop_targets)
        while state.depth < hops:
            state.depth += 1
            relations.update(self._missing_relations(state, frontier, relations))
            steps = self._prune_relations(state, frontier, relations)
            kept: list[Trail] = []
            if steps:
                # the relations around what is reached serve the next hop, or stepping through CVT nodes:
                # after the plan's last hop, on a graph without CVTs and with no judge to add a hop, none
                more = state.depth < hops or state.config.judge or state.kg.profile.step_through_unnamed
                candidates, relations = self._follow(state, steps, more=more)
                kept = self._keep_entities(state, candidates)
            if not kept:  # a dead end: resume from entities passed a hop before, or stop
                resumed = self._reflect(state, frontier)
                if resumed:
                    frontier, state.depth = resumed, state.depth - 1  # take this hop again from them
                    continue
                # with nothing to resume from, the plan went a hop too far: the last hop reached answers
                return state.stop(StopReason.PLAN_SHORTENED if state.final else StopReason.DEAD_END)
            state.final, frontier = kept, self._beam(state, kept)
            if state.config.judge and state.depth == hops and state.depth < state.config.depth and not self._judge(state):
                hops += 1  # the plan was short: the judge found the walk one hop before the asked kind
                state.trace.extended_hops += 1
            if state.budget_hit:
                return state.stop(StopReason.LLM_BUDGET)
        state.stop(StopReason.PLAN_DONE)

    # -- steps -------------------------------------------------------------------------------

    def _plan(self, state: WalkState) -> tuple[list[str], list[str]]:
        """What each hop reaches and what the answer must satisfy; one hop when the plan is unusable."""
        depth = state.config.depth
        signature = self.plan.signature.with_updated_fields("hop_targets", type_=_at_most(list[str], depth))
        out = self._call(state, self.plan, signature=signature, question=state.question,
                         topic=render.several([t.label for t in state.topics]))
        targets = [t.strip() for t in (out.hop_targets if out else []) if isinstance(t, str) and t.strip()]
        conditions = [c.strip() for c in (out.answer_constraints if out else []) if isinstance(c, str) and c.strip()]
        if not targets:
            state.trace.fallbacks += 1
        topic_kind, answer_kind = (getattr(out, name, "") if out else "" for name in ("topic_kind", "answer_kind"))
        state.trace.raw_plan = {"topic_kind": topic_kind, "answer_kind": answer_kind, "hop_targets": targets}
        log.debug("plan for %r: %s -> %s, hops %s, conditions %s", state.question, topic_kind, answer_kind, targets, conditions)
        targets = _end_at_answer(_start_after_topic(targets, topic_kind), answer_kind)
        return targets[:depth] or [state.question], conditions[:3]

    def _missing_relations(self, state: WalkState, frontier: list[Trail], known: dict) -> dict:
        """Relations of frontier entities not fetched with the last hop (ones brought back by reflection)."""
        missing = [t.end.id for t in frontier if t.end.id not in known and not t.end.literal]
        return dict(state.kg.relations(missing).items) if missing else {}

    def _prune_relations(self, state: WalkState, frontier: list[Trail], relations: dict) -> list[tuple[Trail, Edge, float]]:
        """Relations that take this hop of the plan: one decision for the whole frontier, over every
        relation some frontier entity offers (the hop looks for one kind of thing, whichever entity
        it starts from), listed most similar to the hop's target first; each chosen relation is
        followed from the entities that offer it."""
        offered: dict[str, Edge] = {}
        by_trail: list[tuple[Trail, set[str]]] = []
        for trail in frontier:
            labels = {render.relation_label(e): e for e in self._onward(state, trail, relations)}
            offered.update(labels)
            by_trail.append((trail, set(labels)))
        target = self._hop_target(state)
        names = sorted(offered)
        scores = dict(zip(names, self.embedder.similarities(target, [render.relation_words(name) for name in names])))
        candidates = sorted(names, key=lambda name: (-scores[name], name))
        if _clear(candidates, scores, state.config):  # the target names its relation: no decision to make
            picked = [(candidates[0], 1.0)]
        else:
            picked = self._pick_relations(
                state, candidates, hop=f"hop {state.depth} of {max(state.depth, len(state.hop_targets))}: {target}",
                entity=render.several([render.node_label(t.end) for t in frontier]),
            )
        log.debug("hop %d (%s): chose %s of %d relations", state.depth, target, [label for label, _ in picked], len(candidates))
        state.trace.walk.append({"depth": state.depth, "target": target, "offered": candidates[: _LOGGED_RELATIONS],
                         "chosen": [label for label, _ in picked], "edges": []})
        return [(trail, offered[label], score) for label, score in picked for trail, labels in by_trail if label in labels]

    def _pick_relations(self, state: WalkState, candidates: list[str], *, hop: str, entity: str) -> list[tuple[str, float]]:
        """The relation prune step: which of the candidates take this hop of the plan."""
        return self._pick(
            state, self.prune_relations, offered="candidate_relations", chosen="relations_to_follow", candidates=candidates,
            limit=state.config.relations_per_entity, query=f"{self._hop_target(state)} {state.question}",
            question=state.question, plan=state.hop_targets, hop=hop, entity=entity,
        )

    def _hop_target(self, state: WalkState) -> str:
        """What the plan says this hop reaches ('one hop further' past a plan the judge found short)."""
        return state.hop_targets[state.depth - 1] if state.depth <= len(state.hop_targets) else "one hop further"

    def _prune_compounds(self, state: WalkState, groups: list[Candidates]) -> list[Candidates]:
        """Through a nameless (CVT) node a chosen relation fans out into several compound ones
        (`film.film.starring -> film.performance.actor`, `... -> film.performance.character`):
        one constrained choice among them per first relation, none where there is one."""
        by_first: dict[Edge, list[Candidates]] = defaultdict(list)
        for group in groups:
            if len(group.edges) > 1:
                by_first[group.edges[0]].append(group)
        dropped: set[tuple[Edge, ...]] = set()
        target = self._hop_target(state)
        for first, through in by_first.items():
            labels = {render.compound_label(g.edges): g.edges for g in through}
            picked = self._pick_relations(
                state, list(labels), hop=f"hop {state.depth}, through {render.relation_label(first)}: {target}",
                entity=render.several([render.node_label(g.trail.end) for g in through]),
            )
            keep = {labels[label] for label, _ in picked}
            dropped |= set(labels.values()) - keep
        return [g for g in groups if g.edges not in dropped]

    def _keep_entities(self, state: WalkState, groups: list[Candidates]) -> list[Trail]:
        """Entities to keep. Every one, unless the answer has conditions and this is the plan's last
        hop: then one constrained decision per (compound) relation across the whole frontier."""
        groups = self._prune_compounds(state, groups)
        prune = bool(state.conditions) and state.depth >= len(state.hop_targets)
        by_edges: dict[tuple[Edge, ...], list[Candidates]] = defaultdict(list)
        for group in groups:
            by_edges[group.edges].append(group)
        kept: list[Trail] = []
        for edges, same in by_edges.items():
            nodes = list(dict.fromkeys(n for group in same for _, n in group.members))
            if prune:
                chosen = self._prune_entities(state, edges, same, nodes)
            else:
                chosen = {node: 1.0 for node in nodes}
            for group in same:
                for prefix, node in group.members:
                    hops = prefix + (Hop(edges[-1].relation, edges[-1].direction, node),)
                    trail = group.trail.extend(hops, group.score * chosen.get(node, 0.0))
                    state.seen.setdefault(node.id, trail)  # pruned ones too: reflection may resume from them
                    logged = state.trace.walk[-1]["edges"] if state.trace.walk else None
                    if logged is not None and len(logged) < _LOGGED_EDGES:
                        logged.append([render.node_label(group.trail.end), render.compound_label(edges),
                                       render.node_label(node), node in chosen])
                    if node in chosen:
                        kept.append(trail)
        return sorted(kept, key=lambda t: (-t.score, render.path_text(t)))

    def _prune_entities(self, state: WalkState, edges: tuple[Edge, ...], same: list[Candidates], nodes: list[Node]) -> dict[Node, float]:
        by_label: dict[str, list[Node]] = defaultdict(list)
        for node in nodes:
            if not node.literal:
                by_label[render.node_label(node)].append(node)
        ends = render.several([render.node_label(g.trail.end) for g in same])
        picked = self._pick(
            state,
            self.prune_entities,
            offered="candidate_entities",
            chosen="entities_to_keep",
            candidates=list(by_label),
            limit=state.config.entities_per_relation,
            query=f"{state.question} {' '.join(state.conditions)}",
            question=state.question,
            conditions=state.conditions,
            relation_walked=f"{ends} -> {render.compound_label(edges)}",
        )
        chosen = {node: score for label, score in picked for node in by_label[label]}
        chosen.update((node, 1.0) for node in nodes if node.literal)  # values pass without pruning
        return chosen

    def _judge(self, state: WalkState) -> bool:
        """Did the last planned hop reach what the question asks for? True when unsure (no call, an unusable reply)."""
        best = state.final[0]
        reached = list(dict.fromkeys(render.node_label(t.end) for t in state.final))[: state.config.judge_shown]
        out = self._call(state, self.judge, question=state.question, reasoning_path=render.path_text(best), reached_entities=reached)
        return out is None or out.reached_answer is not False

    def _beam(self, state: WalkState, kept: list[Trail]) -> list[Trail]:
        """The best trails to go on from: one per entity, literals excluded, best scores first."""
        frontier: dict[str, Trail] = {}
        for trail in kept:
            if not trail.end.literal and trail.end.id not in frontier:
                frontier[trail.end.id] = trail
        return list(frontier.values())[: state.config.beam_width]

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
        picked = self._pick(
            state,
            self.reflect,
            offered="earlier_entities",
            chosen="entities_to_resume",
            candidates=list(earlier),
            limit=state.config.beam_width,
            query=state.question,
            question=state.question,
            plan=state.hop_targets,
            dead_end=render.several([render.node_label(t.end) for t in dead_end]),
        )
        return [earlier[label] for label, _ in picked]

    def _answer(self, state: WalkState) -> tuple[list[str], list[str]]:
        """The entities the walk ended on, ranked first by how many of the question's topic entities
        reach them (an answer must meet every entity a conjunction names: the city that is home to
        both people), then by their best trail, then by how many trails reach them (an answer of
        the relations the model chose first is not outranked by one that many trails of a later
        choice reach). Each answer once, with the GCR paths of the first answers' best trails
        (`answer_paths` in all). The walk never ends on a topic or a nameless node."""
        trails = [t for t in state.final if t.score >= state.config.min_path_score and (t.end.literal or t.end.name)]
        best: dict[str, float] = defaultdict(float)
        total: dict[str, float] = defaultdict(float)
        topics: dict[str, set[str]] = defaultdict(set)  # the topic names (not ids: one name may link several) reaching each answer
        for trail in trails:
            label = render.node_label(trail.end)
            best[label], total[label] = max(best[label], trail.score), total[label] + trail.score
            topics[label].add(trail.topic.label)
        ranked = sorted(best, key=lambda a: (-len(topics[a]), -best[a], -total[a], a))
        rank = {answer: i for i, answer in enumerate(ranked)}
        shown = sorted(trails, key=lambda t: rank[render.node_label(t.end)])[: state.config.answer_paths]  # best trails first within
        paths = [render.gcr_path(t, render.node_label(t.end)) for t in shown]
        return ranked[: state.config.max_answers], paths


def hop_kind(target: str) -> str:
    """The kind a plan's hop names (hops are written `kind (relation words)`): "movie (directed by)" -> "movie"."""
    return target.split("(", 1)[0].strip()


def _noun(text: object) -> str:
    """A kind as compared with others, singular and lower case: "Movies (directed by)" -> "movie"."""
    return hop_kind(text).lower().removesuffix("s") if isinstance(text, str) else ""


def _start_after_topic(targets: list[str], kind: object) -> list[str]:
    """Leading hops that reach the topic's own kind are no hops: a small planner counts the topic
    ("the directors of the films written by [X]" -> writer, movie, director)."""
    start = 0
    while start < len(targets) - 1 and _noun(kind) and _noun(targets[start]) == _noun(kind):
        start += 1
    return targets[start:]


def _end_at_answer(targets: list[str], kind: object) -> list[str]:
    """A plan whose last hop is not the kind the question asks for, when an earlier hop is, ends
    there: a small planner adds a hop after the answer ("who starred in [X]" -> actor, movie)."""
    if not _noun(kind) or not targets or _noun(targets[-1]) == _noun(kind):
        return targets
    hits = [i for i, target in enumerate(targets) if _noun(target) == _noun(kind)]
    return targets[: hits[-1] + 1] if hits else targets


def _clear(ranked: list[str], scores: dict[str, float], config: WalkConfig) -> bool:
    """The best candidate is similar enough to the target, and far enough ahead of the next."""
    if len(ranked) < 2:
        return False  # one candidate is a forced choice anyway; _pick takes it without a call
    best, second = scores[ranked[0]], scores[ranked[1]]
    return best >= config.clear_similarity and best - second >= config.clear_margin


def _at_most(annotation, n: int):
    return Annotated[annotation, pydantic.Field(min_length=1, max_length=n)]
