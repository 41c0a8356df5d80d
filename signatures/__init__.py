"""One typed DSPy signature per LLM step of the walk. Docstrings are the instructions;
field names differ from step to step, because DSPy attaches demos by field-name overlap.

| step | signature | file |
|---|---|---|
| plan the hops | `Plan` | plan.py |
| choose the relation of a hop | `PruneRelations` | prune.py |
| keep the entities that meet the conditions | `PruneEntities` | prune.py |
| check the walk reached the asked kind | `Judge` | answer.py |
| choose the answer among the ends of retrieved paths | `ChooseAnswer` | answer.py |
| resume after a dead end | `Reflect` | reflect.py |
| answer without the graph (baseline) | `AnswerDirectly` | answer.py |
"""

from kgqa.signatures.answer import AnswerDirectly, ChooseAnswer, Judge
from kgqa.signatures.plan import Plan
from kgqa.signatures.prune import PruneEntities, PruneRelations
from kgqa.signatures.reflect import Reflect

__all__ = ["AnswerDirectly", "ChooseAnswer", "Judge", "Plan", "PruneEntities", "PruneRelations", "Reflect"]
