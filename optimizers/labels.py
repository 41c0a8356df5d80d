"""Intermediate labels: a teacher LM that answers every step of the walk from an example's gold
relation path, so that bootstrapping records demos of right plans and right relation choices.

The gold paths are the compile's labels (`optimizers.paths`: the data's own where they hold in the
graph, else found there from the answers alone). A
small model rarely walks a whole multi-hop question right on its own, so bootstrapping with it as
teacher keeps few and mostly 1-hop demos. This teacher plans one hop per gold relation and, at
each hop, chooses the gold relation among the candidates actually offered; the walk still runs
on the real graph, and `walk_metric` still keeps only the traces that reach the gold answers by
the gold path. Labels are read at compile time only: the compiled program never sees them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import dspy

from kgqa.evaluate.metrics import gold_paths, gold_relation_paths, normalize, same_answer
from kgqa.kg import Direction, KnowledgeGraph
from kgqa.lm.scripted import scripted_lm
from kgqa.programs.inspection import labeling_inputs, topic_choice_inputs
from kgqa.programs.linking import is_topic
from kgqa.programs.question import hop_kind
from kgqa.programs.render import fact_names
from kgqa.programs.scorer import ScorerGroup
from kgqa.progress import QUIET, Progress

_HOP = re.compile(r"^hop (\d+)")
_NO_ANSWER_YET = ": no answer yet"  # the teacher's note on a named entity whose paths reached no gold answer


def teacher_path(example: dspy.Example) -> list[tuple[str, str | None]]:
    """The gold path the teacher walks, as (relation, direction) pairs: the first of the paths the
    compile labeled the example with (`optimizers.paths.label_trainset`: the data's own where they
    hold in the graph, else found there from the answers); unlabeled, the first the data gives,
    directions unknown where it does not say them; [] when there is none."""
    paths = gold_paths(example)
    return list(paths[0]) if paths else []


def gold_among(example: dspy.Example, nodes: Iterable[str]) -> bool:
    """Some node names a gold answer of `example` (names compared normalized, as `same_answer` does)."""
    golds = {normalize(answer) for answer in example.answers} - {""}
    return any(normalize(node) in golds for node in nodes)


def graph_chains(
    example: dspy.Example, *, skips: Callable[[str], bool] | None = None, longest: int = 3
) -> Iterator[dict[tuple[str, ...], set[str]]]:
    """The relation chains from the topic entities of `example` in its own `graph` (edges walked
    either way), one length at a time, 1 to `longest`: each chain with the nodes it ends at (never
    the topic entity it started from), relations `skips` names left out."""
    around: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for head, relation, tail in getattr(example, "graph", None) or ():
        if not (skips and skips(relation)):
            around[head][relation].add(tail)
            around[tail][relation].add(head)
    layers = {topic: {(): {topic}} for topic in dict.fromkeys(example.topic_entities) if topic in around}
    for _ in range(longest):
        merged: dict[tuple[str, ...], set[str]] = defaultdict(set)
        for topic, layer in layers.items():
            onward: dict[tuple[str, ...], set[str]] = defaultdict(set)
            for chain, nodes in layer.items():
                for node in nodes:
                    for relation, ends in around[node].items():
                        onward[(*chain, relation)] |= ends - {topic}
            layers[topic] = onward
            for chain, ends in onward.items():
                merged[chain] |= ends
        yield merged


def hops_from(
    example: dspy.Example, *, skips: Callable[[str], bool] | None = None, longest: int = 3
) -> dict[str, dict[str, int]]:
    """Each topic entity of `example` in its own `graph`, with every node within `longest` hops of
    it (edges walked either way, relations `skips` names left out) and how many: itself at 0."""
    around: dict[str, set[str]] = defaultdict(set)
    for head, relation, tail in getattr(example, "graph", None) or ():
        if not (skips and skips(relation)):
            around[head].add(tail)
            around[tail].add(head)
    distances: dict[str, dict[str, int]] = {}
    for topic in dict.fromkeys(example.topic_entities):
        if topic not in around:
            continue
        seen, frontier = {topic: 0}, [topic]
        for hops in range(1, longest + 1):
            frontier = [n for n in dict.fromkeys(n for node in frontier for n in around[node]) if n not in seen]
            seen.update(dict.fromkeys(frontier, hops))
        distances[topic] = seen
    return distances


def hop_targets(example: dspy.Example, path: Sequence[tuple[str, str | None]] | None = None) -> list[str]:
    """What each gold hop reaches and through which relation, as the plan step names them:
    `kind (relation words)`. MetaQA's question type names the kinds (`movie_to_director_to_movie`
    -> "director (directed by)", "movie (directed by)"); elsewhere the gold relations' last words."""
    relations = [relation for relation, _ in (path if path is not None else teacher_path(example))]
    qtype = getattr(example, "qtype", None)
    if qtype:
        kinds = [kind.replace("imdb", "imdb ").replace("tags", "tag") for kind in qtype.split("_to_")[1:]]
        if len(relations) == len(kinds):
            return [f"{kind} ({relation.replace('_', ' ')})" for kind, relation in zip(kinds, relations)]
        return kinds
    return [relation.rsplit(".", 1)[-1].replace("_", " ") for relation in relations]


