"""The knobs of a walk, with the defaults users see."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class WalkConfig:
    """How far and how wide the program explores, and what it spends.

    depth: hops from the topic entities at most (PoG uses 4, ToG 3); also the longest plan.
    relations_per_entity: relations followed from one entity for one hop, at most.
    entities_per_relation: entities kept from one (entity, relation) step when the answer has conditions.
    beam_width: trails kept as the frontier after each depth (best scores first).
    judge: at the plan's end, ask whether the walk reached the kind of thing asked for, and go one hop
        further if not (one call per question; off by default: a plan compiled with gold hop counts is
        rarely short, and a small judge mostly says yes).
    judge_shown: reached entities shown to that judge.
    max_reflections: times the walk may resume from entities it passed, after a dead end (PoG uses 5).
    answer_paths: reasoning paths returned with the answers (best first).
    max_answers: answers returned at most (ranked by the scores of the trails that reach them).
    min_path_score: trails below this score make no answer.
    max_candidates: candidate lists longer than this are first cut by embedding similarity (PoG: 70).
    clear_similarity, clear_margin: a relation whose similarity to the hop's target is at least
        clear_similarity, and ahead of the next by clear_margin ("actor" -> starred_actors), is taken
        without asking the model; 1.0 asks the model always.
    choices_shown: candidate answers shown to the answer step of `PathKGQA` (best ranked first).
    max_llm_calls: hard cap on LLM calls for one question.
    demos_per_call: demos shown in one call at most; a step compiled with more (a pool of gold plans)
        shows the ones whose questions are nearest the question asked.
    snap_cutoff: how close (0..1, difflib ratio) a model's selection must be to a candidate to snap to it.
    """

    depth: int = 3
    relations_per_entity: int = 3
    entities_per_relation: int = 5
    beam_width: int = 8
    judge: bool = False
    judge_shown: int = 5
    max_reflections: int = 2
    answer_paths: int = 5
    max_answers: int = 50
    min_path_score: float = 0.0
    max_candidates: int = 70
    clear_similarity: float = 0.55
    clear_margin: float = 0.08
    choices_shown: int = 10
    max_llm_calls: int = 12
    demos_per_call: int = 4
    snap_cutoff: float = 0.85

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if name in {"min_path_score", "snap_cutoff", "clear_similarity", "clear_margin"}:
                if not 0.0 <= value <= 1.0:
                    raise ValueError(f"{name} must be between 0 and 1, got {value}")
            elif name == "judge":
                if not isinstance(value, bool):
                    raise ValueError(f"judge must be true or false, got {value!r}")
            elif name == "max_reflections":
                if value < 0:
                    raise ValueError(f"{name} must be >= 0, got {value}")
            elif value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")

    def to_dict(self) -> dict:
        return asdict(self)
