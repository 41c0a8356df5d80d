"""The composed DSPy programs."""

from kgqa.programs.config import WalkConfig
from kgqa.programs.kgqa import KGQA

__all__ = ["KGQA", "WalkConfig"]
