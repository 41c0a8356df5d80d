"""The knobs of a walk, with the defaults users see, and a switch per LLM step."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

# The steps a user can switch off (each a `WalkConfig` field), in the order the walk takes them.
STEPS = ("relation_prune", "entity_prune", "fact_filter", "memory_update", "sufficiency", "extraction")
# What an ablation can switch off: the LLM steps, the value check after them, and the compiled parts
# of the ranking (no call).
SWITCHES = (*STEPS, "value_check", "chain_prior", "path_scorer")
# The steps whose switch changes nothing on a walk where they were skipped every time: skipped or
# off, they keep every entity, show no facts, keep no notes, add no hop, answer the first ranked,
# and leave the extracted answers as they are.
# (Not the relation prune: its skips still choose a chain, which off leaves to similarity.)
SKIPPED_IS_OFF = ("entity_prune", "fact_filter", "memory_update", "sufficiency", "extraction", "value_check")


@dataclass(frozen=True)
class WalkConfig:
    """How far and how wide the program explores, what it spends, and which steps run.

    depth: hops from the topic entities at most (PoG uses 4, ToG 3); also the longest plan.
    min_depth: hops retrieved however short the plan, its candidates ranked after the plan's;
        None: 2 on graphs with nameless CVT nodes (Freebase's facts sit behind them, and a small
        planner counts their hops short), else 1.
    relations_per_entity: relations the relation prune keeps for one hop, at most.
    entities_per_relation: entities the entity prune keeps, at most; a frontier of more, when the
        plan lists conditions, is pruned.
    beam_width: relation chains the walk goes on from after each hop: the relation prune's choices,
        then the chains most like the question (retrieval breadth, so a poor choice loses nothing).
    max_frontier: entities the walk goes on from at most (those of the chosen chains first).
    max_reflections: times the walk may resume from entities it passed, after a dead end (PoG uses 5).
    max_extensions: hops the answer sufficiency step may add to the plan.
    sufficiency_shown: best paths shown to the answer sufficiency step.
    facts_shown, facts_kept: facts about the candidates offered to the fact filter, and kept at most.
    choices_shown: candidate answers shown to path answer extraction (best ranked first).
    choices_per_chain: of those, at most this many end one relation chain while candidates of
        other chains wait (the rest fill the places left): extraction chooses a chain as much as an
        answer, and a chain with thirty ends would hide every other one.
    answers_chosen: candidate answers extraction may choose; each brings the other ends of its chain.
    inverse_chains: where an extracted answer brings the other ends of its chain, a relation and its
        inverse (`KnowledgeGraph.inverse_relations`: film.film.starring and film.performance.film, the
        same facts stored either way round, as RoG graphs do from one question to the next) count as
        one. Off: relations as the graph names them.
    answer_paths: reasoning paths returned with the answers (best first).
    max_answers: answers returned at most.
    max_candidates: candidate lists longer than this are first cut by embedding similarity (PoG: 70).
    clear_similarity: a relation whose similarity to the hop's target is at least this, and clearly
        ahead of the next (`tuned.CLEAR_MARGIN`: "actor" -> starred_actors), is taken without asking
        the model; 1.0 asks the model always.
    max_llm_calls: hard cap on LLM calls for one question.
    demos_per_call: demos shown in one call at most; a step compiled with more (a pool of gold plans
        or answers) shows the ones whose questions are nearest the question asked.
    demo_choices: candidates a demo lists at most, its chosen ones kept (a demo shows the kind of
        choice; a list of 32 Freebase relations in it costs each call about 400 tokens).
    relation_prune, entity_prune, fact_filter, memory_update, sufficiency, extraction: the steps'
        switches. Off, a step makes no call: the relation prune leaves the choice of chains to
        similarity, the entity prune keeps every entity, the fact filter shows no facts, memory keeps
        no notes, the walk takes the planned hops only, and the first ranked candidate (with the
        other ends of its chain) answers.
    value_check: where the question compares a value ("the latest founding date", "fewer than
        15,208 undergraduates", "a CPI inflation rate of -1.61"), the answers are compared by the
        value relation most like its words, and the ones it holds for answer (`programs.values`;
        no LLM call). Off: the extracted answers as they are.
    topic_choice: for a question without ids, the model chooses its topic entities among the
        plausible candidates when the linker's choice has competitors. Off by default (the
        linker's choice): measured on CWQ-mini with the local 1.5B LM it linked fewer questions
        exactly than the compiled linker alone (0.580 against 0.720; docs/linking.md).
    topics_chosen: topic entities that choice may keep, at most.
    chain_prior: rank candidates (and fill the beam) with the compiled chain prior
        (`programs.chains`: the relation chains the nearest training questions went by), its
        weight (0..1, the share of those questions) times `tuned.PRIOR_WEIGHT` added to a
        candidate's similarity score (0..1). No effect on a program compiled without gold paths.
    path_scorer: order the candidate answers, and fill the beam, by the compiled path scorer
        (`programs.scorer`: MiniLM fine-tuned on the gold-path teacher's walks of training questions)
        instead of the hand-set order. No effect on a program compiled without one.
    scorer_sure: where the compiled path scorer gives the first candidate shown at least this share
        of its softmax over the candidates it ordered, that candidate (with the other ends of its
        chain) answers without the extraction call, and the facts and notes only extraction reads are
        not gathered. None (the default): the share the compile measured on held-out training walks
        (`programs.scorer.Calibration`; a scorer fitted on too few walks to measure never answers
        alone); 1.0: extraction always decides; 0.0: wherever the scorer ordered the candidates.
        What it saves and costs: `bench.scorer_sure`, bench/results/scorer-sure-dev/.
    """

    depth: int = 3
    min_depth: int | None = None
    relations_per_entity: int = 3
    entities_per_relation: int = 5
    beam_width: int = 8
    max_frontier: int = 70
    max_reflections: int = 2
    max_extensions: int = 1
    sufficiency_shown: int = 5
    facts_shown: int = 15
    facts_kept: int = 4
    choices_shown: int = 10
    choices_per_chain: int = 3
    answers_chosen: int = 3
    inverse_chains: bool = True
    answer_paths: int = 5
    max_answers: int = 50
    max_candidates: int = 70
    clear_similarity: float = 0.55
    max_llm_calls: int = 12
    demos_per_call: int = 4
    demo_choices: int = 10
    relation_prune: bool = True
    entity_prune: bool = True
    fact_filter: bool = True
    memory_update: bool = True
    sufficiency: bool = True
    extraction: bool = True
    value_check: bool = True
    topic_choice: bool = False
    topics_chosen: int = 3
    chain_prior: bool = True
    path_scorer: bool = True
    scorer_sure: float | None = None

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if name in SWITCHES or name in {"topic_choice", "inverse_chains"}:
                if not isinstance(value, bool):
                    raise ValueError(f"{name} must be true or false, got {value!r}")
            elif name in {"clear_similarity", "scorer_sure"} and value is not None:
                if not 0.0 <= value <= 1.0:
                    raise ValueError(f"{name} must be between 0 and 1, got {value}")
            elif name in {"min_depth", "scorer_sure"} and value is None:
                continue
            elif name in {"max_reflections", "max_extensions"}:
                if value < 0:
                    raise ValueError(f"{name} must be >= 0, got {value}")
            elif value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")

    def to_dict(self) -> dict:
        return asdict(self)

    def without(self, step: str) -> WalkConfig:
        """This config with one step (or a compiled part of the ranking) switched off: an ablation."""
        if step not in SWITCHES:
            raise ValueError(f"unknown step {step!r}; the steps are {', '.join(SWITCHES)}")
        return replace(self, **{step: False})
