"""One typed DSPy signature per LLM step of the walk. Docstrings are the instructions;
field names differ from step to step, because DSPy attaches demos by field-name overlap.

| step | signature | file |
|---|---|---|
| plan the hops (decompose) | `Plan` | plan.py |
| relation prune | `PruneRelations` | prune.py |
| entity prune | `PruneEntities` | prune.py |
| fact filter | `FilterFacts` | facts.py |
| memory update | `UpdateMemory` | memory.py |
| answer sufficiency | `CheckSufficiency` | answer.py |
| path answer extraction | `ExtractAnswers` | answer.py |
| resume after a dead end (reflection) | `Reflect` | reflect.py |
| the topic entities of a question without ids, among plausible ones | `ChooseTopicEntities` | link.py |
| answer without the graph (baseline) | `AnswerDirectly` | answer.py |
"""

from kgqa.signatures.answer import AnswerDirectly, CheckSufficiency, ExtractAnswers
from kgqa.signatures.facts import FilterFacts
from kgqa.signatures.link import ChooseTopicEntities
from kgqa.signatures.memory import UpdateMemory
from kgqa.signatures.plan import Plan
from kgqa.signatures.prune import PruneEntities, PruneRelations
from kgqa.signatures.reflect import Reflect

__all__ = ["AnswerDirectly", "CheckSufficiency", "ChooseTopicEntities", "ExtractAnswers", "FilterFacts", "Plan", "PruneEntities", "PruneRelations",
           "Reflect", "UpdateMemory"]
