"""The composed DSPy program: `KGQA`, the walk whose LLM steps are plan, relation prune, entity prune,
fact filter, memory update, answer sufficiency, path answer extraction and reflection."""

from kgqa.programs.base import KGProgram
from kgqa.programs.config import SKIPPED_IS_OFF, STEPS, SWITCHES, WalkConfig
from kgqa.programs.kgqa import KGQA

__all__ = ["KGQA", "SKIPPED_IS_OFF", "STEPS", "SWITCHES", "KGProgram", "WalkConfig"]
