"""PathKGQA: retrieve every short path from the topic entities, then let the model choose the answer.

    topic entities -> every relation from them, then from the ends of the `beam_width` most
    question-like relation chains, up to `depth` hops (nameless CVT nodes stepped through) ->
    candidate answers, each with its most question-like path, ranked by how many topic entities
    reach them, then by similarity to the question -> one constrained choice among the first
    `choices_shown` (`choose_answer`) -> the chosen answer, then the other ends of its path

This is the walk for graphs whose hop counts a plan cannot guess. On Freebase a fact may sit
behind a nameless CVT node, and a CWQ question chains a relation with a constraint; a small model
that plans hops there stops a hop short or picks a relation among dozens of long ids blind. Here
it decides once, among answers it sees with the paths that reach them (GCR's path answer
extraction over SubgraphRAG-style retrieval). One LLM call per question; none when one candidate
is left; similarity's first candidate when the call fails.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import dspy

from kgqa.data.examples import question_problem
from kgqa.kg import KnowledgeGraph
from kgqa.programs import render
from kgqa.programs.base import KGProgram, WalkState
from kgqa.programs.config import WalkConfig
from kgqa.programs.embedder import Embedder
from kgqa.programs.trace import StopReason
from kgqa.programs.trails import Hop, Trail
from kgqa.signatures import ChooseAnswer

_PAIRS_PER_CHAIN = 30  # ends of one relation chain scored with their names


@dataclass(frozen=True)
class Candidate:
    """One answer the paths reached: its best trail, and how many topic entities reach it."""

    label: str
    trail: Trail
    score: float
    topics: int

    @property
    def path(self) -> str:
        """The trail as the model reads it: names and relation words, directions left out (on graphs
        cut from retrieved paths they point the way a retriever walked, not always Freebase's way)."""
        return render.plain_path(self.trail)


class PathKGQA(KGProgram):
    """Retrieve, then choose. `forward(question, topic_entities=None)` returns answers, GCR-style
    reasoning paths and a trace, as `KGQA` does."""

    def __init__(
        self, kg: KnowledgeGraph | None = None, *, config: WalkConfig | None = None, embedder: Embedder | None = None
    ) -> None:
        super().__init__(kg, config=config, embedder=embedder)
        self.choose_answer = dspy.Predict(ChooseAnswer)

    # -- the algorithm -----------------------------------------------------------------------

    def _walk(self, state: WalkState, topic_entities: Sequence[str] | None) -> None:
        trails = self._retrieve(state, topic_entities)
        if state.trace.stop_reason is not None:
            return None
        candidates = self._rank(state, trails)
        if not candidates:
            return state.stop(StopReason.DEAD_END)
        shown = candidates[: state.config.choices_shown]
        chosen = self._choose(state, shown)
        rank = {c.label: i for i, c in enumerate(candidates)}
        same_chain = sorted((t for t in trails if _chain(t) == _chain(chosen.trail) and t.end != chosen.trail.end
                             and render.node_label(t.end) in rank), key=lambda t: rank[render.node_label(t.end)])
        state.final = [chosen.trail, *same_chain]
        kept = {render.node_label(t.end) for t in state.final}
        state.trace.walk.append({"depth": 1, "target": "the answer", "offered": [c.path for c in shown], "chosen": [chosen.path],
                                 "edges": [[render.node_label(c.trail.topic), render.compound_label([h.edge for h in c.trail.hops]),
                                            c.label, c.label in kept] for c in shown]})
        state.stop(StopReason.CHOSEN)

    def candidates(self, question: str, topic_entities: Sequence[str] | None = None) -> list[Candidate]:
        """The candidates the model would be shown for `question`, best first (no LLM call): what
        compiling labels with the gold answers."""
        state = self._new_state(question)
        return self._rank(state, self._retrieve(state, topic_entities))[: self.config.choices_shown]

    # -- steps -------------------------------------------------------------------------------

    def _retrieve(self, state: WalkState, topic_entities: Sequence[str] | None) -> list[Trail]:
        """The topic entities, then every trail from them; none (and the state stopped) on a bad question."""
        problem = question_problem(state.question)
        if problem:
            state.stop(StopReason.BAD_QUESTION, error=problem)
            return []
        state.topics, problem = self._topics(state, topic_entities)
        if not state.topics:
            state.stop(StopReason.NO_TOPIC_ENTITY, error=problem)
            return []
        return self._paths(state)

    def _paths(self, state: WalkState) -> list[Trail]:
        """Every trail of up to `depth` hops: all relations of the topic entities, then of the
        entities the best `beam_width` relation chains reached. One query per depth (two through CVTs)."""
        frontier = [Trail(topic) for topic in state.topics]
        relations = dict(state.kg.relations(state.topic_ids).items)
        reached: list[Trail] = []
        while frontier and state.depth < state.config.depth:
            state.depth += 1
            steps = [(trail, edge, 1.0) for trail in frontier for edge in self._onward(state, trail, relations)]
            groups, relations = self._follow(state, steps, more=state.depth < state.config.depth)
            trails = [group.trail.extend(prefix + (Hop(group.edges[-1].relation, group.edges[-1].direction, node),), 1.0)
                      for group in groups for prefix, node in group.members]
            reached += trails
            frontier = self._beam(state, trails)
        return reached

    def _beam(self, state: WalkState, trails: list[Trail]) -> list[Trail]:
        """Trails to go on from: those of the `beam_width` relation chains most like the question,
        one per entity, at most `max_candidates`."""
        by_chain: dict[tuple, list[Trail]] = defaultdict(list)
        for trail in trails:
            if not trail.end.literal:
                by_chain[_chain(trail)].append(trail)
        chains = list(by_chain)
        scores = self.embedder.similarities(state.question, [_chain_words(chain) for chain in chains])
        best = sorted(range(len(chains)), key=lambda i: -scores[i])[: state.config.beam_width]
        frontier: dict[str, Trail] = {}
        for i in best:
            for trail in by_chain[chains[i]]:
                frontier.setdefault(trail.end.id, trail)
        return list(frontier.values())[: state.config.max_candidates]

    def _rank(self, state: WalkState, trails: list[Trail]) -> list[Candidate]:
        """Answers reached, each with its best trail: first those more topic entities reach (the
        city home to both people), then by similarity to the question, half the relation chain's
        words, half the chain with the answer's name ("mascot team ; championship champion : 2014
        World Series")."""
        ends = [t for t in trails if (t.end.literal or t.end.name) and t.end.id not in state.topic_ids]
        by_chain: dict[tuple, list[Trail]] = defaultdict(list)
        for trail in ends:
            by_chain[_chain(trail)].append(trail)
        chains = list(by_chain)
        chain_scores = dict(zip(chains, self.embedder.similarities(state.question, [_chain_words(c) for c in chains])))
        pairs = [t for chain in sorted(chains, key=lambda c: -chain_scores[c])[: state.config.max_candidates]
                 for t in by_chain[chain][:_PAIRS_PER_CHAIN]]
        named = self.embedder.similarities(state.question, [f"{_chain_words(_chain(t))} : {render.node_label(t.end)}" for t in pairs])
        pair_scores = {id(t): s for t, s in zip(pairs, named)}
        best: dict[str, tuple[float, Trail]] = {}
        topics: dict[str, set[str]] = defaultdict(set)
        for trail in ends:
            label = render.node_label(trail.end)
            score = 0.5 * chain_scores[_chain(trail)] + 0.5 * pair_scores.get(id(trail), 0.0)
            topics[label].add(trail.topic.label)
            if label not in best or score > best[label][0]:
                best[label] = (score, trail)
        ranked = sorted(best, key=lambda label: (-len(topics[label]), -best[label][0], label))
        return [Candidate(label, best[label][1], best[label][0], len(topics[label])) for label in ranked]

    def _choose(self, state: WalkState, shown: list[Candidate]) -> Candidate:
        """The answer step: one constrained choice among the candidates shown (the first
        `choices_shown`); the first of them when there is one, or when the model chooses none, its
        call fails or it names no candidate."""
        if len(shown) == 1:
            return shown[0]
        labels = [c.label for c in shown]
        kept = self._checked_choice(state, self.choose_answer, chosen="chosen_answer", candidates=labels, limit=1,
                                    question=state.question, candidate_paths=[c.path for c in shown])
        if not kept:
            state.trace.fallbacks += 1
            return shown[0]
        return shown[labels.index(kept[0])]

    def _answer(self, state: WalkState) -> tuple[list[str], list[str]]:
        """The chosen answer, then the other ends of its relation chain from the same topic entity."""
        answers = list(dict.fromkeys(render.node_label(t.end) for t in state.final))
        paths = [render.gcr_path(t, render.node_label(t.end)) for t in state.final[: state.config.answer_paths]]
        return answers[: state.config.max_answers], paths


def _chain(trail: Trail) -> tuple[str, ...]:
    """The relations a trail followed, from its topic entity, directions left out."""
    return (trail.topic.id, *(hop.relation for hop in trail.hops))


def _chain_words(chain: tuple[str, ...]) -> str:
    """A chain's relations as words for similarity: ('x', 'sports.mascot.team') -> 'mascot team'."""
    return " ; ".join(render.relation_phrase(relation) for relation in chain[1:])