def topic_kind(example: dspy.Example) -> str:
    """What the topic entity is: the first kind of MetaQA's question type; else the type a Freebase
    relation id leaves from (`film.film.directed_by` -> film) when the first hop goes out of it."""
    qtype = getattr(example, "qtype", None)
    if qtype:
        return qtype.split("_to_")[0]
    path = getattr(example, "path", None)
    if path and path[0][1] == "out" and path[0][0].count(".") >= 2:
        return path[0][0].split(".")[1].replace("_", " ")
    return "entity"


def _gold_labels(path: Sequence[tuple[str, str | None]]) -> list[list[str]]:
    """The gold relations as the walk labels them, per hop: 'r' or 'r (reverse)', either when unknown."""
    labels = {"out": lambda r: [r], "in": lambda r: [f"{r} (reverse)"], None: lambda r: [r, f"{r} (reverse)"]}
    return [labels[direction](relation) for relation, direction in path]


def planned_hops(example: dspy.Example, kg: KnowledgeGraph | None, path: Sequence[tuple[str, str | None]] | None = None) -> list[str]:
    """The gold plan as the walk counts hops: a relation into nameless (CVT) nodes and the one out
    of them are one hop, named by where the second leads. Without a graph, one hop per relation.
    `path`: the teacher's path, when the caller has it."""
    path = teacher_path(example) if path is None else path
    targets = hop_targets(example, path)
    if kg is None or not path or not kg.profile.step_through_unnamed or getattr(example, "qtype", None):
        return targets
    frontier, merged, through = list(example.topic_entities), [], False
    for target, (relation, direction) in zip(targets, path):
        found = kg.neighbours(frontier, relation, direction=Direction(direction or "out")).items.values()
        reached = [n for nodes in found for n in nodes]
        cvt = bool(reached) and all(not n.literal and not n.name for n in reached)
        if not through:
            merged.append(target)
        else:
            merged[-1] = target
        through, frontier = cvt, [n.id for n in reached if not n.literal]
    return merged


