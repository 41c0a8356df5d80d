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
decision exists, and a failed or unusable step falls back to embedding similarity.
"""

from __future__ import annotations

import functools
import logging
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated

import dspy
import pydantic
from dspy.utils.exceptions import AdapterParseError

from kgqa.data.examples import question_problem
from kgqa.kg import Edge, KGError, KnowledgeGraph, Node, Step
from kgqa.kg.errors import InvalidTermError
from kgqa.lm.adapter import choices
from kgqa.programs import render
from kgqa.programs.config import WalkConfig
from kgqa.programs.embedder import Embedder
from kgqa.programs.selection import select
from kgqa.programs.trace import StopReason, Trace, token_totals
from kgqa.programs.trails import Hop, Trail
from kgqa.signatures import Judge, Plan, PruneEntities, PruneRelations, Reflect

log = logging.getLogger(__name__)
_BRACKETED = re.compile(r"\[([^\[\]]{1,200})\]")
_LOGGED_RELATIONS, _LOGGED_EDGES = 12, 60  # per hop, in the trace's `walk`


@dataclass
class WalkState:
    """Everything one question's walk accumulates; its trace is completed at the end."""

    question: str
    kg: KnowledgeGraph
    config: WalkConfig
    topics: list[Node] = field(default_factory=list)
    hop_targets: list[str] = field(default_factory=list)  # the plan: what each hop reaches
    conditions: list[str] = field(default_factory=list)  # the plan: what the answer must satisfy
    seen: dict[str, Trail] = field(default_factory=dict)
    final: list[Trail] = field(default_factory=list)
    depth: int = 0
    dropped: list[str] = field(default_factory=list)
    budget_hit: bool = False
    trace: Trace = field(default_factory=Trace)  # the counters, the raw plan, the per-hop log and the stop, as they happen

    @property
    def topic_ids(self) -> set[str]:
        return {t.id for t in self.topics}

    def stop(self, reason: StopReason, error: str | None = None) -> None:
        self.trace.stop_reason = StopReason.LLM_BUDGET if self.budget_hit and not self.final else reason
        self.trace.error = error
        log.info("%r stopped: %s after %d hops, %d LLM calls%s", self.question, self.trace.stop_reason.value, self.depth,
                 self.trace.llm_calls, f" ({error})" if error else "")


@dataclass
class Candidates:
    """Nodes reached from one trail through one relation, or a compound one through CVT nodes.

    `members` pairs each node with the hops before its last one: empty, or the hop to the
    (nameless) CVT node it was reached through. One prune decision covers the whole group.
    """

    trail: Trail
    edges: tuple[Edge, ...]
    members: list[tuple[tuple[Hop, ...], Node]]
    score: float


