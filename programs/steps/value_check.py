"""The value check: where the question compares a value, the answers the comparison holds for. No LLM call."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from kgqa.kg import Direction, Edge, Move
from kgqa.programs import render, values
from kgqa.programs.embedder import Embedder
from kgqa.programs.question import Comparison
from kgqa.programs.state import Asking, Ledger
from kgqa.programs.steps.step import Outcome, Step
from kgqa.programs.trails import Trail
from kgqa.programs.tuned import VALUED_ANSWERS


@dataclass(frozen=True)
class Answers:
    """The extracted answers' trails, and the edges around each entity as the walk fetched them
    (the answers' own are fetched and added)."""

    trails: list[Trail]
    relations: dict


class ValueCheck(Step):
    """The answers a value decides: where the question compares a value ("the latest founding
    date", "fewer than 15,208 undergraduates"), the answers (the extracted ones and the other ends
    of their chains) are compared by the value relation most like the question's words, and the
    ones the comparison holds for answer, best first. Where the answers have no date or number at
    all and are values themselves (the ISO codes extraction chose for "which Caribbean country has
    the smallest ISO number"), the entities their trails passed to reach them are compared and
    answer instead. No LLM call: the small model does not compare the values it is shown
    (`programs.values`). Skipped, or deciding nothing, it leaves the answers as they are."""

    name = "value_check"

    def __init__(self, embedder: Embedder) -> None:
        super().__init__()
        self.embedder = embedder

    def skip(self, asking: Asking, given: Answers) -> str | None:
        if not asking.config.value_check:
            return "switched off"
        comparison = asking.analysis.comparison
        if comparison is None:
            return "the question compares no value"
        if len(_valued(given.trails)) < _needed(comparison):
            return "fewer answers than the comparison needs"
        return None

    def skipped(self, asking: Asking, given: Answers) -> list[Trail]:
        return given.trails

    def forward(self, asking: Asking, ledger: Ledger, given: Answers) -> Outcome:
        comparison, profile = asking.analysis.comparison, asking.kg.profile
        answers, relations = given.trails, given.relations
        first = _valued(answers)
        trails = list(first.values())
        found = self._values(asking, trails, relations)
        decided, of = values.decide(comparison, found, self.embedder.similarities, profile=profile), "answers"
        valueless = not any(values.is_value(text) for pairs in found.values() for _, text in pairs)
        owners = _owners(trails) if decided is None and valueless else {}
        if len(owners) >= _needed(comparison):  # the answers are values themselves (countries' ISO codes): compare whose they are
            first, trails, of = owners, list(owners.values()), "entities the answers are values of"
            decided = values.decide(comparison, self._values(asking, trails, relations), self.embedder.similarities,
                                    profile=profile)
        if decided is None:
            return Outcome(answers, "skipped", "no value of the answers is like the comparison's words")
        kept, relation = decided
        return Outcome([first[label] for label in kept], "ran", f"{comparison.cue} by {relation}: {len(kept)} of {len(trails)} {of}")

    def _values(self, asking: Asking, trails: list[Trail], relations: dict) -> dict[str, list[tuple[str, str]]]:
        """Each answer's values, (relation, value text): its own, and those of the nameless (CVT)
        nodes around it (a term's dates, a measured number), but of the nodes its own trail came
        through only that one (not every other editor's tenure of the same magazine). Three queries at
        most: the answers' relations (those the walk has not fetched), their neighbours (with the
        relations around each, but a hub's: a fourth query), the nameless ones' values."""
        ids = {t.end.id: render.node_label(t.end) for t in trails}
        via = {t.end.id: (t.hops[-2].node.id, t.hops[-1].edge.reversed) for t in trails
               if len(t.hops) > 1 and not (t.hops[-2].node.literal or t.hops[-2].node.name)}
        kg = asking.kg
        around = kg.fill_relations(relations, ids)  # the walk's own of the entities it went on from; the ends' fetched here
        fanout = kg.follow([Move(e, edge.relation, edge.direction) for e in ids for edge in around.get(e, ())],
                                 relations=True)
        found: dict[str, list[tuple[str, str]]] = {label: [] for label in ids.values()}
        cvts: dict[str, list[str]] = defaultdict(list)  # nameless node -> the answers it is read for
        for step, nodes in fanout.items.items():
            for node in nodes:
                if node.literal or node.name:
                    found[ids[step.entity]].append((step.relation, render.node_label(node)))
                elif step.entity not in via or Edge(step.relation, step.direction) != via[step.entity][1] \
                        or node.id == via[step.entity][0]:
                    cvts[node.id].append(step.entity)
        of_cvts = kg.fill_relations(dict(fanout.around), sorted(cvts))  # a hub's moves bring no relations
        inner = kg.follow([Move(cvt, edge.relation, edge.direction) for cvt in cvts
                           for edge in of_cvts.get(cvt, ()) if edge.direction is Direction.OUT])
        for step, nodes in inner.items.items():
            read = [(step.relation, render.node_label(n)) for n in nodes if n.literal or n.name]
            for answer in dict.fromkeys(cvts[step.entity]):
                found[ids[answer]] += read
        return found


def _needed(comparison: Comparison) -> int:
    """Answers a comparison needs: one against a bound ("after 1990"), two to compare otherwise."""
    return 1 if comparison.bound is not None else 2


def _valued(answers: list[Trail]) -> dict[str, Trail]:
    """The answers a comparison reads: each entity answer once, by its first trail, `VALUED_ANSWERS` at most."""
    first: dict[str, Trail] = {}
    for trail in answers:
        first.setdefault(render.node_label(trail.end), trail)
    return dict([(label, t) for label, t in first.items() if not t.end.literal][:VALUED_ANSWERS])


def _owners(trails: list[Trail]) -> dict[str, Trail]:
    """The named entities the answers are values of, each with its trail cut there (`Trail.cut_back`):
    the last named node before each end. An answer with none has no owner."""
    owners: dict[str, Trail] = {}
    for trail in trails:
        cut = trail.cut_back()
        if cut is not None:
            owners.setdefault(render.node_label(cut.end), cut)
    return owners
