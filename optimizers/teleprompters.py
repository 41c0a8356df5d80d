"""DSPy's teleprompters by name (`kgqa compile --optimizer NAME`), with their budgets as options and
a fixed seed. Each compiles inside `optimizers.gold_paths.GoldPaths`, which labels the trainset with
gold paths first and fills the pools and fits the learned parts after; `gold-paths` compiles with
those labels alone, with no LM call. The default metric is `walk_metric`: Hits@1 with the gold
relation path and depth as intermediate labels, so bootstrapped demos come only from walks that were
right at every step.

Raw labeled demos stay off by default (`max_labeled_demos=0`): a raw training example holds only
question and answers, which no intermediate step of the walk can use as a demo.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import dspy

from kgqa.evaluate.metrics import feedback, walk_metric
from kgqa.programs.scorer import ScorerSettings

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
class TeleprompterSpec:
    """One teleprompter kgqa knows by name: how to build it from a budget, and how to call its compile."""

    build: Callable[..., object]  # (metric, budget, teacher settings, reflection LM, train size) -> DSPy teleprompter
    compile: Callable[..., dspy.Module]  # (teleprompter, program, trainset, valset, budget) -> compiled program
    labeled: bool = False  # bootstraps from the gold-path teacher where the trainset has gold paths


def _mipro(preset: str | None) -> TeleprompterSpec:
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

    return TeleprompterSpec(build, compile_)


def _gepa(metric, budget, teacher_settings, teacher, reflection, train_size):
    if reflection is None:
        raise ValueError("gepa needs a reflection LM (--reflection-lm MODEL)")
    return dspy.GEPA(metric=feedback, auto="light", reflection_lm=reflection, num_threads=budget.threads, seed=budget.seed)


TELEPROMPTERS: dict[str, TeleprompterSpec | None] = {
    "none": None,  # the program stays as it is
    "gold-paths": TeleprompterSpec(  # the labels alone: pools and learned parts, no LM call
        lambda *_: None, lambda tp, program, trainset, valset, budget: program.reset_copy(), labeled=True),
    "labeled": TeleprompterSpec(
        lambda metric, budget, *_: dspy.LabeledFewShot(k=max(budget.labeled, budget.demos)),
        lambda tp, program, trainset, valset, budget: tp.compile(program, trainset=trainset),
    ),
    "bootstrap": TeleprompterSpec(
        lambda metric, budget, teacher_settings, *_: dspy.BootstrapFewShot(
            metric=metric, max_bootstrapped_demos=budget.demos, max_labeled_demos=budget.labeled,
            max_rounds=budget.rounds, teacher_settings=teacher_settings),
        lambda tp, program, trainset, valset, budget: tp.compile(program, trainset=trainset),
        labeled=True,
    ),
    "bootstrap-rs": TeleprompterSpec(
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
    "gepa": TeleprompterSpec(_gepa, lambda tp, program, trainset, valset, budget: tp.compile(
        program, trainset=trainset, valset=valset or trainset)),
    "simba": TeleprompterSpec(
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
