"""The gold-path compile as a DSPy teleprompter: `GoldPaths(inner="bootstrap").compile(student,
trainset=...)`, as `dspy.BootstrapFewShot(...).compile(student, trainset=...)` is called.

It labels the trainset once (`optimizers.paths.label_trainset`: each question's gold relation paths,
the data's own where they hold in the program's graph, else found there from its answers), then
1. compiles the student with the `inner` teleprompter named in `TELEPROMPTERS` (its bootstrap
   teacher the gold-path teacher, `optimizers.labels.labeled_teacher`, unless a teacher LM is given);
   `inner="gold-paths"` compiles with the labels alone, with no LM call;
2. fills the named predictors' demo pools from the labels: the plan's gold plans, the topic choice's
   gold topics, path answer extraction's and answer sufficiency's gold choices (and, on request,
   every intermediate step's: `Budget.step_demos`);
3. fits the parts that learn without an LM: the entity linker, the path scorer (with how far to trust
   it, `programs.scorer.calibrate`) and the chain prior (keyed as written or by question shape, its
   neighbours weighed by similarity or sharper, whichever answers the training questions best,
   `ChainPrior.fit_best`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import dspy
from dspy.teleprompt import Teleprompter

from kgqa.evaluate.metrics import walk_metric
from kgqa.kg import KGError, KnowledgeGraph
from kgqa.optimizers.labels import gold_labels, interleave_depths, labeled_teacher, plan_demos, step_demos, topic_demos
from kgqa.optimizers.paths import LONGEST, label_trainset, prior_labels
from kgqa.optimizers.teleprompters import TELEPROMPTERS, Budget, make_teleprompter
from kgqa.programs.chains import ChainPrior
from kgqa.programs.linking import Linker
from kgqa.programs.scorer import PathScorer, calibrate
from kgqa.progress import QUIET, Progress

log = logging.getLogger(__name__)


class GoldPaths(Teleprompter):
    """Labels the trainset with gold paths, compiles with `inner`, fills the demo pools and fits the
    linker, the path scorer and the chain prior (the module's docstring says how)."""

    def __init__(self, *, inner: str = "bootstrap", metric: Callable = walk_metric, budget: Budget = Budget(),
                 teacher_lm: dspy.LM | None = None, reflection: dspy.LM | None = None, progress: Progress = QUIET) -> None:
        super().__init__()
        if inner not in TELEPROMPTERS:
            make_teleprompter(inner)  # an unknown name: the error that lists the known ones
        if TELEPROMPTERS[inner] is None:
            raise ValueError("GoldPaths needs a teleprompter to compile with, not `none`")
        self.inner, self.metric, self.budget = inner, metric, budget
        self.teacher_lm, self.reflection, self.progress = teacher_lm, reflection, progress

    def compile(self, student: dspy.Module, *, trainset: Sequence[dspy.Example], teacher: dspy.Module | None = None,
                valset: Sequence[dspy.Example] | None = None, **kwargs) -> dspy.Module:
        kg, budget, spec = getattr(student, "kg", None), self.budget, TELEPROMPTERS[self.inner]
        embedder = getattr(student, "embedder", None)
        trainset, sources = label_trainset(trainset, kg, encode=embedder.encode if embedder else None, progress=self.progress)
        log.info("gold paths for %d of %d training questions: %d the data's own that hold in the graph, %d found there "
                 "from the answers, %d none within %d relations", sources["given"] + sources["found"], len(trainset),
                 sources["given"], sources["found"], sources["none"], LONGEST)
        teacher_lm = self.teacher_lm
        labeled = teacher_lm is None and spec.labeled
        if labeled:
            teacher_lm = labeled_teacher(trainset, kg=kg)
            labeled = teacher_lm is not None
            if labeled:  # the first traces that pass become the demos: let them show every chain length
                trainset = interleave_depths(trainset)
        metric = self.progress.counting(self.metric, desc=self.inner, total=len(trainset))  # a metric call per example tried
        inner = make_teleprompter(self.inner, metric=metric, budget=budget, teacher=teacher_lm, reflection=self.reflection,
                                  train_size=len(trainset))
        compiled = spec.compile(inner, student, list(trainset), list(valset) if valset else None, budget)
        gold_teacher = teacher_lm if labeled else None
        if gold_teacher is not None and self.budget.plan_demos and hasattr(compiled, "plan"):
            # counting hops is what a small planner gets wrong, and a random search draws demo sets that
            # may show no 1-hop plan at all: the plan step gets a pool of gold plans of every length
            compiled.plan.predict.demos = plan_demos(trainset, per_depth=self.budget.plan_demos, kg=kg)
        if hasattr(compiled, "linker"):
            compiled.linker = fit_linker(compiled.linker, trainset, kg=kg, encode=compiled.embedder.encode)
        self._topic_pool(compiled, trainset, kg=kg)
        if gold_teacher is not None:
            self._walked_pools(compiled, trainset, teacher_lm=gold_teacher)
        if hasattr(compiled, "chain_prior"):  # last: the pools above were walked as a question outside the trainset is
            compiled.chain_prior = ChainPrior.fit_best(prior_labels(trainset), compiled.embedder.encode)
        compiled.path_labels = sources
        return compiled

    def _topic_pool(self, compiled: dspy.Module, trainset: list[dspy.Example], *, kg: KnowledgeGraph | None) -> None:
        """The topic choice's pool: its choices on the trainset, labeled by the gold topic entities."""
        if self.budget.topic_demos and kg is not None and hasattr(compiled, "choose_topics"):
            try:
                compiled.choose_topics.predict.demos = topic_demos(compiled, trainset, limit=self.budget.topic_demos)
            except KGError as exc:
                log.warning("the topic choice stays uncompiled: %s", exc)

    def _walked_pools(self, compiled: dspy.Module, trainset: list[dspy.Example], *, teacher_lm: dspy.LM) -> None:
        """From one walk of the trainset under the gold-path teacher (in the hand-set order):
        extraction's and sufficiency's pools and the path scorer (`optimizers.labels.gold_labels`);
        then, on request, every intermediate step's pool of the teacher's decisions."""
        budget, progress = self.budget, self.progress
        answers = budget.plan_demos if hasattr(compiled, "extract_answers") else 0
        pairs = budget.sufficiency_demos if hasattr(compiled, "check_sufficiency") else 0
        walks = budget.scorer_questions if hasattr(compiled, "path_scorer") else 0
        if answers or pairs or walks:
            gold = gold_labels(compiled, trainset, teacher=teacher_lm, answers=answers, sufficiency=pairs, scorer=walks,
                               progress=progress)
            if answers:
                compiled.extract_answers.predict.demos = gold.extraction
            if pairs:
                compiled.check_sufficiency.predict.demos = gold.sufficiency
            if walks:
                compiled.path_scorer = fit_scorer(gold.scorer, budget, progress=progress)
        if budget.step_demos:
            for name, pool in step_demos(compiled, trainset, teacher=teacher_lm, limit=budget.step_demos).items():
                if pool:
                    getattr(compiled, name).predict.demos = pool


def compile_program(
    program: dspy.Module,
    name: str,
    *,
    trainset: Sequence[dspy.Example],
    valset: Sequence[dspy.Example] | None = None,
    metric: Callable = walk_metric,
    budget: Budget = Budget(),
    teacher: dspy.LM | None = None,
    reflection: dspy.LM | None = None,
    progress: Progress = QUIET,
) -> dspy.Module:
    """`program` compiled by `GoldPaths` around the teleprompter called `name`; `none` returns it
    unchanged. `teacher`: an LM to bootstrap from instead of the gold-path teacher. `progress` draws
    the long parts: the labeling, the teleprompter's metric calls, the teacher's walks, the scorer's epochs."""
    if TELEPROMPTERS.get(name, False) is None:
        return program  # `none`: the program stays as it is
    gold = GoldPaths(inner=name, metric=metric, budget=budget, teacher_lm=teacher, reflection=reflection, progress=progress)
    return gold.compile(program, trainset=trainset, valset=valset)


def fit_scorer(walks: Sequence, budget: Budget, *, progress: Progress = QUIET) -> PathScorer:
    """The path scorer fitted on the teacher's `walks`, with how far to trust it measured on a share
    of them held out from a second fit (`programs.scorer.calibrate`)."""
    calibration = None
    if budget.scorer_held_out > 0 and budget.sure_precision <= 1:
        calibration = calibrate(walks, settings=budget.scorer, precision=budget.sure_precision, held_out=budget.scorer_held_out,
                                progress=progress)
        log.info("path scorer: its first was a gold answer on %d of %d held-out teacher walks from a share of %s",
                 calibration.right, calibration.measured, calibration.sure_at)
    scorer = PathScorer.fit(walks, settings=budget.scorer, progress=progress)
    if calibration is not None:
        scorer.calibration = calibration
    log.info("path scorer fitted on %d of %d teacher walks (%d groups) in %.0f s", scorer.report.questions, len(walks),
             scorer.report.groups, scorer.report.seconds)
    return scorer


def fit_linker(
    linker: Linker, trainset: Sequence[dspy.Example], *, kg: KnowledgeGraph | None, encode: Callable | None = None
) -> Linker:
    """The linker of questions without ids, learned from the trainset's gold topic entities over the
    program's graph (with `encode`, its names' sentence vectors too); the one given when there is no
    such graph or too few such questions."""
    if kg is None:
        return linker
    try:
        return Linker.fit(trainset, kg.name_index(encode=encode), graph=kg)
    except (ValueError, KGError) as exc:
        log.warning("the entity linker stays untrained: %s", exc)
        return linker
