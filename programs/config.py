"""The knobs of a walk, with the defaults users see."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class WalkConfig:
    """How far and how wide the program explores, and what it spends.

    depth: hops from the topic entities at most (PoG uses 4, ToG 3).
    relations_per_entity: relations followed from one entity.
    entities_per_relation: entities kept from one (entity, relation) step.
    beam_width: trails kept as the frontier after each depth (best scores first).
    facts_kept: facts passed on per depth; more are filtered by the LLM (recognition memory).
    max_reflections: times the walk may resume from entities it passed (PoG uses 5).
    answer_paths: trails whose answers make the final answer (top-k by score).
    min_path_score: trails below this score make no answer.
    max_candidates: candidate lists longer than this are first cut by embedding similarity (PoG: 70).
    max_llm_calls: hard cap on LLM calls for one question.
    snap_cutoff: how close (0..1, difflib ratio) a model's selection must be to a candidate to snap to it.
    """

    depth: int = 3
    relations_per_entity: int = 3
    entities_per_relation: int = 5
    beam_width: int = 8
    facts_kept: int = 12
    max_reflections: int = 2
    answer_paths: int = 5
    min_path_score: float = 0.0
    max_candidates: int = 70
    max_llm_calls: int = 40
    snap_cutoff: float = 0.85

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if name in {"min_path_score", "snap_cutoff"}:
                if not 0.0 <= value <= 1.0:
                    raise ValueError(f"{name} must be between 0 and 1, got {value}")
            elif name == "max_reflections":
                if value < 0:
                    raise ValueError(f"{name} must be >= 0, got {value}")
            elif value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")

    def to_dict(self) -> dict:
        return asdict(self)
