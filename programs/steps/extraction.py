"""Path answer extraction: the answers the paths support, each with its reasoning path."""

from __future__ import annotations

from collections import Counter

from kgqa.kg import KGProfile
from kgqa.programs import render
from kgqa.programs.base import WalkState
from kgqa.programs.ranking import Candidate
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.programs.trails import Trail
from kgqa.signatures import ExtractAnswers


class Extraction(LMStep):
    """The model chooses among the answer choices (`choices`), each shown with its path (and the
    kept facts and notes), at least one (a question has an answer, and "none of these" would only
    hand the answer to the ranking: 7 of 100 CWQ-mini test questions did that, 6 of them with the
    gold answer shown); each chosen answer brings the other ends of its relation chain that as many
    topic entities reach, a relation and its inverse counted as one (`same_chain`). Its value: the
    answers' trails, and whether the model chose. Nothing to decide where the first answers
    (`skip`); falls back to the first."""

    name, usage, signature = "extraction", "extract_answers", ExtractAnswers

    def choices(self, state: WalkState, candidates: list[Candidate]) -> list[Candidate]:
        """The candidates extraction chooses among (and the fact filter reads about): the first
        `choices_shown` ranked, at most `choices_per_chain` of one relation chain while other
        chains' candidates wait."""
        return chains_spread(candidates, state.config.choices_shown, state.config.choices_per_chain)

    def skip(self, state: WalkState, candidates: list[Candidate], shown: list[Candidate]) -> str | None:
        """Why extraction has nothing to decide among the answers `shown` (the first ranked then
        answers, with the other ends of its chain); None when it asks the model."""
        if not state.config.extraction:
            return "switched off: the first ranked"
        if not shown:
            return "nothing reached"
        share = state.shares.get(shown[0].label)  # none where the scorer did not order the candidates
        if share is not None and state.sure is not None and state.sure < 1.0 and share >= state.sure:
            return f"the path scorer is sure of the first ({share:.2f} of its softmax, at least {state.sure:.2f}): it answers"
        if len({c.trail.relations for c in shown}) == 1:
            return "one relation chain: every end answers"
        if _plain_answer(state, shown[0]):
            return ("the best path goes by the relation the plan's last hop names, every topic entity reaches it and "
                    "the question sets no condition: every end of it answers")
        return None

    def skipped(self, state: WalkState, candidates: list[Candidate], shown: list[Candidate]) -> tuple[list[Trail], bool]:
        return _with_chains(state, candidates, shown[:1]), False

    def forward(self, state: WalkState, candidates: list[Candidate], shown: list[Candidate]) -> Outcome:
        labels = [c.label for c in shown]
        kept = self.choose(state, chosen="extracted_answers", candidates=labels, at_least=1, limit=state.config.answers_chosen,
                           question=state.question, candidate_paths=[c.path for c in shown], known_facts=state.facts,
                           memory_notes=state.memory)
        if not kept:  # an LM that takes no schema may still answer "none"
            why = f"{'no answer chosen' if kept == [] else 'no usable choice'}: the first ranked"
            return Outcome((_with_chains(state, candidates, shown[:1]), False), "fell_back", why)
        return Outcome((_with_chains(state, candidates, [shown[labels.index(label)] for label in kept]), True))


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


def same_chain(trail: Trail, chosen: Trail, inverse: dict[str, str], profile: KGProfile) -> bool:
    """`trail` follows the relation chain `chosen` did from the same topic entity, hop by hop by the
    same relation or its inverse (`inverse`: `KnowledgeGraph.inverse_relations`), whichever way
    (retrieved graphs point edges the way a retriever walked). So an actor's films reached
    through film.performance.film and through film.film.starring are one chain. A pair of one kind
    (location.location.contains and containedby, people.person.parents and children) relates things
    of one kind, up or down: which way it goes cannot be read here, so it is not merged."""
    if trail.topic.id != chosen.topic.id or len(trail.hops) != len(chosen.hops):
        return False
    return all(a.relation == b.relation or _inverse_kinds(a.relation, b.relation, inverse, profile)
               for a, b in zip(trail.hops, chosen.hops))


def _inverse_kinds(a: str, b: str, inverse: dict[str, str], profile: KGProfile) -> bool:
    """`a` and `b` are inverses that relate things of two kinds (the names before their last differ:
    Freebase's types; a relation with one name is its own kind)."""
    def kind(relation: str) -> tuple[str, ...]:
        parts = profile.relation_parts(relation)
        return parts[:-1] or parts

    return a in inverse and inverse[a] == inverse.get(b) and kind(a) != kind(b)


def _with_chains(state: WalkState, candidates: list[Candidate], chosen: list[Candidate]) -> list[Trail]:
    """The chosen answers' trails, each followed by the other ends of its relation chain that as
    many topic entities reach, in rank order."""
    rank = {c.label: i for i, c in enumerate(candidates)}
    topics = {c.label: c.topics for c in candidates}
    inverse = state.kg.inverse_relations() if state.config.inverse_chains else {}
    final = [c.trail for c in chosen]
    for c in chosen:
        same = [t for t in state.reached if same_chain(t, c.trail, inverse, state.kg.profile) and render.node_label(t.end) in rank
                and topics[render.node_label(t.end)] >= c.topics]
        final += sorted(same, key=lambda t: rank[render.node_label(t.end)])
    return final


def _plain_answer(state: WalkState, best: Candidate) -> bool:
    """The best candidate is reached by the relation the plan's last hop names, from every topic
    entity, and the question sets no condition to check."""
    every = len({t.label for t in state.topics})
    return (state.on_named_chain(best.trail) and best.topics == every
            and not state.conditions and not state.asked.names_values)
