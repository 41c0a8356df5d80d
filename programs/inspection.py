"""What a program's steps would be shown for a question, without answering it: the one way the
compile's labels (`optimizers.labels`) and the benches read a walk. A walk stopped before path
answer extraction (`KGQA.forward(..., answer=False)`), and the linking of a question without ids."""

from __future__ import annotations

from collections.abc import Sequence

import dspy

from kgqa.programs import render
from kgqa.programs.kgqa import KGQA
from kgqa.programs.linking import Linking
from kgqa.programs.ranking import SCORED, Ranked, scored_text
from kgqa.programs.state import WalkState
from kgqa.programs.steps.calls import demo_topic
from kgqa.programs.trace import Trace, token_totals

__all__ = ["before_extraction", "labeling_inputs", "link_question", "topic_choice_inputs"]


def before_extraction(program: KGQA, question: str, topic_entities: Sequence[str] | None = None) -> tuple[Ranked | None, WalkState | None]:
    """The walk's candidates, ranked (`Ranked`: best first, the ones extraction is shown, whether it
    has anything to decide), and its state, stopped before path answer extraction; (None, None) on
    a bad question or unknown topics. The graph's and the LM's errors are raised."""
    walk = program(question, topic_entities, answer=False)
    return walk.get("ranked"), walk.get("state")


def labeling_inputs(program: KGQA, question: str, topic_entities: Sequence[str] | None = None) -> dict | None:
    """What path answer extraction and answer sufficiency would be shown for `question` under the
    current LM, from one walk; None when the walk reaches nothing. What compiling labels with the
    gold answers (`optimizers.labels.gold_labels`):
    - `extraction`: its inputs and the candidates' labels (`candidates`);
    - `sufficiency`: the best paths it is shown once the walk has retrieved all it will
      (`best_paths`), each one's end (`ends`) and the same path cut back to the last named entity
      before its end (`cut_paths`; None where that is the topic entity): a path that ends at a
      gold answer reaches it, the same path cut back stops a hop short;
    - `scorer`: the first `SCORED` candidates in the order the walk ranks them, each as the path
      scorer reads it (`paths`) and its label (`candidates`): what the path scorer is fitted on,
      in the hand-set order while it is untrained."""
    ranked, state = before_extraction(program, question, topic_entities)
    if ranked is None or not ranked.candidates:
        return None
    asking, candidates = state.asking, ranked.candidates
    best, topic = candidates[: asking.config.sufficiency_shown], demo_topic(asking)
    phrase = asking.kg.profile.relation_phrase
    return {
        "extraction": {"candidate_paths": [c.path for c in ranked.shown], "known_facts": list(state.facts),
                       "memory_notes": list(state.memory), "candidates": [c.label for c in ranked.shown], "topic": topic},
        "sufficiency": {"best_paths": [c.path for c in best], "ends": [c.label for c in best],
                        "cut_paths": [render.plain_path(cut, phrase=phrase) if cut else None
                                      for cut in (c.trail.cut_back() for c in best)],
                        "topic": topic},
        "scorer": {"paths": [scored_text(c) for c in candidates[:SCORED]], "candidates": [c.label for c in candidates[:SCORED]]},
    }


def link_question(program: KGQA, question: str) -> tuple[Linking, Trace]:
    """A question without ids linked as the walk links it (the linker, then the topic choice),
    with the trace of it (LLM calls, the choice's outcome): what `bench.linking` scores."""
    state = program.new_state(question)
    kg = state.asking.kg
    linking = program.linker.link(question, program.names(kg), graph=kg)
    with dspy.track_usage() as usage:
        linking.linked = program.choose_topics_of(state, linking)
    state.trace.input_tokens, state.trace.output_tokens = token_totals(usage)
    return linking, state.trace


def topic_choice_inputs(program: KGQA, question: str) -> dict | None:
    """What the topic choice would be shown for `question` asked without ids (`candidate_entities`)
    and the linker's candidates behind them (`candidates`); None when it would not be asked.
    What compiling labels with the gold topic entities."""
    asking = program.new_state(question).asking
    plausible = program.linker.plausible(program.linker.link(question, program.names(asking.kg), graph=asking.kg))
    if len(plausible) <= 1:
        return None
    return {"candidate_entities": program.choose_topics.labels(asking, plausible), "candidates": plausible}