def labeled_teacher(examples: Sequence[dspy.Example], *, kg: KnowledgeGraph | None = None) -> dspy.LM | None:
    """A scripted LM that plans and chooses relations from the examples' gold paths, keeps the facts
    about their gold answers, notes which named entity reaches them, finds the evidence sufficient
    when a gold answer is among the best paths, and extracts the gold answers among the candidates
    (None if no example has a gold path)."""
    answers = {ex.question: list(ex.answers) for ex in examples}
    paths = {ex.question: teacher_path(ex) for ex in examples}
    gold = {ex.question: (planned_hops(ex, kg, paths[ex.question]), _gold_labels(paths[ex.question]))
            for ex in examples if paths[ex.question]}
    kinds = {ex.question: topic_kind(ex) for ex in examples}
    if not gold:
        return None

    def plan(inputs):
        targets, _ = gold.get(inputs["question"], ([], []))
        targets = targets or [inputs["question"]]
        return {"topic_kind": kinds.get(inputs["question"], "entity"), "answer_kind": hop_kind(targets[-1]), "hop_targets": targets,
                "answer_constraints": []}

    def relations(inputs):
        targets, labels = gold.get(inputs["question"], ([], []))
        offered = inputs["candidate_relations"]
        match = _HOP.match(inputs.get("hop", ""))
        hop = int(match.group(1)) if match else 0
        if len(targets) == len(labels) and 1 <= hop <= len(labels) and " -> " not in " ".join(offered):
            return {"relations_to_follow": [r for r in offered if r in labels[hop - 1]][:1]}
        wanted = {label for hop_labels in labels for label in hop_labels}  # through CVT nodes: any gold relation
        return {"relations_to_follow": [r for r in offered if set(r.split(" -> ")) <= wanted][:1]}

    def facts(inputs):  # facts about a gold answer
        gold = answers.get(inputs["question"], [])
        return {"relevant_facts": [f for f in inputs["candidate_facts"] if any(same_answer(fact_names(f)[0], g) for g in gold)][:2]}

    def memory(inputs):  # per named entity, the gold answers its paths reached
        gold = answers.get(inputs["question"], [])
        notes: dict[str, list[str]] = {}
        for path in inputs["new_evidence"]:
            start, end = path.split(" -> ", 1)[0], path.rsplit(" -> ", 1)[-1]
            found = notes.setdefault(start, [])
            if any(same_answer(end, g) for g in gold) and end not in found:
                found.append(end)
        return {"memory_notes": [f"{start} leads to {', '.join(found)}" if found else f"{start}{_NO_ANSWER_YET}"
                                 for start, found in notes.items()]}

    return scripted_lm({
        "topic_kind": plan,
        "relations_to_follow": relations,
        "entities_to_keep": lambda i: {"entities_to_keep": i["candidate_entities"]},
        "relevant_facts": facts,
        "memory_notes": memory,
        "evidence_sufficient": lambda i: {"evidence_sufficient": bool(_gold_among(i["best_paths"], answers.get(i["question"], [])))},
        "entities_to_resume": lambda i: {"entities_to_resume": []},
        "extracted_answers": lambda i: {"extracted_answers": _gold_among(i["candidate_paths"], answers.get(i["question"], []))},
    })


def _gold_among(paths: Sequence[str], answers: Sequence[str]) -> list[str]:
    """The first candidate answer (the end of a candidate path) that is a gold answer."""
    ends = [path.rsplit(" -> ", 1)[-1] for path in paths]
    return [end for end in ends if any(same_answer(end, gold) for gold in answers)][:1]


@dataclass
class GoldLabels:
    """What one walk of each training question under the gold-path teacher labels with its gold answers."""

    extraction: list[dspy.Example] = field(default_factory=list)  # path answer extraction's demo pool
    sufficiency: list[dspy.Example] = field(default_factory=list)  # answer sufficiency's, in pairs
    scorer: list[ScorerGroup] = field(default_factory=list)  # the path scorer's training walks


