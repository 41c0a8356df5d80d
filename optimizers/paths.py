"""Gold relation paths for the training questions, from their answers: what every learned part is
labeled by (the teacher's walks, the path scorer, extraction and sufficiency pools, the plan and
relation-prune demos, the chain prior).

A question's paths are the data's own where it gives some that hold in the program's graph (the
demo's `path`, MetaQA's `qtype`, RoG's `ground_paths`, checked by walking them); else they are
found there: every chain of at most `longest` relations from its topic entities is walked, one
length at a time (`kg.paths.chains_from`: one query per frontier, as the walk reads the graph), and
the chains whose ends best match the gold answers are kept (F1 of the ends against the answers, so
a chain that reaches every answer and little else beats one that reaches one answer among
hundreds), of any length: shorter first. Labels are read at compile time only: the compiled
program never sees them.

Several chains can fit a question's answers equally well: "who wrote [Rope]" is answered exactly
by `written_by` and by `directed_by` where the film's writer also directed it, and "the films
written by the writer of [X]" by X's own `directed_by` where the writer wrote one other film.
Which goes first (the one the teacher walks) is then the trainset's to say: the training questions
worded most like it, whoever they ask about (their topic names blanked out,
`programs.question.question_shape`, as plan demos are matched), vote as the compiled chain prior
votes at answer time (`programs.chains.ChainPrior`), first among the shortest tied chains, then
for a longer one where more of them were answered by it (`break_ties`). With no encoder to find
those neighbours, ties go by length, then relation name. On 1,500 MetaQA training questions with
`qtype` removed, the first path is MetaQA's own (relations and directions) on 1,484 (1,285 with
ties by name; seed 0's compile sample); on
CWQ-mini, where a lone answer in a small graph is reached by dozens of three-relation detours, the
longer chain goes first on 10 of 1,500 (`bench.path_labels`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import dspy
import numpy as np

from kgqa.evaluate.metrics import gold_paths, gold_relation_paths, normalize
from kgqa.kg import Direction, KnowledgeGraph, Node
from kgqa.kg.errors import KGError
from kgqa.kg.paths import Chain, chains_from, walk
from kgqa.programs.chains import ChainPrior
from kgqa.programs.question import question_shape
from kgqa.progress import QUIET, Progress

log = logging.getLogger(__name__)

Path = tuple[tuple[str, str | None], ...]  # (relation, "out" | "in") per hop; None: unchecked, either way
SOURCES = ("given", "found", "none")  # where a question's paths came from
LONGEST = 3  # relations in a found path at most


@dataclass(frozen=True)
class PathLabel:
    """One question's gold paths, best first, and where they came from (`SOURCES`); the first `tied`
    of them fit its answers equally well."""

    paths: tuple[Path, ...]
    source: str
    tied: int = 1


def label_paths(example: dspy.Example, kg: KnowledgeGraph | None, *, longest: int = LONGEST) -> PathLabel:
    """The gold paths of `example`: those the data gives that reach a gold answer in `kg`, else the
    best chains found in `kg` from its topic entities to its answers; without a graph, the data's
    own as they are (a direction the data does not say stays None: either way)."""
    given = gold_paths(example)
    if kg is None:
        return PathLabel(tuple(tuple(map(tuple, path)) for path in given), "given" if given else "none")
    topics, answers = list(getattr(example, "topic_entities", None) or ()), list(example.answers)
    holding = _holding(kg, topics, given, answers)
    if holding:
        return PathLabel(holding, "given")
    found = _found(kg, topics, answers, longest=longest)
    if not found:
        return PathLabel((), "none", 0)
    return PathLabel(tuple(path for path, _ in found), "found", sum(f1 == found[0][1] for _, f1 in found))


def find_paths(kg: KnowledgeGraph, topics: Sequence[str], answers: Iterable[str], *, longest: int = LONGEST) -> tuple[Path, ...]:
    """The chains from `topics` whose ends best match `answers` (the F1 of their ends' names), of
    any length up to `longest`, shorter first, then every other chain of the first one's length
    that reaches a gold answer, best first; () when no chain reaches one."""
    return tuple(path for path, _ in _found(kg, topics, answers, longest=longest))


def _found(kg: KnowledgeGraph, topics: Sequence[str], answers: Iterable[str], *, longest: int) -> tuple[tuple[Path, float], ...]:
    """`find_paths`, each path with its F1: the chains that fit best, of whatever length (shorter
    first, then by name), then the others of the first one's length, best first."""
    golds = {normalize(a) for a in answers} - {""}
    if not topics or not golds:
        return ()
    fits: dict[Chain, float] = {}
    try:
        for ends in chains_from(kg, topics, longest=longest):
            fits.update((chain, f1) for chain, nodes in ends.items() if (f1 := _f1(nodes, golds)) > 0)
    except KGError as exc:  # an unknown topic id, an endpoint that refuses: this question teaches nothing
        log.warning("no gold paths searched from %s: %s", topics, exc)
        return ()
    if not fits:
        return ()
    best = max(fits.values())
    tied = sorted((_path(chain) for chain, f1 in fits.items() if f1 == best), key=lambda path: (len(path), path))
    rest = sorted(((_path(chain), f1) for chain, f1 in fits.items() if f1 < best and len(chain) == len(tied[0])),
                  key=lambda item: (-item[1], item[0]))
    return tuple((path, best) for path in tied) + tuple(rest)


def label_trainset(
    examples: Sequence[dspy.Example], kg: KnowledgeGraph | None, *, longest: int = LONGEST,
    encode: Callable | None = None, progress: Progress = QUIET,
) -> tuple[list[dspy.Example], dict[str, int]]:
    """Each example with its gold paths (`teacher_paths`, best first, `_taught`; [] where none), how
    many of them fit its answers best (`best_paths`: all given ones; of found ones, those that tie
    with the first) and their source (`path_source`), and how many came from each source. With
    `encode` (sentence vectors), paths that tie go in the order the training questions worded most
    like it vote for (`break_ties`)."""
    labels, counts = [], Counter({source: 0 for source in SOURCES})
    for ex in progress(examples, desc="gold paths"):
        label = label_paths(ex, kg, longest=longest)
        counts[label.source] += 1
        labels.append(label)
    if encode is not None and any(label.tied > 1 for label in labels):
        labels = break_ties(question_shapes(examples), labels, encode)
    labeled = [ex.copy(teacher_paths=[[list(hop) for hop in path] for path in _taught(label)], best_paths=_best(label),
                       path_source=label.source) for ex, label in zip(examples, labels)]
    return labeled, dict(counts)


def prior_labels(examples: Sequence[dspy.Example]) -> list[tuple[str, list[str], list[list[str]]]]:
    """What the chain prior is fitted on (`ChainPrior.fit_best`, `fit_keyed`): each labeled example's
    question, topic names and best-fitting relation paths."""
    return [(ex.question, topic_names(ex), best_relation_paths(ex)) for ex in examples]


def best_relation_paths(example: dspy.Example) -> list[list[str]]:
    """The relation ids of the example's gold paths that fit its answers best (`best_paths` of them,
    where it was labeled by `label_trainset`): what the chain prior is fitted on. A found label also
    teaches the chains of its first path's length that fit less well (on MetaQA, "[X]'s writer's
    films starred who" also reaches some answers by `has_tags`, a film's tags naming its actors):
    voting for those too split the prior between them."""
    return gold_relation_paths(example)[: getattr(example, "best_paths", None)]


def break_ties(questions: Sequence[str], labels: Sequence[PathLabel], encode: Callable) -> list[PathLabel]:
    """`labels` with each question's tied paths reordered by the vote of its nearest training
    questions (best given as `question_shape`s), in two rounds. First among the shortest tied paths:
    a chain prior fitted on every question's shortest tied paths (`ChainPrior`), asked with the
    question; the question's own vote goes to each of its tied paths alike. Then across lengths: a
    longer tied path goes first where more of the neighbours' first paths (after the first round)
    are it than are the first round's choice, as where a writer wrote one film and "the films
    written by the writer of [X]" is answered by X's own `directed_by`. Equal votes keep the order
    (shorter, then by name)."""
    encode = _remembering(encode)  # both rounds' priors hold the same questions: each is encoded once
    shortest = [label.paths[: _shortest_tied(label)] for label in labels]
    prior = ChainPrior.fit(((q, [_relations(path) for path in paths]) for q, paths in zip(questions, shortest)), key="shape")
    firsts = []
    for question, label, paths in zip(questions, labels, shortest):
        if len(paths) > 1:
            votes = prior.votes(question, encode)
            head = sorted(paths, key=lambda path: -votes.chain(_relations(path)))
            label = PathLabel((*head, *label.paths[len(paths):]), label.source, label.tied)
        firsts.append(label)
    prior = ChainPrior.fit(((q, [_relations(label.paths[0])] if label.paths else []) for q, label in zip(questions, firsts)),
                           key="shape")
    broken = []
    for question, label, paths in zip(questions, firsts, shortest):
        if label.tied > len(paths):
            votes = prior.votes(question, encode)
            tied = label.paths[: label.tied]
            first = max(tied, key=lambda path: votes.chain(_relations(path)))  # the first of equals: the first round's
            if first != tied[0]:
                label = PathLabel((first, *(path for path in label.paths if path != first)), label.source, label.tied)
        broken.append(label)
    return broken


def _remembering(encode: Callable) -> Callable:
    """`encode`, each text's vector kept once made."""
    vectors: dict[str, np.ndarray] = {}

    def remembered(texts: Sequence[str]) -> np.ndarray:
        missing = [text for text in dict.fromkeys(texts) if text not in vectors]
        if missing:
            vectors.update(zip(missing, encode(missing)))
        return np.stack([vectors[text] for text in texts])

    return remembered


def _shortest_tied(label: PathLabel) -> int:
    """How many of `label`'s tied paths have the first one's length."""
    return sum(len(path) == len(label.paths[0]) for path in label.paths[: label.tied])


def _taught(label: PathLabel) -> tuple[Path, ...]:
    """The paths a label teaches: the given ones that hold; of found ones, the first and the others
    of its length (a chain of another length that fits as well is mostly a detour to the same
    answers: on CWQ-mini's small graphs a lone answer is reached by dozens of three-relation chains)."""
    if label.source != "found":
        return label.paths
    return tuple(path for path in label.paths if len(path) == len(label.paths[0]))


def _best(label: PathLabel) -> int:
    """How many of the paths `_taught(label)` gives fit the answers best: every given one; of found
    ones, those that tie with the first (they lead the ones of its length)."""
    if label.source != "found":
        return len(label.paths)
    return sum(len(path) == len(label.paths[0]) for path in label.paths[: label.tied])


def _relations(path: Path) -> list[str]:
    return [relation for relation, _ in path]


def question_shapes(examples: Sequence[dspy.Example]) -> list[str]:
    """Each question with its topic names blanked out, as the plan's demos are matched (`topic_names`,
    which every loader fills, else the topic entities)."""
    return [question_shape(ex.question, topic_names(ex)) for ex in examples]


def topic_names(example: dspy.Example) -> list[str]:
    """The names of an example's topic entities (`topic_names`, which every loader fills, else the topic entities)."""
    return list(getattr(example, "topic_names", None) or getattr(example, "topic_entities", None) or ())


def _holding(kg: KnowledgeGraph, topics: list[str], given: list[list[tuple[str, str | None]]], answers: list[str]) -> tuple[Path, ...]:
    """The given paths that lead from a topic entity to a gold answer in `kg`, shortest first; a
    relation without a direction is walked the way that reaches something (either, in RoG's rows)."""
    golds = {normalize(a) for a in answers} - {""}
    holding = []
    for path in sorted(given, key=len):
        try:
            walked = _walked(kg, topics, path, golds)
        except KGError:  # a relation id the graph's profile refuses: it does not hold here
            walked = None
        if walked and walked not in holding:
            holding.append(walked)
    return tuple(holding)


def _walked(kg: KnowledgeGraph, topics: list[str], path: list[tuple[str, str | None]], golds: set[str]) -> Path | None:
    frontier: list[str] = list(topics)
    walked: list[tuple[str, str]] = []
    reached: list[Node] = []
    for relation, direction in path:
        ways = [Direction(direction)] if direction else [Direction.OUT, Direction.IN]
        for way in ways:
            reached = walk(kg, frontier, [(relation, way)]) if frontier else []
            if reached:
                walked.append((relation, way.value))
                break
        if not reached:
            return None
        frontier = [n.id for n in reached if not n.literal]
    return tuple(walked) if _f1(set(reached), golds) > 0 else None


def _f1(nodes: set[Node], golds: set[str]) -> float:
    """How well the names of `nodes` match the gold answers: F1 of the two sets, normalized."""
    names = {normalize(n.label) for n in nodes} - {""}
    hits = len(names & golds)
    return 0.0 if not hits else 2 * hits / (len(names) + len(golds))


def _path(chain: Chain) -> Path:
    return tuple((edge.relation, edge.direction.value) for edge in chain)
