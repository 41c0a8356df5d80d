"""The compact chat adapter: ChatAdapter's prompts and parsing, without the per-field notes."""

from __future__ import annotations

import dspy

from kgqa.lm.adapter import CompactChatAdapter
from kgqa.lm.scripted import scripted_lm
from signatures import JudgeSufficiency, PruneRelations


def messages(adapter, signature, **inputs):
    return adapter.format(signature, demos=[], inputs=inputs)


def test_the_structure_has_placeholders_and_no_notes():
    inputs = {"question": "q", "memory_notes": ["unknown"], "known_facts": ["a | r | b"]}
    compact = messages(CompactChatAdapter(), JudgeSufficiency, **inputs)
    stock = messages(dspy.ChatAdapter(), JudgeSufficiency, **inputs)
    assert "# note" in stock[0]["content"] and "# note" not in compact[0]["content"]
    for name in ("question", "memory_notes", "known_facts", "answer_names", "is_sufficient"):
        assert f"[[ ## {name} ## ]]\n{{{name}}}" in compact[0]["content"]
    # the instructions, the field list and the user message (with each output's type) are ChatAdapter's
    assert compact[0]["content"].split("All interactions")[0] == stock[0]["content"].split("All interactions")[0]
    assert compact[1:] == stock[1:]
    assert "must be formatted as a valid Python list[str]" in compact[-1]["content"]
    assert len(compact[0]["content"]) < len(stock[0]["content"])


def test_outputs_parse_to_their_types():
    lm = scripted_lm({"relations_to_follow": lambda i: {"relations_to_follow": i["candidate_relations"][:1]}})
    with dspy.context(lm=lm, adapter=CompactChatAdapter()):
        out = dspy.Predict(PruneRelations)(
            question="who directed it", sub_objectives=["the director"], entity="Heathers",
            candidate_relations=["directed_by", "written_by"],
        )
    assert out.relations_to_follow == ["directed_by"]