class KGQA(dspy.Module):
    """The composed program. `forward(question, topic_entities=None)` returns answers, GCR-style
    reasoning paths and a trace of what the walk spent and why it stopped."""

    def __init__(
        self, kg: KnowledgeGraph | None = None, *, config: WalkConfig | None = None, embedder: Embedder | None = None
    ) -> None:
        super().__init__()
        self.kg = kg
        self.config = config or WalkConfig()
        self.embedder = embedder or Embedder()
        self.plan = dspy.Predict(Plan)
        self.prune_relations = dspy.Predict(PruneRelations)
        self.prune_entities = dspy.Predict(PruneEntities)
        self.judge = dspy.Predict(Judge)
        self.reflect = dspy.Predict(Reflect)

    # -- the algorithm -----------------------------------------------------------------------

    def forward(self, question: str, topic_entities: Sequence[str] | None = None) -> dspy.Prediction:
        if self.kg is None:
            raise ValueError("KGQA needs a knowledge graph: KGQA(kg) or program.kg = kg")
        state = WalkState(question=question, kg=self.kg.scoped(), config=self.config)
        with dspy.track_usage() as usage:
            try:
                self._walk(state, topic_entities)
            except KGError as exc:
                state.stop(StopReason.KG_ERROR, error=str(exc))
            answers, paths = self._answer(state)
        return dspy.Prediction(answers=answers, paths=paths, trace=self._trace(state, usage))

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

    def _topics(self, state: WalkState, given: Sequence[str] | None) -> tuple[list[Node], str | None]:
        """Topic entities with their names: the given ids, else labels found in the question."""
        kg = state.kg
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
            return topics, (f"unknown topic entities: {', '.join(map(repr, missing))}" if not topics else None)
        spans = _BRACKETED.findall(state.question) or _ngrams(state.question)
        linked = kg.link(spans)
        chosen = _longest_matches(state.question, {s: ids for s, ids in linked.items() if ids})
        topics = [Node(e, name=label) for label in chosen for e in linked[label]]
        return topics, None if topics else "no entity of the question was found in the KG by its name"

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
        drop_back = state.kg.profile.drops_pre_relations
        offered: dict[str, Edge] = {}
        by_trail: list[tuple[Trail, set[str]]] = []
        for trail in frontier:
            back = drop_back and trail.arrival and trail.arrival.reversed
            labels = {render.relation_label(e): e for e in relations.get(trail.end.id, ()) if e != back}
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

    def _follow(self, state: WalkState, steps: list[tuple[Trail, Edge, float]], *, more: bool) -> tuple[list[Candidates], dict]:
        """Neighbours of every chosen step in one query; unnamed (CVT) nodes are stepped through."""
        fanout = state.kg.follow([Step(t.end.id, e.relation, e.direction) for t, e, _ in steps], relations=more)
        relations = dict(fanout.around)
        groups: list[Candidates] = []
        through: list[tuple[Trail, Edge, float, Node]] = []
        for trail, edge, score in steps:
            excluded = trail.behind(edge) | state.topic_ids
            nodes = [n for n in fanout[Step(trail.end.id, edge.relation, edge.direction)] if n.literal or n.id not in excluded]
            if state.kg.profile.step_through_unnamed:
                through += [(trail, edge, score, n) for n in nodes if not n.literal and not n.name]
                nodes = [n for n in nodes if n.literal or n.name]
            if nodes:
                groups.append(Candidates(trail, (edge,), [((), n) for n in nodes], score))
        if through:
            groups += self._step_through(state, through, relations, more=more)
        return groups, relations

    def _step_through(self, state: WalkState, through: list, relations: dict, *, more: bool) -> list[Candidates]:
        """Follow every onward relation of unnamed (CVT) nodes but the one back, in one query."""
        missing = sorted({cvt.id for *_, cvt in through} - set(relations))
        if missing:
            relations.update(state.kg.relations(missing).items)

        def onward(edge: Edge, cvt: Node) -> list[Edge]:
            return [e for e in relations.get(cvt.id, ()) if e != edge.reversed]

        steps = [Step(cvt.id, e.relation, e.direction) for _, edge, _, cvt in through for e in onward(edge, cvt)]
        fanout = state.kg.follow(steps, relations=more)
        relations.update(fanout.around)
        groups: dict[tuple, Candidates] = {}
        for trail, edge, score, cvt in through:
            excluded = trail.behind(edge) | {cvt.id} | state.topic_ids
            for e in onward(edge, cvt):
                nodes = [n for n in fanout[Step(cvt.id, e.relation, e.direction)] if n.literal or n.id not in excluded]
                if nodes:
                    prefix = (Hop(edge.relation, edge.direction, cvt),)
                    group = groups.setdefault((trail, edge, e), Candidates(trail, (edge, e), [], score))
                    group.members += [(prefix, n) for n in nodes]
        return list(groups.values())

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
        """Did the last planned hop reach what the question asks for? True when unsure (no call, a failed one)."""
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

    # -- plumbing ----------------------------------------------------------------------------

    def _pick(
        self,
        state: WalkState,
        predictor: dspy.Predict,
        *,
        offered: str,
        chosen: str,
        candidates: list[str],
        limit: int,
        query: str,
        **inputs,
    ) -> list[tuple[str, float]]:
        """Ranked (candidate, score) choices: no call for 0 or 1 candidate, a similarity cut above
        `max_candidates`, the model's checked choice, and similarity when the model gives nothing usable.
        An empty choice is respected; unusable output (a failed call, nothing valid) falls back.
        `offered` and `chosen` name the predictor's candidate input and choice output."""
        if len(candidates) <= 1:
            return [(c, 1.0) for c in candidates]
        if len(candidates) > state.config.max_candidates:
            candidates = self.embedder.top(query, candidates, state.config.max_candidates)
        signature = predictor.signature.with_updated_fields(chosen, type_=choices(candidates, at_most=limit))
        out = self._call(state, predictor, signature=signature, **inputs, **{offered: candidates})
        outputs = getattr(out, chosen, None) if out is not None else None
        if outputs == []:  # the model's answer is "none of these"
            return []
        selection = select(outputs if isinstance(outputs, list) else [], candidates, cutoff=state.config.snap_cutoff, limit=limit)
        state.dropped += selection.dropped
        if selection.kept:
            return [(c, 1.0 / (1 + rank)) for rank, c in enumerate(selection.kept)]
        state.trace.fallbacks += 1  # the call failed, or nothing it chose was a candidate
        return [(c, 0.5 / (1 + rank)) for rank, c in enumerate(self.embedder.top(query, candidates, limit))]

    def _call(self, state: WalkState, predictor: dspy.Predict, **inputs) -> dspy.Prediction | None:
        """One LLM call within the budget; a failure (parse error, LM error) is counted, not raised."""
        if state.trace.llm_calls >= state.config.max_llm_calls:
            state.budget_hit = True
            return None
        state.trace.llm_calls += 1
        try:
            return predictor(**inputs, demos=self._shown_demos(predictor, state))
        except AdapterParseError as exc:  # the LM answered, but not in the signature's shape
            log.info("%s: unparseable reply: %s", predictor.signature.__name__, str(exc)[:200])
            state.trace.parse_failures += 1
            failure = exc
        except Exception as exc:  # the LM did not answer (connection, timeout, engine): the walk falls back and goes on
            log.warning("LM call failed: %s: %s", type(exc).__name__, str(exc)[:200])
            state.trace.llm_failures += 1
            failure = exc
        state.dropped.append(f"{type(failure).__name__}: {str(failure)[:200]}")
        return None

    def _shown_demos(self, predictor: dspy.Predict, state: WalkState) -> list:
        """The predictor's demos, or, when it holds more than `demos_per_call`, the ones whose
        questions are nearest this one in shape (topic entities blanked out, so "who directed
        [Heat]" is near "who directed [Alien]", not near "who starred in [Heat]"), nearest last,
        next to the question."""
        pool, k = predictor.demos, self.config.demos_per_call
        if len(pool) <= k:
            return pool
        shape = question_shape(state.question, [t.label for t in state.topics])
        shapes = [_demo_shape(str(demo.get("question", "")), str(demo.get("topic", ""))) for demo in pool]
        nearest = self.embedder.rank(shape, shapes)[:k]
        return [pool[i] for i in reversed(nearest)]

    def _trace(self, state: WalkState, usage) -> Trace:
        """The state's trace, completed with what is read off the walk at its end."""
        trace, best = state.trace, (state.final[0] if state.final else None)
        trace.input_tokens, trace.output_tokens = token_totals(usage)
        trace.sparql_queries, trace.kg_seconds = state.kg.stats.queries, round(state.kg.stats.seconds, 4)
        trace.depth, trace.planned_hops = state.depth, len(state.hop_targets)
        trace.plan, trace.conditions = state.hop_targets, state.conditions
        trace.hops_walked = best.steps if best else 0
        trace.relation_path = [[h.relation, h.direction.value] for h in best.hops] if best else []
        trace.topic_entities, trace.topic_names = [t.id for t in state.topics], [t.label for t in state.topics]
        trace.dropped_selections, trace.dropped_examples = len(state.dropped), state.dropped[:10]
        return trace


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


