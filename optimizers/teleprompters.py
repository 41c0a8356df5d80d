"""Teleprompters by name, with their budgets as options and a fixed seed. The default metric is
`walk_metric`: Hits@1 with the gold relation path and depth as intermediate labels, so
bootstrapped demos come only from walks that were right at every step.

Every teleprompter but `none` first labels the trainset once (`optimizers.paths.label_trainset`):
each question's gold relation paths are the data's own where they hold in the program's graph, else
the chains found there from its topic entities to its answers; question-answer pairs alone compile
the whole program. Those labels feed every learned part: the gold-path teacher whose walks
bootstrap the demos, the plan step's pool of gold plans (`plan_demos` of each chain length; a walk
shows each question the few nearest it, `WalkConfig.demos_per_call`), the extraction and
sufficiency pools, the path scorer (`programs.scorer`, fine-tuned on the teacher's walks of
`Budget.scorer_questions` of it) and the chain prior (`programs.chains`). The linker of questions
without ids (`programs.linking`) is fitted to the trainset's gold topic entities.

Raw labeled demos stay off by default (`max_labeled_demos=0`): a raw training example holds only
question and answers, which no intermediate step of the walk can use as a demo.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import dspy

from kgqa.evaluate.metrics import feedback, gold_relation_paths, walk_metric
from kgqa.kg import KGError, KnowledgeGraph
from kgqa.optimizers.labels import (
    gold_labels,
    interleave_depths,
    labeled_teacher,
    plan_demos,
    step_demos,
    topic_demos,
)
from kgqa.optimizers.paths import LONGEST, label_trainset
from kgqa.programs.chains import ChainPrior
from kgqa.programs.linking import Linker
from kgqa.programs.scorer import PathScorer, ScorerSettings, calibrate
from kgqa.progress import QUIET, Progress

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Budget:
    """Options shared by the teleprompters; each uses the ones that apply to it."""

    demos: int = 2  # bootstrapped demos per predictor
    plan_demos: int = 500  # gold plans per chain length as the plan step's demo pool, where the trainset has gold
    # paths; each question is shown the WalkConfig.demos_per_call nearest in shape, so a larger pool costs only its
    # one-time encoding (MetaQA: 1,500 plans matched by shape gave 90 of 90 plans the gold length on each of two
    # samples; 150 matched by the whole question, 79 and 71)
    labeled: int = 0  # raw labeled demos per predictor
    step_demos: int = 0  # the gold-path teacher's decisions as each intermediate step's demo pool (relation and
    # entity prune, fact filter, memory update), where the trainset has gold paths. Off: with 500, CWQ-mini
    # dev Hits@1 went 0.400 -> 0.360 (two answers worse, none better) at +230 input tokens a question
    sufficiency_demos: int = 200  # answer sufficiency's demo pool, pairs of one question (its best paths reaching a gold
    # answer: sufficient; cut back a hop: short), where the trainset has gold paths
    topic_demos: int = 100  # gold topic choices as the topic choice's demo pool (questions asked without ids)
    scorer_questions: int = 1500  # training questions whose gold-path teacher walks fit the path scorer, where the
    # trainset has gold paths (0: no scorer, the hand-set order)
    scorer: ScorerSettings = ScorerSettings()  # how the path scorer is fitted
    sure_precision: float = 0.70  # the scorer's first answers without the extraction call from the least share of its
    # softmax at which it was a gold answer on at least this share of held-out training walks (`programs.scorer.
    # calibrate`; above 1: never). The local 1.5B LM's break-even: on 156 CWQ-mini dev questions outside the compile
    # sample its extraction kept a right first 0.932 of the time and rescued a wrong first 0.162, so the first should
    # answer alone where it is right more than 0.162 / (0.162 + 0.068) = 0.70 of the time
    # (bench/results/scorer-sure-dev/)
    scorer_held_out: float = 0.1  # the share of the scorer's training walks held out to measure that (0: not measured)
    rounds: int = 1
    candidates: int = 4  # candidate programs (bootstrap-rs), instruction and demo candidates (mipro), per step (simba)
    trials: int = 6  # MIPROv2 trials (`mipro`; the light/medium presets set their own)
    steps: int = 4  # SIMBA steps
    threads: int = 1
    seed: int = 0


@dataclass(frozen=True)
class Teleprompter:
    """One teleprompter kgqa knows by name: how to build it from a budget, and how to call its compile."""

    build: Callable[..., object]  # (metric, budget, teacher settings, reflection LM, train size) -> DSPy teleprompter
    compile: Callable[..., dspy.Module]  # (teleprompter, program, trainset, valset, budget) -> compiled program
    labeled: bool = False  # bootstraps from the gold-path teacher where the trainset has gold paths


def _mipro(preset: str | None) -> Teleprompter:
    def build(metric, budget, teacher_settings, teacher, reflection, train_size):
        return dspy.MIPROv2(
            metric=metric, prompt_model=teacher, auto=preset, num_candidates=None if preset else budget.candidates,
            max_bootstrapped_demos=budget.demos, max_labeled_demos=budget.labeled, num_threads=budget.threads,
            seed=budget.seed, teacher_settings=teacher_settings,
        )

    def compile_(tp, program, trainset, valset, budget):
        if preset:  # the preset sets the number of trials
            return tp.compile(program, trainset=trainset, valset=valset, seed=budget.seed)
        # An explicit small budget: `budget.trials` full evaluations of the valset, and a proposer
        # that is not shown the program's source (thousands of prompt tokens per proposal).
        return tp.compile(program, trainset=trainset, valset=valset, seed=budget.seed, num_trials=budget.trials,
                          minibatch=False, program_aware_proposer=False)

    return Teleprompter(build, compile_)


def _gepa(metric, budget, teacher_settings, teacher, reflection, train_size):
    if reflection is None:
        raise ValueError("gepa needs a reflection LM (--reflection-lm MODEL)")
    return dspy.GEPA(metric=feedback, auto="light", reflection_lm=reflection, num_threads=budget.threads, seed=budget.seed)


TELEPROMPTERS: dict[str, Teleprompter | None] = {
    "none": None,  # the program stays as it is
    "labeled": Teleprompter(
        lambda metric, budget, *_: dspy.LabeledFewShot(k=max(budget.labeled, budget.demos)),
        lambda tp, program, trainset, valset, budget: tp.compile(program, trainset=trainset),
    ),
    "bootstrap": Teleprompter(
        lambda metric, budget, teacher_settings, *_: dspy.BootstrapFewShot(
            metric=metric, max_bootstrapped_demos=budget.demos, max_labeled_demos=budget.labeled,
            max_rounds=budget.rounds, teacher_settings=teacher_settings),
        lambda tp, program, trainset, valset, budget: tp.compile(program, trainset=trainset),
        labeled=True,
    ),
    "bootstrap-rs": Teleprompter(
        lambda metric, budget, teacher_settings, *_: dspy.BootstrapFewShotWithRandomSearch(
            metric=metric, max_bootstrapped_demos=budget.demos, max_labeled_demos=budget.labeled,
            max_rounds=budget.rounds, num_candidate_programs=budget.candidates, num_threads=budget.threads,
            teacher_settings=teacher_settings),
        lambda tp, program, trainset, valset, budget: tp.compile(program, trainset=trainset, valset=valset),
        labeled=True,
    ),
    "mipro": _mipro(None),
    "mipro-light": _mipro("light"),
    "mipro-medium": _mipro("medium"),
    "gepa": Teleprompter(_gepa, lambda tp, program, trainset, valset, budget: tp.compile(
        program, trainset=trainset, valset=valset or trainset)),
    "simba": Teleprompter(
        lambda metric, budget, teacher_settings, teacher, reflection, train_size: dspy.SIMBA(
            metric=metric, bsize=max(2, min(32, train_size or 32)), num_candidates=budget.candidates,
            max_steps=budget.steps, max_demos=budget.demos, num_threads=budget.threads, prompt_model=teacher,
            teacher_settings=teacher_settings),
        lambda tp, program, trainset, valset, budget: tp.compile(program, trainset=trainset, seed=budget.seed),
    ),
}


def make_teleprompter(
    name: str,
    *,
    metric: Callable = walk_metric,
    budget: Budget = Budget(),
    teacher: dspy.LM | None = None,
    reflection: dspy.LM | None = None,
    train_size: int = 0,
):
    """The teleprompter called `name`, or None for `none` (the program stays as it is)."""
    if name not in TELEPROMPTERS:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {', '.join(TELEPROMPTERS)}")
    spec = TELEPROMPTERS[name]
    if spec is None:
        return None
    teacher_settings = {"lm": teacher} if teacher is not None else {}
    return spec.build(metric, budget, teacher_settings, teacher, reflection, train_size)


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
    """Compile `program` with the named teleprompter; `none` returns it unchanged. The bootstrap
    teleprompters take their demos from a teacher that follows the gold relation paths where the
    trainset has them (`optimizers.labels`), unless a teacher LM is given. `progress` draws the long
    parts: the labeling, the teleprompter's metric calls, the teacher's walks, the scorer's epochs."""
    kg = getattr(program, "kg", None)
    spec = TELEPROMPTERS.get(name)
    if spec is None:
        make_teleprompter(name)  # an unknown name is an error; `none` leaves the program as it is
        return program
    # One labeling of the trainset feeds every learned part: each question's gold paths, the data's
    # own where they hold in the graph, else found there from its answers.
    trainset, sources = label_trainset(trainset, kg, progress=progress)
    log.info("gold paths for %d of %d training questions: %d the data's own that hold in the graph, %d found there "
             "from the answers, %d none within %d relations", sources["given"] + sources["found"], len(trainset),
             sources["given"], sources["found"], sources["none"], LONGEST)
    labeled = False
    if teacher is None and spec.labeled:
        teacher = labeled_teacher(trainset, kg=kg)
        labeled = teacher is not None
    metric = progress.counting(metric, desc=name, total=len(trainset))  # a metric call per example tried
    teleprompter = make_teleprompter(
        name, metric=metric, budget=budget, teacher=teacher, reflection=reflection, train_size=len(trainset)
    )
    valset = list(valset) if valset else None
    if labeled:  # the first traces that pass become the demos: let them show every chain length
        trainset = interleave_depths(trainset)
    compiled = spec.compile(teleprompter, program, trainset, valset, budget)
    if labeled and budget.plan_demos and hasattr(compiled, "plan"):
        # Counting hops is what a small planner gets wrong, and a random search draws demo sets that
        # may show no 1-hop plan at all: the plan step gets a pool of gold plans of every length instead.
        compiled.plan.predict.demos = plan_demos(trainset, per_depth=budget.plan_demos, kg=kg)
    if hasattr(compiled, "linker"):
        compiled.linker = fit_linker(compiled.linker, trainset, kg=kg, encode=compiled.embedder.encode)
    if budget.topic_demos and kg is not None and hasattr(compiled, "choose_topics"):
        # the topic choice, labeled by the gold topic entities: a pool of its choices on the trainset
        try:
            compiled.choose_topics.predict.demos = topic_demos(compiled, trainset, limit=budget.topic_demos)
        except KGError as exc:
            log.warning("the topic choice stays uncompiled: %s", exc)
    answers = budget.plan_demos if hasattr(compiled, "extract_answers") else 0
    pairs = budget.sufficiency_demos if hasattr(compiled, "check_sufficiency") else 0
    walks = budget.scorer_questions if hasattr(compiled, "path_scorer") else 0
    if labeled and (answers or pairs or walks):
        # Path answer extraction, answer sufficiency and the path scorer, labeled by the gold answers
        # from one walk of the trainset under the gold-path teacher (in the hand-set order):
        # - extraction, a pool of gold choices among the candidates that walk shows (each question
        #   shown the nearest in shape);
        # - sufficiency, pairs of a question's best paths reaching a gold answer and the same paths
        #   cut back a hop short;
        # - the path scorer, fine-tuned to put a path to a gold answer above the walk's others.
        gold = gold_labels(compiled, trainset, teacher=teacher, answers=answers, sufficiency=pairs, scorer=walks, progress=progress)
        if answers:
            compiled.extract_answers.predict.demos = gold.extraction
        if pairs:
            compiled.check_sufficiency.predict.demos = gold.sufficiency
        if walks:
            compiled.path_scorer = _fit_scorer(gold.scorer, budget, progress)
    if labeled and budget.step_demos:
        # and, on request, every intermediate step, labeled by the teacher's gold-path decisions: a pool each
        for name, pool in step_demos(compiled, trainset, teacher=teacher, limit=budget.step_demos).items():
            if pool:
                getattr(compiled, name).predict.demos = pool
    if hasattr(compiled, "chain_prior"):
        # last, so the demo pools above were walked as a question outside the trainset is: without its own vote;
        # labeled by the chains that answer each question in its own graph where the row has one
        compiled.chain_prior = ChainPrior.fit((ex.question, gold_relation_paths(ex)) for ex in trainset)
    compiled.path_labels = sources
    return compiled


def _fit_scorer(walks: Sequence, budget: Budget, progress: Progress) -> PathScorer:
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
