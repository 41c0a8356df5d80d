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
| sufficiency | `_judge` | `judge` | `JudgeSufficiency` | signatures/answer.py |
| reflection | `_reflect` | `reflect` | `Reflect` | signatures/reflect.py |

The plan, not an open "is this enough?" at every depth, decides how far the walk goes: a small
model asked that at every depth stops early. Choices are typed as the candidates offered
(`kgqa.lm.adapter.choices`), so an LM that takes a JSON schema cannot invent or over-select
one; every selection is still checked against its candidates, calls are made only where a
decision exists, and a failed or unusable step falls back to embedding similarity.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated

import dspy
import pydantic

from data.examples import MAX_QUESTION_CHARS
from kg import Edge, KGError, KnowledgeGraph, Node, Step
from kg.errors import InvalidTermError
from kgqa.lm.adapter import choices
from programs import render
from programs.config import WalkConfig
from programs.embedder import Embedder
from programs.selection import select
from programs.trails import Hop, Trail
from signatures import JudgeSufficiency, Plan, PruneEntities, PruneRelations, Reflect

_BRACKETED = re.compile(r"\[([^\[\]]{1,200})\]")
_LOGGED_RELATIONS, _LOGGED_EDGES = 12, 60  # per hop, in the trace's `walk`


@dataclass
class Run:
    """Everything one question's walk accumulates; the trace is read off it at the end."""

    question: str
    kg: KnowledgeGraph
    config: WalkConfig
    topics: list[Node] = field(default_factory=list)
    hop_targets: list[str] = field(default_factory=list)  # the plan: what each hop reaches
    conditions: list[str] = field(default_factory=list)  # the plan: what the answer must satisfy
    raw_plan: dict = field(default_factory=dict)  # the plan step's output before its hops were trimmed
    hops: list[dict] = field(default_factory=list)  # per hop taken: target, relations offered and chosen, edges
    seen: dict[str, Trail] = field(default_factory=dict)
    final: list[Trail] = field(default_factory=list)
    depth: int = 0
    extended: int = 0  # hops added beyond the plan (the judge found it short)
    llm_calls: int = 0
    llm_failures: int = 0
    fallbacks: int = 0
    reflections: int = 0
    dropped: list[str] = field(default_factory=list)
    budget_hit: bool = False
    stop_reason: str = ""
    error: str | None = None

    @property
    def topic_ids(self) -> set[str]:
        return {t.id for t in self.topics}

    def stop(self, reason: str, error: str | None = None) -> None:
        self.stop_reason = "llm_budget" if self.budget_hit and not self.final else reason
        self.error = error


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
        self.judge = dspy.Predict(JudgeSufficiency)
        self.reflect = dspy.Predict(Reflect)

    # -- the algorithm -----------------------------------------------------------------------

    def forward(self, question: str, topic_entities: Sequence[str] | None = None) -> dspy.Prediction:
        if self.kg is None:
            raise ValueError("KGQA needs a knowledge graph: KGQA(kg) or program.kg = kg")
        run = Run(question=question, kg=self.kg.scoped(), config=self.config)
        with dspy.track_usage() as usage:
            try:
                self._walk(run, topic_entities)
            except KGError as exc:
                run.stop("kg_error", error=str(exc))
            answers, paths = self._answer(run)
        return dspy.Prediction(answers=answers, paths=paths, trace=self._trace(run, usage))

    def _walk(self, run: Run, topic_entities: Sequence[str] | None) -> None:
        problem = _question_problem(run.question)
        if problem:
            return run.stop("bad_question", error=problem)
        run.topics, problem = self._topics(run, topic_entities)
        if not run.topics:
            return run.stop("no_topic_entity", error=problem)
        run.hop_targets, run.conditions = self._plan(run)
        frontier = [Trail(topic) for topic in run.topics]
        relations = dict(run.kg.relations(run.topic_ids).items)
        hops = len(run.hop_targets)
        while run.depth < hops:
            run.depth += 1
            relations.update(self._missing_relations(run, frontier, relations))
            steps = self._prune_relations(run, frontier, relations)
            kept: list[Trail] = []
            if steps:
                # the relations around what is reached serve the next hop, or stepping through CVT nodes:
                # after the plan's last hop, on a graph without CVTs and with no judge to add a hop, none
                more = run.depth < hops or run.config.judge or run.kg.profile.step_through_unnamed
                candidates, relations = self._follow(run, steps, more=more)
                kept = self._keep_entities(run, candidates)
            if not kept:  # a dead end: resume from entities passed a hop before, or stop
                resumed = self._reflect(run, frontier)
                if resumed:
                    frontier, run.depth = resumed, run.depth - 1  # take this hop again from them
                    continue
                # with nothing to resume from, the plan went a hop too far: the last hop reached answers
                return run.stop("plan_shortened" if run.final else "dead_end")
            run.final, frontier = kept, self._beam(run, kept)
            if run.config.judge and run.depth == hops and run.depth < run.config.depth and not self._judge(run):
                hops += 1  # the plan was short: the judge found the walk one hop before the asked kind
                run.extended += 1
            if run.budget_hit:
                return run.stop("llm_budget")
        run.stop("plan_done")

    # -- steps -------------------------------------------------------------------------------

    def _topics(self, run: Run, given: Sequence[str] | None) -> tuple[list[Node], str | None]:
        """Topic entities with their names: the given ids, else labels found in the question."""
        kg = run.kg
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
        spans = _BRACKETED.findall(run.question) or _ngrams(run.question)
        linked = kg.link(spans)
        chosen = _longest_matches(run.question, {s: ids for s, ids in linked.items() if ids})
        topics = [Node(e, name=label) for label in chosen for e in linked[label]]
        return topics, None if topics else "no entity of the question was found in the KG by its name"

    def _plan(self, run: Run) -> tuple[list[str], list[str]]:
        """What each hop reaches and what the answer must satisfy; one hop when the plan is unusable."""
        depth = run.config.depth
        signature = self.plan.signature.with_updated_fields("hop_targets", type_=_at_most(list[str], depth))
        out = self._call(run, self.plan, signature=signature, question=run.question,
                         topic=render.several([t.label for t in run.topics]))
        targets = [t.strip() for t in (out.hop_targets if out else []) if isinstance(t, str) and t.strip()]
        conditions = [c.strip() for c in (out.answer_constraints if out else []) if isinstance(c, str) and c.strip()]
        if not targets:
            run.fallbacks += 1
        topic_kind, answer_kind = (getattr(out, name, "") if out else "" for name in ("topic_kind", "answer_kind"))
        run.raw_plan = {"topic_kind": topic_kind, "answer_kind": answer_kind, "hop_targets": targets}
        targets = _end_at_answer(_start_after_topic(targets, topic_kind), answer_kind)
        return targets[:depth] or [run.question], conditions[:3]

    def _missing_relations(self, run: Run, frontier: list[Trail], known: dict) -> dict:
        """Relations of frontier entities not fetched with the last hop (ones brought back by reflection)."""
        missing = [t.end.id for t in frontier if t.end.id not in known and not t.end.literal]
        return dict(run.kg.relations(missing).items) if missing else {}

    def _prune_relations(self, run: Run, frontier: list[Trail], relations: dict) -> list[tuple[Trail, Edge, float]]:
        """Relations that take this hop of the plan: one decision for the whole frontier, over every
        relation some frontier entity offers (the hop looks for one kind of thing, whichever entity
        it starts from), listed most similar to the hop's target first; each chosen relation is
        followed from the entities that offer it."""
        drop_back = run.kg.profile.drops_pre_relations
        offered: dict[str, Edge] = {}
        by_trail: list[tuple[Trail, set[str]]] = []
        for trail in frontier:
            back = drop_back and trail.arrival and Edge(trail.arrival.relation, trail.arrival.direction.reverse)
            labels = {render.relation_label(e): e for e in relations.get(trail.end.id, ()) if e != back}
            offered.update(labels)
            by_trail.append((trail, set(labels)))
        target = self._hop_target(run)
        names = sorted(offered)
        scores = dict(zip(names, self.embedder.similarities(target, [render.relation_words(name) for name in names])))
        candidates = sorted(names, key=lambda name: (-scores[name], name))
        if _clear(candidates, scores, run.config):  # the target names its relation: no decision to make
            picked = [(candidates[0], 1.0)]
        else:
            picked = self._pick_relations(
                run, candidates, hop=f"hop {run.depth} of {max(run.depth, len(run.hop_targets))}: {target}",
                entity=render.several([render.node_label(t.end) for t in frontier]),
            )
        run.hops.append({"depth": run.depth, "target": target, "offered": candidates[: _LOGGED_RELATIONS],
                         "chosen": [label for label, _ in picked], "edges": []})
        return [(trail, offered[label], score) for label, score in picked for trail, labels in by_trail if label in labels]

    def _pick_relations(self, run: Run, candidates: list[str], *, hop: str, entity: str) -> list[tuple[str, float]]:
        """The relation prune step: which of the candidates take this hop of the plan."""
        return self._pick(
            run, self.prune_relations, offered="candidate_relations", chosen="relations_to_follow", candidates=candidates,
            limit=run.config.relations_per_entity, query=f"{self._hop_target(run)} {run.question}",
            question=run.question, plan=run.hop_targets, hop=hop, entity=entity,
        )

    def _hop_target(self, run: Run) -> str:
        """What the plan says this hop reaches ('one hop further' past a plan the judge found short)."""
        return run.hop_targets[run.depth - 1] if run.depth <= len(run.hop_targets) else "one hop further"

    def _follow(self, run: Run, steps: list[tuple[Trail, Edge, float]], *, more: bool) -> tuple[list[Candidates], dict]:
        """Neighbours of every chosen step in one query; unnamed (CVT) nodes are stepped through."""
        fanout = run.kg.follow([Step(t.end.id, e.relation, e.direction) for t, e, _ in steps], relations=more)
        relations = dict(fanout.around)
        groups: list[Candidates] = []
        through: list[tuple[Trail, Edge, float, Node]] = []
        for trail, edge, score in steps:
            on_trail = {n.id for n in trail.nodes()}
            nodes = [n for n in fanout[Step(trail.end.id, edge.relation, edge.direction)] if n.id not in on_trail or n.literal]
            nodes = [n for n in nodes if n.literal or n.id not in run.topic_ids]
            if run.kg.profile.step_through_unnamed:
                through += [(trail, edge, score, n) for n in nodes if not n.literal and not n.name]
                nodes = [n for n in nodes if n.literal or n.name]
            if nodes:
                groups.append(Candidates(trail, (edge,), [((), n) for n in nodes], score))
        if through:
            groups += self._step_through(run, through, relations, more=more)
        return groups, relations

    def _step_through(self, run: Run, through: list, relations: dict, *, more: bool) -> list[Candidates]:
        """Follow every onward relation of unnamed (CVT) nodes but the one back, in one query."""
        missing = sorted({cvt.id for *_, cvt in through} - set(relations))
        if missing:
            relations.update(run.kg.relations(missing).items)

        def onward(edge: Edge, cvt: Node) -> list[Edge]:
            back = Edge(edge.relation, edge.direction.reverse)
            return [e for e in relations.get(cvt.id, ()) if e != back]

        steps = [Step(cvt.id, e.relation, e.direction) for _, edge, _, cvt in through for e in onward(edge, cvt)]
        fanout = run.kg.follow(steps, relations=more)
        relations.update(fanout.around)
        groups: dict[tuple, Candidates] = {}
        for trail, edge, score, cvt in through:
            excluded = {n.id for n in trail.nodes()} | run.topic_ids
            for e in onward(edge, cvt):
                nodes = [n for n in fanout[Step(cvt.id, e.relation, e.direction)] if n.literal or n.id not in excluded]
                if nodes:
                    prefix = (Hop(edge.relation, edge.direction, cvt),)
                    group = groups.setdefault((trail, edge, e), Candidates(trail, (edge, e), [], score))
                    group.members += [(prefix, n) for n in nodes]
        return list(groups.values())

    def _prune_compounds(self, run: Run, groups: list[Candidates]) -> list[Candidates]:
        """Through a nameless (CVT) node a chosen relation fans out into several compound ones
        (`film.film.starring -> film.performance.actor`, `... -> film.performance.character`):
        one constrained choice among them per first relation, none where there is one."""
        by_first: dict[Edge, list[Candidates]] = defaultdict(list)
        for group in groups:
            if len(group.edges) > 1:
                by_first[group.edges[0]].append(group)
        dropped: set[tuple[Edge, ...]] = set()
        target = self._hop_target(run)
        for first, through in by_first.items():
            labels = {" -> ".join(map(render.relation_label, g.edges)): g.edges for g in through}
            picked = self._pick_relations(
                run, list(labels), hop=f"hop {run.depth}, through {render.relation_label(first)}: {target}",
                entity=render.several([render.node_label(g.trail.end) for g in through]),
            )
            keep = {labels[label] for label, _ in picked}
            dropped |= set(labels.values()) - keep
        return [g for g in groups if g.edges not in dropped]

    def _keep_entities(self, run: Run, groups: list[Candidates]) -> list[Trail]:
        """Entities to keep. Every one, unless the answer has conditions and this is the plan's last
        hop: then one constrained decision per (compound) relation across the whole frontier."""
        groups = self._prune_compounds(run, groups)
        prune = bool(run.conditions) and run.depth >= len(run.hop_targets)
        by_edges: dict[tuple[Edge, ...], list[Candidates]] = defaultdict(list)
        for group in groups:
            by_edges[group.edges].append(group)
        kept: list[Trail] = []
        for edges, same in by_edges.items():
            nodes = list(dict.fromkeys(n for group in same for _, n in group.members))
            if prune:
                chosen = self._prune_entities(run, edges, same, nodes)
            else:
                chosen = {node: 1.0 for node in nodes}
            for group in same:
                for prefix, node in group.members:
                    hops = prefix + (Hop(edges[-1].relation, edges[-1].direction, node),)
                    trail = group.trail.extend(hops, group.score * chosen.get(node, 0.0))
                    run.seen.setdefault(node.id, trail)  # pruned ones too: reflection may resume from them
                    if run.hops and len(run.hops[-1]["edges"]) < _LOGGED_EDGES:
                        run.hops[-1]["edges"].append([render.node_label(group.trail.end),
                                                      " -> ".join(map(render.relation_label, edges)),
                                                      render.node_label(node), node in chosen])
                    if node in chosen:
                        kept.append(trail)
        return sorted(kept, key=lambda t: (-t.score, render.path_text(t)))

    def _prune_entities(self, run: Run, edges: tuple[Edge, ...], same: list[Candidates], nodes: list[Node]) -> dict[Node, float]:
        by_label: dict[str, list[Node]] = defaultdict(list)
        for node in nodes:
            if not node.literal:
                by_label[render.node_label(node)].append(node)
        ends = render.several([render.node_label(g.trail.end) for g in same])
        picked = self._pick(
            run,
            self.prune_entities,
            offered="candidate_entities",
            chosen="entities_to_keep",
            candidates=list(by_label),
            limit=run.config.entities_per_relation,
            query=f"{run.question} {' '.join(run.conditions)}",
            question=run.question,
            conditions=run.conditions,
            relation_walked=" -> ".join([ends, *map(render.relation_label, edges)]),
        )
        chosen = {node: score for label, score in picked for node in by_label[label]}
        chosen.update((node, 1.0) for node in nodes if node.literal)  # values pass without pruning
        return chosen

    def _judge(self, run: Run) -> bool:
        """Did the last planned hop reach what the question asks for? True when unsure (no call, a failed one)."""
        best = run.final[0]
        reached = list(dict.fromkeys(render.node_label(t.end) for t in run.final))[: run.config.judge_shown]
        out = self._call(run, self.judge, question=run.question, reasoning_path=render.path_text(best), reached_entities=reached)
        return out is None or out.reached_answer is not False

    def _beam(self, run: Run, kept: list[Trail]) -> list[Trail]:
        """The best trails to go on from: one per entity, literals excluded, best scores first."""
        frontier: dict[str, Trail] = {}
        for trail in kept:
            if not trail.end.literal and trail.end.id not in frontier:
                frontier[trail.end.id] = trail
        return list(frontier.values())[: run.config.beam_width]

    def _reflect(self, run: Run, dead_end: list[Trail]) -> list[Trail]:
        """Plan-on-Graph's reflection, only at a dead end: resume from entities passed one hop
        before, if the model picks any (entities the walk has not stood on yet)."""
        if run.reflections >= run.config.max_reflections:
            return []
        level = run.depth - 1
        stood = {t.end.id for t in dead_end}
        earlier = {render.node_label(t.end): t for e, t in run.seen.items()
                   if e not in stood and t.steps == level and not t.end.literal}
        if not earlier:
            return []
        run.reflections += 1
        picked = self._pick(
            run,
            self.reflect,
            offered="earlier_entities",
            chosen="entities_to_resume",
            candidates=list(earlier),
            limit=run.config.beam_width,
            query=run.question,
            question=run.question,
            plan=run.hop_targets,
            dead_end=render.several([render.node_label(t.end) for t in dead_end]),
        )
        return [earlier[label] for label, _ in picked]

    def _answer(self, run: Run) -> tuple[list[str], list[str]]:
        """The entities the walk ended on, best trails first: each answer once, with the GCR paths
        of the best `answer_paths` trails. The walk never ends on a topic or a nameless node."""
        trails = [t for t in run.final if t.score >= run.config.min_path_score and (t.end.literal or t.end.name)]
        scores: dict[str, float] = defaultdict(float)
        for trail in trails:
            scores[render.node_label(trail.end)] += trail.score
        ranked = sorted(scores, key=lambda a: (-scores[a], a))
        paths = [render.gcr_path(t, render.node_label(t.end)) for t in trails[: run.config.answer_paths]]
        return ranked[: run.config.max_answers], paths

    # -- plumbing ----------------------------------------------------------------------------

    def _pick(
        self,
        run: Run,
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
        if len(candidates) > run.config.max_candidates:
            candidates = self.embedder.top(query, candidates, run.config.max_candidates)
        signature = predictor.signature.with_updated_fields(chosen, type_=choices(candidates, at_most=limit))
        out = self._call(run, predictor, signature=signature, **inputs, **{offered: candidates})
        outputs = getattr(out, chosen, None) if out is not None else None
        if outputs == []:  # the model's answer is "none of these"
            return []
        selection = select(outputs if isinstance(outputs, list) else [], candidates, cutoff=run.config.snap_cutoff, limit=limit)
        run.dropped += selection.dropped
        if selection.kept:
            return [(c, 1.0 / (1 + rank)) for rank, c in enumerate(selection.kept)]
        run.fallbacks += 1  # the call failed, or nothing it chose was a candidate
        return [(c, 0.5 / (1 + rank)) for rank, c in enumerate(self.embedder.top(query, candidates, limit))]

    def _call(self, run: Run, predictor: dspy.Predict, **inputs) -> dspy.Prediction | None:
        """One LLM call within the budget; a failure (parse error, LM error) is counted, not raised."""
        if run.llm_calls >= run.config.max_llm_calls:
            run.budget_hit = True
            return None
        run.llm_calls += 1
        try:
            return predictor(**inputs, demos=self._shown_demos(predictor, run.question))
        except Exception as exc:  # the LM or its adapter failed: the walk falls back and goes on
            run.llm_failures += 1
            run.dropped.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            return None

    def _shown_demos(self, predictor: dspy.Predict, question: str) -> list:
        """The predictor's demos, or, when it holds more than `demos_per_call`, the ones whose
        questions are nearest this one, nearest last (next to the question)."""
        pool, k = predictor.demos, self.config.demos_per_call
        if len(pool) <= k:
            return pool
        nearest = self.embedder.rank(question, [str(demo.get("question", "")) for demo in pool])[:k]
        return [pool[i] for i in reversed(nearest)]

    def _trace(self, run: Run, usage) -> dict:
        totals = usage.get_total_tokens()
        best = run.final[0] if run.final else None
        return {
            "llm_calls": run.llm_calls,
            "llm_failures": run.llm_failures,
            "input_tokens": sum(int(u.get("prompt_tokens") or 0) for u in totals.values()),
            "output_tokens": sum(int(u.get("completion_tokens") or 0) for u in totals.values()),
            "sparql_queries": run.kg.stats.queries,
            "kg_seconds": round(run.kg.stats.seconds, 4),
            "depth": run.depth,
            "planned_hops": len(run.hop_targets),
            "plan": run.hop_targets,
            "raw_plan": run.raw_plan,
            "conditions": run.conditions,
            "extended_hops": run.extended,
            "hops_walked": best.steps if best else 0,
            "relation_path": [[h.relation, h.direction.value] for h in best.hops] if best else [],
            "walk": run.hops,
            "reflections": run.reflections,
            "stop_reason": run.stop_reason,
            "error": run.error,
            "topic_entities": [t.id for t in run.topics],
            "topic_names": [t.label for t in run.topics],
            "dropped_selections": len(run.dropped),
            "dropped_examples": run.dropped[:10],
            "fallbacks": run.fallbacks,
        }


def _noun(text: object) -> str:
    """The kind a plan names, singular: "Movies (directed by)" -> "movie"."""
    return text.split("(", 1)[0].lower().strip().removesuffix("s") if isinstance(text, str) else ""


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


def _question_problem(question: object) -> str | None:
    if not isinstance(question, str) or not question.strip():
        return "the question is empty"
    if len(question) > MAX_QUESTION_CHARS:
        return f"the question is {len(question)} characters long (limit {MAX_QUESTION_CHARS})"
    return None


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
