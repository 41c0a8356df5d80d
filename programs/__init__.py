"""The composed DSPy programs, by strategy: `plan` (KGQA, the plan-driven walk) and `paths` (PathKGQA:
retrieve every short path, then choose the answer)."""

from kgqa.kg import KnowledgeGraph
from kgqa.programs.base import KGProgram
from kgqa.programs.config import WalkConfig
from kgqa.programs.kgqa import KGQA
from kgqa.programs.path_choice import PathKGQA

STRATEGIES: dict[str, type[KGProgram]] = {"plan": KGQA, "paths": PathKGQA}


def make_program(strategy: str = "plan", kg: KnowledgeGraph | None = None, *, config: WalkConfig | None = None) -> KGProgram:
    """The program of the named strategy (`plan` or `paths`)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    return STRATEGIES[strategy](kg, config=config)


def strategy_name(program: KGProgram) -> str:
    """The name a program's strategy is saved under (`plan`, `paths`)."""
    return next(name for name, cls in STRATEGIES.items() if isinstance(program, cls))


__all__ = ["KGQA", "STRATEGIES", "KGProgram", "PathKGQA", "WalkConfig", "make_program", "strategy_name"]
