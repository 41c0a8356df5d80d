"""The walk's steps, one `dspy.Module` each (`Step`), composed by `programs.kgqa.KGQA`. A step that
asks the LM (`LMStep`) holds its one predictor and asks through the program's `LMCalls`."""

from kgqa.programs.steps.calls import LMCalls, NoLM
from kgqa.programs.steps.entity_prune import EntityPrune
from kgqa.programs.steps.extraction import Extraction
from kgqa.programs.steps.fact_filter import FactFilter
from kgqa.programs.steps.memory_update import MemoryUpdate
from kgqa.programs.steps.plan import DepthPlan, Planning
from kgqa.programs.steps.reflection import Reflection
from kgqa.programs.steps.relation_prune import RelationPrune
from kgqa.programs.steps.step import LMStep, Outcome, Step
from kgqa.programs.steps.sufficiency import Sufficiency
from kgqa.programs.steps.topic_choice import TopicChoice
from kgqa.programs.steps.value_check import ValueCheck

__all__ = ["DepthPlan", "EntityPrune", "Extraction", "FactFilter", "LMCalls", "LMStep", "MemoryUpdate", "NoLM", "Outcome",
           "Planning", "Reflection", "RelationPrune", "Step", "Sufficiency", "TopicChoice", "ValueCheck"]