def question_shape(question: str, topics: Sequence[str]) -> str:
    """The question with its topic entities blanked out, as demos are matched to it: each topic name
    and each bracketed span becomes "X"/"[X]" ("what films did [Ridley Scott] direct" -> "what films
    did [X] direct")."""
    for name in sorted({n.strip() for n in topics if len(n.strip()) > 1}, key=len, reverse=True):
        question = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", "X", question, flags=re.IGNORECASE)
    return _BRACKETED.sub("[X]", question)


@functools.lru_cache(maxsize=100_000)
def _demo_shape(question: str, topic: str) -> str:
    """A demo's question shape, its topic names (joined by ", ") blanked out. Cached: a pool of
    1,500 demos is matched against every question, and shaping it anew took ~0.1 s a call."""
    return question_shape(question, topic.split(", "))


def _clear(ranked: list[str], scores: dict[str, float], config: WalkConfig) -> bool:
    """The best candidate is similar enough to the target, and far enough ahead of the next."""
    if len(ranked) < 2:
        return False  # one candidate is a forced choice anyway; _pick takes it without a call
    best, second = scores[ranked[0]], scores[ranked[1]]
    return best >= config.clear_similarity and best - second >= config.clear_margin


def _at_most(annotation, n: int):
    return Annotated[annotation, pydantic.Field(min_length=1, max_length=n)]


def _ngrams(question: str, longest: int = 6) -> list[str]:
    words = re.findall(r"[\w'.,:&-]+", question)
    words = [w.strip(".,:?") or w for w in words]
    grams = {" ".join(words[i : i + n]) for n in range(1, longest + 1) for i in range(len(words) - n + 1)}
    return sorted(g for g in grams if g.strip())


def _longest_matches(question: str, linked: dict[str, tuple[str, ...]]) -> list[str]:
    """Linked spans, longest first, skipping spans inside an already chosen one."""
    chosen: list[str] = []
    for span in sorted(linked, key=lambda s: (-len(s), s)):
        if not any(span.lower() in c.lower() for c in chosen):
            chosen.append(span)
    return chosen
