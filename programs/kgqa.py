"""KGQA: Plan-on-Graph style question answering over a knowledge graph, every LLM step a DSPy predictor.

    decompose -> topic entities (given, or linked by label) -> per depth:
        relations of the frontier -> relation prune -> neighbours -> entity prune ->
        fact filter -> memory update -> sufficiency -> (reflection) -> next depth
    -> answers from the best trails (path answer extraction), ranked

The graph is read through `kg.KnowledgeGraph` (one query per frontier). LLM calls are spent
only where a decision exists, every selection is checked against its candidates, and a model
that fails or answers garbage falls back to embedding similarity over real candidates.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import dspy

from data.examples import MAX_QUESTION_CHARS
from kg import Edge, KGError, KnowledgeGraph, Node, Step
from kg.errors import InvalidTermError
from programs import render
from programs.config import WalkConfig
from programs.embedder import Embedder
from programs.selection import select
from programs.trails import Fact, Hop, Trail
from signatures import (
    Decompose,
    ExtractPathAnswer,
    FilterFacts,
    JudgeSufficiency,
    PruneEntities,
    PruneRelations,
    Reflect,
    UpdateMemory,
)

_BRACKETED = re.compile(r"\[([^\[\]]{1,200})\]")


@dataclass
class Run:
    """Everything one question's walk accumulates; the trace is read off it at the end."""

    question: str
    kg: KnowledgeGraph
    config: WalkConfig
    topics: list[Node] = field(default_factory=list)
    sub_objectives: list[str] = field(default_factory=list)
    memory: list[str] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)  # carried into memory and judgement
    offered: set[Fact] = field(default_factory=set)  # every fact ever put before the fact filter
    seen: dict[str, Trail] = field(default_factory=dict)
    final: list[Trail] = field(default_factory=list)
    judged: list[str] = field(default_factory=list)
    depth: int = 0
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
        self.stop_reason = "llm_budget" if self.budget_hit and reason != "sufficient" else reason
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
        self.decompose = dspy.Predict(Decompose)
        self.prune_relations = dspy.Predict(PruneRelations)
        self.prune_entities = dspy.Predict(PruneEntities)
        self.filter_facts = dspy.Predict(FilterFacts)
        self.update_memory = dspy.Predict(UpdateMemory)
        self.judge = dspy.Predict(JudgeSufficiency)
        self.reflect = dspy.Predict(Reflect)
        self.extract_answer = dspy.Predict(ExtractPathAnswer)

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
        run.sub_objectives = self._decompose(run)
        run.memory = ["unknown"] * len(run.sub_objectives)
        frontier = [Trail(topic) for topic in run.topics]
        relations = dict(run.kg.relations(run.topic_ids).items)
        for depth in range(1, run.config.depth + 1):
            run.depth = depth
            relations.update(self._missing_relations(run, frontier, relations))
            steps = self._choose_relations(run, frontier, relations)
            if not steps:
                return run.stop("half_stop")
            candidates, relations = self._follow(run, steps, more=depth < run.config.depth)
            kept = self._choose_entities(run, candidates)
            if not kept:
                return run.stop("half_stop")
            run.final = kept
            new_facts = self._recall(run, kept)
            self._remember(run, new_facts)
            if self._sufficient(run):
                return run.stop("sufficient")
            frontier = self._beam(run, kept) + self._reflect(run, kept)
            if run.budget_hit:
                return run.stop("llm_budget")
        run.stop("depth_exhausted")

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

    def _decompose(self, run: Run) -> list[str]:
        out = self._call(run, self.decompose, question=run.question)
        objectives = [o.strip() for o in (out.sub_objectives if out else []) if isinstance(o, str) and o.strip()]
        return objectives[:5] or [run.question]

    def _missing_relations(self, run: Run, frontier: list[Trail], known: dict) -> dict:
        """Relations of frontier entities not fetched with the last hop (ones brought back by reflection)."""
        missing = [t.end.id for t in frontier if t.end.id not in known and not t.end.literal]
        return dict(run.kg.relations(missing).items) if missing else {}

    def _choose_relations(self, run: Run, frontier: list[Trail], relations: dict) -> list[tuple[Trail, Edge, float]]:
        """Relations to follow from each frontier entity. Entities offered the same candidates
        (films of one director, say) share one decision, so a wide frontier is not a call per entity."""
        drop_back = run.kg.profile.drops_pre_relations
        offers: dict[tuple[str, ...], tuple[dict[str, Edge], list[Trail]]] = {}
        for trail in frontier:
            back = drop_back and trail.arrival and Edge(trail.arrival.relation, trail.arrival.direction.reverse)
            labels = {render.relation_label(e): e for e in relations.get(trail.end.id, ()) if e != back}
            offers.setdefault(tuple(labels), (labels, []))[1].append(trail)
        chosen = []
        for labels, trails in offers.values():
            picked = self._pick(
                run,
                self.prune_relations,
                offered="candidate_relations",
                chosen="relations_to_follow",
                candidates=list(labels),
                limit=run.config.relations_per_entity,
                query=" ".join([run.question, *run.sub_objectives]),
                question=run.question,
                sub_objectives=run.sub_objectives,
                entity=render.several([render.node_label(t.end) for t in trails]),
            )
            chosen += [(trail, labels[label], score) for trail in trails for label, score in picked]
        return chosen

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

    def _choose_entities(self, run: Run, groups: list[Candidates]) -> list[Trail]:
        """Entities to keep, one decision per (compound) relation across the whole frontier."""
        by_edges: dict[tuple[Edge, ...], list[Candidates]] = defaultdict(list)
        for group in groups:
            by_edges[group.edges].append(group)
        kept: list[Trail] = []
        for edges, same in by_edges.items():
            nodes = list(dict.fromkeys(n for group in same for _, n in group.members))
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
                query=run.question,
                question=run.question,
                relation_walked=" -> ".join([ends, *map(render.relation_label, edges)]),
            )
            chosen = dict((node, score) for label, score in picked for node in by_label[label])
            chosen.update((node, 1.0) for node in nodes if node.literal)  # values pass without pruning
            for group in same:
                for prefix, node in group.members:
                    hops = prefix + (Hop(edges[-1].relation, edges[-1].direction, node),)
                    trail = group.trail.extend(hops, group.score * chosen.get(node, 0.0))
                    run.seen.setdefault(node.id, trail)  # pruned ones too: reflection may resume from them
                    if node in chosen:
                        kept.append(trail)
        return sorted(kept, key=lambda t: (-t.score, render.path_text(t)))

    def _recall(self, run: Run, kept: list[Trail]) -> list[Fact]:
        """The new facts worth carrying (HippoRAG's recognition memory); all of them when few."""
        new = [f for f in dict.fromkeys(f for t in kept for f in t.facts()) if f not in run.offered]
        run.offered.update(new)
        limit = run.config.facts_kept
        if len(new) > limit:
            triples = [render.fact_triple(f) for f in new]
            texts = [" | ".join(t) for t in triples]
            out = self._call(run, self.filter_facts, question=run.question, candidate_facts=triples, max_facts=limit)
            outputs = [" | ".join(map(str, t)) for t in (out.kept_facts if out else []) if isinstance(t, (list, tuple))]
            selection = select(outputs, texts, cutoff=run.config.snap_cutoff, limit=limit)
            run.dropped += selection.dropped
            if selection.kept:
                new = [new[texts.index(text)] for text in selection.kept]
            else:
                run.fallbacks += 1
                new = [new[texts.index(text)] for text in self.embedder.top(run.question, texts, limit)]
        run.facts += new
        return new

    def _remember(self, run: Run, new_facts: list[Fact]) -> None:
        if not new_facts:
            return
        out = self._call(
            run,
            self.update_memory,
            question=run.question,
            sub_objectives=run.sub_objectives,
            memory=run.memory,
            new_facts=[render.fact_text(f) for f in new_facts],
        )
        notes = [n for n in (out.updated_memory if out else []) if isinstance(n, str)]
        if len(notes) == len(run.sub_objectives):
            run.memory = notes
        elif out is not None:
            run.dropped.append(f"memory with {len(notes)} notes for {len(run.sub_objectives)} sub-objectives")

    def _sufficient(self, run: Run) -> bool:
        out = self._call(
            run,
            self.judge,
            question=run.question,
            memory_notes=run.memory,
            known_facts=[render.fact_text(f) for f in run.facts],
        )
        if out is None or out.is_sufficient is not True:
            return False
        grounded = sorted({render.node_label(n) for f in run.facts for n in (f.subject, f.object) if n.literal or n.name})
        grounded = [g for g in grounded if g not in {t.label for t in run.topics}]
        selection = select(out.answer_names or [], grounded, cutoff=run.config.snap_cutoff)
        run.dropped += selection.dropped
        run.judged = selection.kept
        return bool(selection.kept)

    def _beam(self, run: Run, kept: list[Trail]) -> list[Trail]:
        """The best trails to go on from: one per entity, literals excluded, best scores first."""
        frontier: dict[str, Trail] = {}
        for trail in kept:
            if not trail.end.literal and trail.end.id not in frontier:
                frontier[trail.end.id] = trail
        return list(frontier.values())[: run.config.beam_width]

    def _reflect(self, run: Run, kept: list[Trail]) -> list[Trail]:
        """Plan-on-Graph's reflection: resume from entities passed earlier, if the model says so."""
        if run.reflections >= run.config.max_reflections:
            return []
        current = {t.end.id for t in kept}
        earlier = {render.node_label(t.end): t for e, t in run.seen.items() if e not in current and not t.end.literal}
        if not earlier:
            return []
        out = self._call(
            run,
            self.reflect,
            question=run.question,
            memory_notes=run.memory,
            frontier=sorted({render.node_label(t.end) for t in kept}),
            earlier_entities=list(earlier),
            facts_so_far=[render.fact_text(f) for f in run.facts],
        )
        if out is None or out.should_backtrack is not True:
            return []
        selection = select(out.entities_to_resume or [], list(earlier), cutoff=run.config.snap_cutoff)
        run.dropped += selection.dropped
        if selection.kept:
            run.reflections += 1
        return [earlier[label] for label in selection.kept]

    def _answer(self, run: Run) -> tuple[list[str], list[str]]:
        """Answers from the best trails of the deepest depth reached, each grounded on its trail.

        When the sufficiency judge named answers (checked against the facts), those are the
        answers, and the paths shown are the trails that reach them; otherwise the trails'
        answers are ranked by the scores of the trails behind them.
        """
        trails = [t for t in run.final if t.score >= run.config.min_path_score][: run.config.answer_paths]
        scores: dict[str, float] = defaultdict(float)
        found: list[tuple[str, Trail]] = []
        for trail in trails:
            answer = self._trail_answer(run, trail)
            if answer is not None:
                scores[answer] += trail.score
                found.append((answer, trail))
        if run.judged:
            paths = [render.gcr_path(t, a) for a, t in found if a in run.judged]
            return list(run.judged), paths
        ranked = sorted(scores, key=lambda a: (-scores[a], a))
        return ranked, [render.gcr_path(t, a) for a, t in found]

    def _trail_answer(self, run: Run, trail: Trail) -> str | None:
        candidates = [render.node_label(n) for n in trail.answer_candidates(run.topic_ids)]
        candidates = list(dict.fromkeys(candidates))
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        judged = [c for c in candidates if c in run.judged]
        if judged:
            return judged[0]
        out = self._call(
            run,
            self.extract_answer,
            question=run.question,
            reasoning_path=render.path_text(trail),
            path_entities=candidates,
        )
        selection = select([out.answer_entity] if out else [], candidates, cutoff=run.config.snap_cutoff, limit=1)
        run.dropped += selection.dropped
        if selection.kept:
            return selection.kept[0]
        run.fallbacks += 1
        return candidates[-1]  # the trail's end

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
        out = self._call(run, predictor, **inputs, **{offered: candidates})
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
            return predictor(**inputs)
        except Exception as exc:  # the LM or its adapter failed: the walk falls back and goes on
            run.llm_failures += 1
            run.dropped.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            return None

    def _trace(self, run: Run, usage) -> dict:
        totals = usage.get_total_tokens()
        return {
            "llm_calls": run.llm_calls,
            "llm_failures": run.llm_failures,
            "input_tokens": sum(int(u.get("prompt_tokens") or 0) for u in totals.values()),
            "output_tokens": sum(int(u.get("completion_tokens") or 0) for u in totals.values()),
            "sparql_queries": run.kg.stats.queries,
            "kg_seconds": round(run.kg.stats.seconds, 4),
            "depth": run.depth,
            "reflections": run.reflections,
            "stop_reason": run.stop_reason,
            "error": run.error,
            "topic_entities": [t.id for t in run.topics],
            "dropped_selections": len(run.dropped),
            "dropped_examples": run.dropped[:10],
            "fallbacks": run.fallbacks,
        }


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