def gold_labels(
    program, examples: Sequence[dspy.Example], *, teacher: dspy.LM, answers: int, sufficiency: int, scorer: int = 0,
    progress: Progress = QUIET,
) -> GoldLabels:
    """Gold answers as demos of path answer extraction (up to `answers`) and of answer sufficiency
    (up to `sufficiency`, in pairs of one question), and as the path scorer's training walks (up to
    `scorer`), from one walk of each example by `program` under the gold-path `teacher`
    (`programs.inspection.labeling_inputs`), until all three are full.
    - Extraction: where the gold answer is among the candidates extraction is shown (two or more),
      the question, what it is shown and the gold candidate chosen. Questions whose gold answer the
      retrieval misses make no demo.
    - Sufficiency: where a gold answer ends one of the best paths sufficiency is shown, those best
      paths labeled sufficient, and the paths to its gold answers cut back to the named entity before
      the answer labeled one hop short (where no cut path ends at a gold answer); no notes (the
      teacher's would name the gold answers). The teacher's own walks reach the gold answers, so the
      verdicts bootstrapping records are all "sufficient" (14 of 14 on 300 CWQ-mini questions:
      1e132b4:bench/results/step-pools-cwq-dev/), and uncompiled the model said "sufficient" on 77 of 79
      CWQ-mini calls (1e132b4:bench/results/sufficiency-pairs-cwq/).
    - Scorer: every walk that reaches candidates, their paths in the walk's order and which end at
      a gold answer (`programs.scorer.PathScorer.fit` keeps those with a gold candidate and another).
    One walk feeds all three (a walk for each pool made a 1,500-row CWQ-mini compile 375 s, not 332 s)."""
    labels = GoldLabels()
    with dspy.context(lm=teacher):
        for ex in progress(examples, desc="teacher walks"):
            wants_answer, wants_pair = len(labels.extraction) < answers, len(labels.sufficiency) + 2 <= sufficiency
            wants_walk = len(labels.scorer) < scorer
            if not (wants_answer or wants_pair or wants_walk):
                break
            shown = labeling_inputs(program, ex.question, list(ex.topic_entities) or None)
            if shown is None:
                continue
            if wants_answer:
                labels.extraction += _extraction_demo(ex, shown["extraction"])
            if wants_pair:
                labels.sufficiency += _sufficiency_pair(ex, shown["sufficiency"])
            if wants_walk and shown["scorer"]["paths"]:
                gold = [any(same_answer(c, answer) for answer in ex.answers) for c in shown["scorer"]["candidates"]]
                labels.scorer.append(ScorerGroup(ex.question, shown["scorer"]["paths"], gold))
    return labels


def _extraction_demo(ex: dspy.Example, shown: dict) -> list[dspy.Example]:
    """The gold candidate chosen among what extraction is shown; none where fewer than two
    candidates are shown or none is a gold answer."""
    gold = [c for c in shown["candidates"] if any(same_answer(c, answer) for answer in ex.answers)][:1]
    if len(shown["candidates"]) < 2 or not gold:
        return []
    return [dspy.Example(question=ex.question, topic=shown["topic"], candidate_paths=shown["candidate_paths"],
                         known_facts=shown["known_facts"], memory_notes=shown["memory_notes"],
                         extracted_answers=gold).with_inputs("question", "candidate_paths", "known_facts", "memory_notes")]


def _sufficiency_pair(ex: dspy.Example, shown: dict) -> list[dspy.Example]:
    """The best paths labeled sufficient and the paths to the gold answers cut back a hop labeled
    short; none where no best path ends at a gold answer, or a cut path does too."""
    gold = [i for i, end in enumerate(shown["ends"]) if any(same_answer(end, answer) for answer in ex.answers)]
    short = list(dict.fromkeys(shown["cut_paths"][i] for i in gold if shown["cut_paths"][i]))
    if not short or _gold_among(short, ex.answers):
        return []
    return [dspy.Example(question=ex.question, topic=shown["topic"], memory_notes=[], best_paths=paths,
                         evidence_sufficient=verdict).with_inputs("question", "memory_notes", "best_paths")
            for paths, verdict in ((shown["best_paths"], True), (short, False))]


# The intermediate steps whose demos are the teacher's own decisions on the training questions
# (the plan, sufficiency, extraction and the topic choice have pools of their own).
STEP_POOLS = ("prune_relations", "prune_entities", "filter_facts", "update_memory")


