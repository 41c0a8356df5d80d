"""The walk's steps, one `dspy.Module` each (`Step`), composed by `programs.kgqa.KGQA`."""

from kgqa.programs.steps.step import Outcome, Step
from kgqa.programs.steps.value_check import ValueCheck

__all__ = ["Outcome", "Step", "ValueCheck"]
