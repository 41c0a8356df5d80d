from __future__ import annotations

import dspy
import pytest

from kgqa.lm.scripted import scripted_lm
from optimizers.teleprompters import TELEPROMPTERS, Budget, compile_program, make_teleprompter


@pytest.mark.parametrize("name", TELEPROMPTERS)
def test_every_name_builds_its_teleprompter(name):
    reflection = scripted_lm({}) if name == "gepa" else None
    with dspy.context(lm=scripted_lm({})):  # MIPROv2 wants a task LM at construction, as the CLI configures
        teleprompter = make_teleprompter(name, budget=Budget(demos=3, seed=7), reflection=reflection, train_size=10)
    expected = {
        "none": type(None), "labeled": dspy.LabeledFewShot, "bootstrap": dspy.BootstrapFewShot,
        "bootstrap-rs": dspy.BootstrapFewShotWithRandomSearch, "mipro": dspy.MIPROv2, "mipro-light": dspy.MIPROv2,
        "mipro-medium": dspy.MIPROv2, "gepa": dspy.GEPA, "simba": dspy.SIMBA,
    }[name]
    assert isinstance(teleprompter, expected)
    if name == "bootstrap":
        assert teleprompter.max_bootstrapped_demos == 3 and teleprompter.max_labeled_demos == 0
    if name.startswith("mipro-"):
        assert teleprompter.auto == name.removeprefix("mipro-") and teleprompter.seed == 7
    if name == "mipro":  # an explicit budget instead of a preset
        assert teleprompter.auto is None and teleprompter.num_candidates == 4 and teleprompter.seed == 7


def test_unknown_names_and_missing_reflection_lms_are_clear():
    with pytest.raises(ValueError, match="unknown optimizer 'copro'"):
        make_teleprompter("copro")
    with pytest.raises(ValueError, match="gepa needs a reflection LM"):
        make_teleprompter("gepa")


def test_none_returns_the_program_unchanged():
    program = dspy.Predict("question -> answer")
    assert compile_program(program, "none", trainset=[]) is program
