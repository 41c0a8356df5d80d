"""The candidate answers, ranked: every end the walk reached, each with its best trail, in the
hand-set order (`rank`), then in the compiled path scorer's order where the program has one
(`scored_order`). No LLM call."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from kgqa.programs import render
from kgqa.programs.base import WalkState
from kgqa.programs.embedder import Embedder
from kgqa.programs.scorer import PathScorer
from kgqa.programs.trails import Trail
from kgqa.programs.tuned import PAIRS_PER_CHAIN, PLANNED_BONUS, PRIOR_WEIGHT, SCORED

__all__ = ["SCORED", "Candidate", "chain_words", "rank", "scored_order", "scored_text"]



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


def rank(state: WalkState, embedder: Embedder) -> list[Candidate]:
    """Every answer reached, each with its best trail: first those more topic entities reach
    (the city home to both people), among them first where their paths meet in fewest hops (each
    topic entity's shortest trail there, summed: the film one directed and the other starred in,
    before its sequel a hop further), then by similarity to the question, half the relation chain's
    words, half the chain with the answer's name ("mascot team ; championship champion : 2014
    World Series"), with a bonus for a trail the relation prune chose every hop of, at the plan's
    depth (a bonus, not a rule: a small planner's hop count is often wrong on Freebase), and the
    chain prior's weight for the trail's chain (`PRIOR_WEIGHT` times the share of the nearest
    training questions that went by it). The plan's last hop is not pruned: there only the chain
    its target names takes the bonus."""
    ends = [t for t in state.reached if (t.end.literal or t.end.name) and t.end.id not in state.topic_ids]
    planned_depth = min(len(state.hop_targets) + state.trace.extended_hops, state.depth)
    named_chains = {chain for chain in state.named if len(chain) - 1 == planned_depth}  # the plan's last hop named its relation
    pruned_there = planned_depth < state.depth  # the plan's last hop was not the walk's: the relation prune chose there
    by_chain: dict[tuple, list[Trail]] = defaultdict(list)
    for trail in ends:
        by_chain[trail.chain].append(trail)
    chains = list(by_chain)
    chain_scores = dict(zip(chains, embedder.similarities(state.question, [chain_words(c, state) for c in chains])))
    pairs = [t for chain in sorted(chains, key=lambda c: -chain_scores[c])[: state.config.max_candidates]
             for t in by_chain[chain][:PAIRS_PER_CHAIN]]
    named = embedder.similarities(state.question, [f"{chain_words(t.chain, state)} : {render.node_label(t.end)}" for t in pairs])
    pair_scores = {id(t): s for t, s in zip(pairs, named)}
    best: dict[str, tuple[float, Trail]] = {}
    topics: dict[str, dict[str, int]] = defaultdict(dict)  # label -> topic entity -> its fewest hops there
    for trail in ends:
        label = render.node_label(trail.end)
        planned = (state.config.relation_prune and trail.score >= 1.0 and trail.steps == planned_depth
                   and (trail.chain in named_chains if named_chains else pruned_there))
        score = (0.5 * chain_scores[trail.chain] + 0.5 * pair_scores.get(id(trail), 0.0) + PLANNED_BONUS * planned
                 + PRIOR_WEIGHT * state.votes.chain(trail.relations))
        hops = topics[label].get(trail.topic.label)
        topics[label][trail.topic.label] = trail.steps if hops is None else min(hops, trail.steps)
        if label not in best or score > best[label][0]:
            best[label] = (score, trail)
    meets = {label: sum(hops.values()) if len(hops) > 1 else 0 for label, hops in topics.items()}
    ranked = sorted(best, key=lambda label: (-len(topics[label]), meets[label], -best[label][0], label))
    phrase = state.kg.profile.relation_phrase
    return [Candidate(label, best[label][1], len(topics[label]), meets[label], render.plain_path(best[label][1], phrase=phrase))
            for label in ranked]


def scored_order(state: WalkState, scorer: PathScorer, candidates: list[Candidate]) -> list[Candidate]:
    """The first `SCORED` candidates in the compiled path scorer's order (`programs.scorer`: fitted
    on the gold-path teacher's walks of training questions), the rest after them; the hand-set
    order where the program has no scorer or it is switched off. Where it orders them, each one's
    share of its softmax is kept (`state.shares`) with the share at which its first answers alone."""
    if not (state.config.path_scorer and scorer.trained) or len(candidates) < 2:
        return candidates
    state.trace.path_scorer = True
    head = candidates[:SCORED]
    shares = scorer.shares(state.question, [scored_text(c) for c in head])
    state.shares = {c.label: share for c, share in zip(head, shares)}
    state.sure = scorer.sure_at if state.config.scorer_sure is None else state.config.scorer_sure
    return sorted(head, key=lambda c: -state.shares[c.label]) + candidates[SCORED:]


def scored_text(candidate: Candidate) -> str:
    """A candidate as the path scorer reads it: its path, and how many topic entities reach it
    where more than one does (a conjunction's answer is reached from each entity it names)."""
    more = f" ; reached from {candidate.topics} named entities" if candidate.topics > 1 else ""
    return candidate.path + more


def chain_words(chain: tuple[str, ...], state: WalkState) -> str:
    """A chain's relations as words for similarity: ('x', 'sports.mascot.team') -> 'mascot team'."""
    return " ; ".join(state.kg.profile.relation_phrase(relation) for relation in chain[1:])
