"""The candidate answers, ranked: every end the walk reached, each with its best trail, in the
hand-set order (`rank`), then in the compiled path scorer's order where the program has one
(`scored_order`); the ones extraction is shown (`chains_spread`); and `Ranked`, what the steps that
read the candidates are handed; and the relations a hop reached, by the one its target names
(`named_relation`). No LLM call."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace

from kgqa.programs import render
from kgqa.programs.config import WalkConfig
from kgqa.programs.embedder import Embedder
from kgqa.programs.scorer import PathScorer
from kgqa.programs.state import Asking
from kgqa.programs.trails import Trail
from kgqa.programs.tuned import CLEAR_MARGIN, PAIRS_PER_CHAIN, PLANNED_BONUS, PRIOR_WEIGHT, SCORED

__all__ = ["SCORED", "Candidate", "Ranked", "chain_words", "chains_spread", "named_relation", "rank", "scored_order", "scored_text"]


@dataclass(frozen=True)
class Candidate:
    """One answer the walk reached: its best trail, how many topic entities reach it, and in how many
    hops in all (each topic entity's shortest trail to it, summed): where their paths meet. `named`:
    its trail followed the relation prune's choices to the relation the plan's last hop names.
    `share`: its share of the path scorer's softmax, where the scorer ordered the candidates."""

    label: str
    trail: Trail
    topics: int
    meets: int
    path: str  # the trail as the model reads it: names and relation phrases, directions left out (on graphs
    # cut from retrieved paths they point the way a retriever walked, not always Freebase's way)
    named: bool = False
    share: float | None = None


@dataclass(frozen=True)
class Ranked:
    """The candidates once the walk's hops are done, and what that settles, worked out once where
    it becomes known (`KGQA._ranked`): the one input of the steps that read the candidates (fact
    filter, memory update, sufficiency, extraction). `settled`: why extraction has nothing to decide
    (the first answers), None when it asks the model; `short`: why no hop can be added, None when
    sufficiency asks; `onward`: the trails the chain prior's sure chain goes on from, where the walk
    stopped on its way (`KGQA._prior_onward`). `facts` and `notes` are the fact filter's and memory
    update's, once known."""

    candidates: list[Candidate]
    shown: list[Candidate]  # what extraction chooses among, and the fact filter reads about
    reached: list[Trail]  # every trail the walk reached: each chosen answer brings the other ends of its chain
    relations: dict  # entity id -> the edges around it, as the walk fetched them
    depth: int  # the hops walked
    extensions: int  # of them past the plan
    settled: str | None
    short: str | None
    onward: tuple[Trail, ...] = ()
    facts: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def knowing(self, *, notes: list[str], facts: list[str] = ()) -> Ranked:
        """The same candidates with memory update's `notes` (and the fact filter's `facts`)."""
        return replace(self, notes=tuple(notes), facts=tuple(facts))


def chains_spread(candidates: list[Candidate], shown: int, per_chain: int) -> list[Candidate]:
    """The first `shown` candidates in rank order, taking at most `per_chain` ends of one relation
    chain (directions and topic left out) before the other chains' candidates; the places left
    are filled in rank order."""
    taken: Counter[tuple[str, ...]] = Counter()
    first, waiting = [], []
    for c in candidates:
        chain = c.trail.relations
        (first if taken[chain] < per_chain else waiting).append(c)
        taken[chain] += 1
    picked = {id(c) for c in (first + waiting)[:shown]}
    return [c for c in candidates if id(c) in picked]


def rank(asking: Asking, reached: list[Trail], embedder: Embedder, *, depth: int, extensions: int,
         named: set) -> list[Candidate]:
    """Every answer `reached` (the walk's trails, at every depth), each with its best trail: first
    those more topic entities reach (the city home to both people), among them first where their
    paths meet in fewest hops (each topic entity's shortest trail there, summed: the film one
    directed and the other starred in, before its sequel a hop further), then by similarity to the
    question, half the relation chain's words, half the chain with the answer's name ("mascot team ;
    championship champion : 2014 World Series"), with a bonus for a trail the relation prune chose
    every hop of, at the plan's depth (a bonus, not a rule: a small planner's hop count is often
    wrong on Freebase), and the chain prior's weight for the trail's chain (`PRIOR_WEIGHT` times the
    share of the nearest training questions that went by it). The plan's last hop is not pruned:
    there only the chain its target names (`named`: the chains by the relation it names) takes the
    bonus. `depth`: the hops walked, `extensions` of them past the plan."""
    topic_ids, config = asking.topic_ids, asking.config
    ends = [t for t in reached if (t.end.literal or t.end.name) and t.end.id not in topic_ids]
    planned_depth = min(len(asking.hop_targets) + extensions, depth)
    named_chains = {chain for chain in named if len(chain) - 1 == planned_depth}  # the plan's last hop named its relation
    pruned_there = planned_depth < depth  # the plan's last hop was not the walk's: the relation prune chose there
    chain_scores, pair_scores = _similarities(asking, ends, embedder)
    best: dict[str, tuple[float, Trail]] = {}
    topics: dict[str, dict[str, int]] = defaultdict(dict)  # label -> topic entity -> its fewest hops there
    for trail in ends:
        label = render.node_label(trail.end)
        planned = (config.relation_prune and trail.score >= 1.0 and trail.steps == planned_depth
                   and (trail.chain in named_chains if named_chains else pruned_there))
        score = (0.5 * chain_scores[trail.chain] + 0.5 * pair_scores.get(id(trail), 0.0) + PLANNED_BONUS * planned
                 + PRIOR_WEIGHT * asking.votes.chain(trail.relations))
        hops = topics[label].get(trail.topic.label)
        topics[label][trail.topic.label] = trail.steps if hops is None else min(hops, trail.steps)
        if label not in best or score > best[label][0]:
            best[label] = (score, trail)
    meets = {label: sum(hops.values()) if len(hops) > 1 else 0 for label, hops in topics.items()}
    ranked = sorted(best, key=lambda label: (-len(topics[label]), meets[label], -best[label][0], label))
    phrase = asking.kg.profile.relation_phrase
    return [Candidate(label, trail, len(topics[label]), meets[label], render.plain_path(trail, phrase=phrase),
                      named=trail.score >= 1.0 and trail.chain in named)
            for label in ranked for trail in [best[label][1]]]


def _similarities(asking: Asking, ends: list[Trail], embedder: Embedder) -> tuple[dict[tuple, float], dict[int, float]]:
    """Each chain's similarity to the question (its relations' words), and each trail's with its
    answer's name, for the first `PAIRS_PER_CHAIN` trails of the `max_candidates` most similar chains."""
    by_chain: dict[tuple, list[Trail]] = defaultdict(list)
    for trail in ends:
        by_chain[trail.chain].append(trail)
    chains = list(by_chain)
    phrase = asking.kg.profile.relation_phrase
    chain_scores = dict(zip(chains, embedder.similarities(asking.question, [chain_words(c, phrase) for c in chains])))
    pairs = [t for chain in sorted(chains, key=lambda c: -chain_scores[c])[: asking.config.max_candidates]
             for t in by_chain[chain][:PAIRS_PER_CHAIN]]
    with_names = embedder.similarities(asking.question, [f"{chain_words(t.chain, phrase)} : {render.node_label(t.end)}" for t in pairs])
    return chain_scores, {id(t): s for t, s in zip(pairs, with_names)}


def scored_order(asking: Asking, scorer: PathScorer, candidates: list[Candidate]) -> list[Candidate]:
    """The first `SCORED` candidates in the compiled path scorer's order (`programs.scorer`: fitted
    on the gold-path teacher's walks of training questions), each with its share of the scorer's
    softmax (`Candidate.share`), the rest after them; the hand-set order where the program has no
    scorer or it is switched off."""
    if not (asking.config.path_scorer and scorer.trained) or len(candidates) < 2:
        return candidates
    head = candidates[:SCORED]
    shares = scorer.shares(asking.question, [scored_text(c) for c in head])
    scored = [replace(c, share=share) for c, share in zip(head, shares)]
    return sorted(scored, key=lambda c: -c.share) + candidates[SCORED:]


def scored_text(candidate: Candidate) -> str:
    """A candidate as the path scorer reads it: its path, and how many topic entities reach it
    where more than one does (a conjunction's answer is reached from each entity it names)."""
    more = f" ; reached from {candidate.topics} named entities" if candidate.topics > 1 else ""
    return candidate.path + more


def chain_words(chain: tuple[str, ...], phrase: Callable[[str], str]) -> str:
    """A chain's relations as words for similarity, each as the graph's profile `phrase`s it:
    ('x', 'sports.mascot.team') -> 'mascot team'."""
    return " ; ".join(phrase(relation) for relation in chain[1:])


def named_relation(asking: Asking, labels: list[str], embedder: Embedder, *, depth: int) -> tuple[list[str], str | None]:
    """The relations ranked by similarity to hop `depth`'s target, and the one it clearly names
    ("movie (directed by)" -> directed_by), if one is similar enough and ahead of the next. A
    target that spells its relation words in parentheses is compared by them ("movie (written
    by)": "written by", not the "movie" that directed_by fits as well), and a target names a
    relation, not its direction: directions are left out of the comparison."""
    words = [asking.kg.profile.relation_words(label.replace(" (reverse)", "")) for label in labels]
    scores = dict(zip(labels, embedder.similarities(asking.hop_relation(depth), words)))
    ranked = sorted(labels, key=lambda label: (-scores[label], label))
    return ranked, ranked[0] if _clear(ranked, scores, asking.config) else None


def _clear(ranked: list[str], scores: dict[str, float], config: WalkConfig) -> bool:
    """The best candidate is similar enough to the target, and far enough ahead of the next (a lone
    relation has none to be ahead of: "year (release year)" names the one release_year reached)."""
    if not ranked:
        return False
    best = scores[ranked[0]]
    second = scores[ranked[1]] if len(ranked) > 1 else -1.0
    return best >= config.clear_similarity and best - second >= CLEAR_MARGIN
