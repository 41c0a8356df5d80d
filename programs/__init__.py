"""The composed DSPy programs."""

from programs.config import WalkConfig
from programs.kgqa import KGQA

__all__ = ["KGQA", "WalkConfig"]