def step_demos(program, examples: Sequence[dspy.Example], *, teacher: dspy.LM, limit: int) -> dict[str, list[dspy.Example]]:
    """The gold-path `teacher`'s decisions as demos of the intermediate steps (`STEP_POOLS`): the
    first `limit` examples walked by `program` under the teacher (a step that never runs does not
    keep compiling going), every call of those steps kept with its inputs and the teacher's labeled
    output (the gold relation, the facts about a gold answer, the notes on which named entity
    reaches one), up to `limit` per step, each with the example's
    topic names for matching by question shape. A call whose label is empty (no gold relation
    offered, no fact about a gold answer, no entity reached one) makes no demo: a pool of those
    would teach choosing nothing."""
    names = {id(getattr(program, name).predict): name for name in STEP_POOLS if hasattr(program, name)}
    pools: dict[str, list[dspy.Example]] = {name: [] for name in names.values()}
    for ex in examples[:limit]:
        with dspy.context(lm=teacher, trace=[]):
            prediction = program(question=ex.question, topic_entities=list(ex.topic_entities) or None)
            calls = list(dspy.settings.trace)
        topic = ", ".join(prediction.trace.topic_names)
        for predictor, inputs, output in calls:
            name = names.get(id(predictor))
            if name is None or len(pools[name]) >= limit:
                continue
            labels = {field: output.get(field) for field in predictor.signature.output_fields}
            if _informative(labels):
                pools[name].append(dspy.Example(**inputs, **labels, topic=topic).with_inputs(*inputs))
    return pools


def _informative(labels: dict) -> bool:
    """A labeled output worth showing: a choice or notes that found something."""
    return any(isinstance(value, list) and value and not all(str(v).endswith(_NO_ANSWER_YET) for v in value)
               for value in labels.values())


def topic_demos(program, examples: Sequence[dspy.Example], *, limit: int) -> list[dspy.Example]:
    """Gold topic entities as demos of the topic choice: for each example (up to `limit` demos)
    whose question, asked without ids (brackets removed), would have its topic entities chosen among
    plausible candidates, the candidates shown and the gold ones among them (by id or name).
    Questions whose gold topics are not among the plausible candidates make no demo."""
    demos = []
    for ex in examples:
        if len(demos) >= limit:
            break
        gold = {*(getattr(ex, "topic_entities", None) or ()), *(getattr(ex, "topic_names", None) or ())}
        question = ex.question.replace("[", "").replace("]", "")
        shown = topic_choice_inputs(program, question) if gold else None
        if not shown:
            continue
        meant = [label for label, c in zip(shown["candidate_entities"], shown["candidates"]) if is_topic(c, gold)]
        if meant:
            demos.append(dspy.Example(question=question, candidate_entities=shown["candidate_entities"],
                                      entities_meant=meant).with_inputs("question", "candidate_entities"))
    return demos


def interleave_depths(examples: Sequence[dspy.Example]) -> list[dspy.Example]:
    """The examples reordered so gold depths alternate (1, 2, 3, 1, 2, 3, ...), each depth keeping
    its order; unlabeled ones last. Bootstrapping keeps the first traces that pass, so every
    predictor's demos then show every chain length, the plan's hop counts above all."""
    by_depth: dict[int, list[dspy.Example]] = {}
    for ex in examples:
        paths = gold_relation_paths(ex)
        by_depth.setdefault(len(paths[0]) if paths else 0, []).append(ex)
    unlabeled = by_depth.pop(0, [])
    queues = [list(v) for _, v in sorted(by_depth.items())]
    ordered = [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]
    return ordered + unlabeled


def plan_demos(examples: Sequence[dspy.Example], *, per_depth: int, kg: KnowledgeGraph | None = None) -> list[dspy.Example]:
    """Gold plans as demos of the plan step: `per_depth` for each chain length the examples have,
    taken in their order and alternating lengths (1, 2, 3, 1, 2, 3), so the planner is shown
    every hop count it must tell apart, whatever a random search drew for the other steps."""
    by_depth: dict[int, list[dspy.Example]] = {}
    for ex in examples:
        targets = planned_hops(ex, kg)
        if targets:
            topic = ", ".join(getattr(ex, "topic_names", None) or ex.topic_entities)
            demo = dspy.Example(question=ex.question, topic=topic, topic_kind=topic_kind(ex), answer_kind=hop_kind(targets[-1]),
                                hop_targets=targets, answer_constraints=[])
            by_depth.setdefault(len(targets), []).append(demo)
    return [demos[i] for i in range(per_depth) for _, demos in sorted(by_depth.items()) if i < len(demos)]
