"""Path answer extraction: the answers the paths support, each with its reasoning path."""

from __future__ import annotations

from kgqa.kg import KGProfile
from kgqa.programs import render
from kgqa.programs.ranking import Candidate, Ranked
from kgqa.programs.state import Asking, Ledger
from kgqa.programs.steps.step import LMStep, Outcome
from kgqa.programs.trails import Trail
from kgqa.signatures import ExtractAnswers


class Extraction(LMStep):
    """The model chooses among the candidates extraction is shown (`Ranked.shown`), each shown with
    its path (and the kept facts and notes), at least one (a question has an answer, and "none of
    these" would only hand the answer to the ranking: 7 of 100 CWQ-mini test questions did that, 6
    of them with the gold answer shown); each chosen answer brings the other ends of its relation
    chain that as many topic entities reach, a relation and its inverse counted as one
    (`same_chain`). Its value: the answers' trails, and whether the model chose. Nothing to decide
    where the first answers (`settled`, worked out with the ranking); falls back to the first."""

    name, usage, signature = "extraction", "extract_answers", ExtractAnswers

    def skip(self, asking: Asking, given: Ranked) -> str | None:
        return given.settled

    def skipped(self, asking: Asking, given: Ranked) -> tuple[list[Trail], bool]:
        return _with_chains(asking, given, given.shown[:1]), False

    def forward(self, asking: Asking, ledger: Ledger, given: Ranked) -> Outcome:
        """The model's choice among the answers shown, reading their paths, the kept facts and the
        memory notes; each chosen one brings the other ends of its chain among the trails reached."""
        shown = given.shown
        labels = [c.label for c in shown]
        kept = self.choose(asking, ledger, chosen="extracted_answers", candidates=labels, at_least=1,
                           limit=asking.config.answers_chosen, question=asking.question,
                           candidate_paths=[c.path for c in shown], known_facts=list(given.facts),
                           memory_notes=list(given.notes))
        if not kept:  # an LM that takes no schema may still answer "none"
            why = f"{'no answer chosen' if kept == [] else 'no usable choice'}: the first ranked"
            return Outcome((_with_chains(asking, given, shown[:1]), False), "fell_back", why)
        return Outcome((_with_chains(asking, given, [shown[labels.index(label)] for label in kept]), True))


def settled(asking: Asking, shown: list[Candidate], *, sure: float | None) -> str | None:
    """Why extraction has nothing to decide among the answers `shown` (the first ranked then
    answers, with the other ends of its chain); None when it asks the model. `sure`: the share of
    the path scorer's softmax at which its first answers alone (none where it was fitted on too few)."""
    if not asking.config.extraction:
        return "switched off: the first ranked"
    if not shown:
        return "nothing reached"
    share = shown[0].share  # none where the scorer did not order the candidates
    if share is not None and sure is not None and sure < 1.0 and share >= sure:
        return f"the path scorer is sure of the first ({share:.2f} of its softmax, at least {sure:.2f}): it answers"
    if len({c.trail.relations for c in shown}) == 1:
        return "one relation chain: every end answers"
    if _plain_answer(asking, shown[0]):
        return ("the best path goes by the relation the plan's last hop names, every topic entity reaches it and "
                "the question sets no condition: every end of it answers")
    return None


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


def _with_chains(asking: Asking, given: Ranked, chosen: list[Candidate]) -> list[Trail]:
    """The chosen answers' trails, each followed by the other ends of its relation chain (among the
    trails reached) that as many topic entities reach, in rank order."""
    rank = {c.label: i for i, c in enumerate(given.candidates)}
    topics = {c.label: c.topics for c in given.candidates}
    kg = asking.kg
    inverse = kg.inverse_relations() if asking.config.inverse_chains else {}
    final = [c.trail for c in chosen]
    for c in chosen:
        same = [t for t in given.reached if same_chain(t, c.trail, inverse, kg.profile) and render.node_label(t.end) in rank
                and topics[render.node_label(t.end)] >= c.topics]
        final += sorted(same, key=lambda t: rank[render.node_label(t.end)])
    return final


def _plain_answer(asking: Asking, best: Candidate) -> bool:
    """The best candidate is reached by the relation the plan's last hop names, from every topic
    entity, and the question sets no condition to check."""
    return best.named and best.topics == len(asking.topic_names) and not asking.conditions and not asking.analysis.names_values
