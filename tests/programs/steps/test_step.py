"""The step wrapper (`programs.steps.step`): one place records what each step did."""

from __future__ import annotations

import pytest

from kgqa.programs import KGQA, WalkConfig
from kgqa.programs.state import Asking, Ledger
from kgqa.programs.steps import Outcome, Step


class Halve(Step):
    """A step for the test: halves a number; nothing to decide for zero; falls back on a negative one."""

    name = "halve"

    def skip(self, asking, number):
        return "zero" if number == 0 else None

    def skipped(self, asking, number):
        return number

    def forward(self, asking, ledger, number):
        if number < 0:
            return Outcome(0, "fell_back", "a negative number: zero")
        return Outcome(number / 2, "ran", f"{number} halved", traced={"facts": [f"{number} / 2"]})


def test_run_gives_the_steps_value_and_records_ran_skipped_or_fell_back_with_why(kg):
    asking, ledger, step = Asking("q?", kg, WalkConfig()), Ledger(), Halve()
    assert [step.run(asking, ledger, 8), step.run(asking, ledger, 0), step.run(asking, ledger, -3)] == [4.0, 0, 0]
    assert ledger.trace.fallbacks == 1
    assert ledger.trace.steps == [{"step": "halve", "status": "ran", "why": "8 halved"},
                                 {"step": "halve", "status": "skipped", "why": "zero"},
                                 {"step": "halve", "status": "fell_back", "why": "a negative number: zero"}]


def test_run_writes_the_trace_fields_a_step_fills(kg):
    asking, ledger, step = Asking("q?", kg, WalkConfig()), Ledger(), Halve()
    assert step.run(asking, ledger, 6) == 3.0 and ledger.trace.facts == ["6 / 2"]  # written by the wrapper, not the step
    assert step.run(asking, ledger, 0) == 0 and ledger.trace.facts == ["6 / 2"]  # skipped: no trace field
    assert [(s["status"], s["why"]) for s in ledger.trace.steps] == [("ran", "6 halved"), ("skipped", "zero")]


def test_an_outcome_has_one_of_three_statuses():
    with pytest.raises(ValueError, match="ran, skipped, fell_back"):
        Outcome(1, "done")


def test_the_program_holds_its_steps_as_modules_that_add_no_predictor(kg):
    program = KGQA(kg, config=WalkConfig())
    assert isinstance(program.value_check, Step) and program.value_check.name == "value_check"
    assert ("self.value_check", program.value_check) in program.named_sub_modules()
    assert not any(name.startswith("value_check") for name, _ in program.named_predictors())
    assert program.deepcopy().value_check.embedder is program.embedder  # shared, as the program's
