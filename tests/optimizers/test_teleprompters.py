from __future__ import annotations

import dspy
import pytest

from kgqa.lm.scripted import scripted_lm
from kgqa.optimizers.gold_paths import GoldPaths, compile_program
from kgqa.optimizers.teleprompters import TELEPROMPTERS, Budget, make_teleprompter


@pytest.mark.parametrize("name", TELEPROMPTERS)
def test_every_name_builds_its_teleprompter(name):
    reflection = scripted_lm({}) if name == "gepa" else None
    with dspy.context(lm=scripted_lm({})):  # MIPROv2 wants a task LM at construction, as the CLI configures
        teleprompter = make_teleprompter(name, budget=Budget(demos=3, seed=7), reflection=reflection, train_size=10)
    expected = {
        "none": type(None), "gold-paths": type(None), "labeled": dspy.LabeledFewShot, "bootstrap": dspy.BootstrapFewShot,
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


def test_none_returns_the_program_unchanged_and_gold_paths_needs_a_teleprompter_to_wrap():
    program = dspy.Predict("question -> answer")
    assert compile_program(program, "none", trainset=[]) is program
    assert isinstance(GoldPaths(), dspy.teleprompt.Teleprompter)
    with pytest.raises(ValueError, match="not `none`"):
        GoldPaths(inner="none")
    with pytest.raises(ValueError, match="unknown optimizer 'copro'"):
        GoldPaths(inner="copro")


@pytest.mark.parametrize("valset_size", [4, None])
def test_mipro_light_runs_dspy_s_preset_end_to_end_on_a_small_valset(valset_size):
    # 10 trials for one predictor (82 for KGQA's eight); under 50 validation questions, no minibatches
    capitals = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima", "Kenya": "Nairobi", "Chile": "Santiago",
                "Egypt": "Cairo", "Italy": "Rome", "Spain": "Madrid", "Ghana": "Accra", "Nepal": "Kathmandu"}
    examples = [dspy.Example(country=c, capital=a).with_inputs("country") for c, a in capitals.items()]
    proposals = iter(f"Proposed instruction {n}: name the capital city." for n in range(1000))
    lm = scripted_lm(
        {"capital": lambda inputs: {"capital": capitals.get(inputs["country"], "unknown")}},
        default=lambda inputs: {  # MIPROv2's proposer: dataset observations, then instructions
            "observations": "Countries and their capitals.", "summary": "Capitals.",
            "proposed_instruction": next(proposals),
        },
    )
    trainset, valset = (examples[:6], examples[6:]) if valset_size else (examples, None)
    with dspy.context(lm=lm):
        compiled = compile_program(
            dspy.Predict("country -> capital"), "mipro-light", trainset=trainset, valset=valset,
            metric=lambda example, prediction, trace=None: example.capital == prediction.capital,
            budget=Budget(demos=1, seed=0),
        )
        assert compiled(country="Peru").capital == "Lima"
    assert lm.scripted.count("capital") > 10 * len(valset or examples[2:])  # every trial scored the valset
    assert lm.scripted.count("proposed_instruction") >= 1  # all score 1.0, so the default may stay
