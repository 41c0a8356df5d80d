"""One typed DSPy signature per LLM step of the walk. Docstrings are the instructions;
field names differ from step to step, because DSPy attaches demos by field-name overlap."""

from signatures.answer import AnswerDirectly, ExtractPathAnswer, JudgeSufficiency
from signatures.decompose import Decompose
from signatures.filter import FilterFacts
from signatures.memory import UpdateMemory
from signatures.prune import PruneEntities, PruneRelations
from signatures.reflect import Reflect

__all__ = [
    "AnswerDirectly",
    "Decompose",
    "ExtractPathAnswer",
    "FilterFacts",
    "JudgeSufficiency",
    "PruneEntities",
    "PruneRelations",
    "Reflect",
    "UpdateMemory",
]
