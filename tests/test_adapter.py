"""The adapters: the compact chat adapter's prompts, and the constrained JSON adapter's schemas."""

from __future__ import annotations

import dspy
import pytest

from kgqa.lm.adapter import CompactChatAdapter, ConstrainedJSONAdapter, choices, output_model
from kgqa.lm.scripted import scripted_lm
from kgqa.signatures import CheckSufficiency, PruneRelations


def messages(adapter, signature, **inputs):
    return adapter.format(signature, demos=[], inputs=inputs)


JUDGE_INPUTS = {"question": "q", "memory_notes": [], "best_paths": ["a -> r -> b"]}
RELATION_INPUTS = {"question": "who directed it", "plan": ["director"], "hop": "hop 1 of 1: director", "entity": "Heathers"}


def test_the_structure_has_placeholders_and_no_notes():
    compact = messages(CompactChatAdapter(), CheckSufficiency, **JUDGE_INPUTS)
    stock = messages(dspy.ChatAdapter(), CheckSufficiency, **JUDGE_INPUTS)
    assert "# note" in stock[0]["content"] and "# note" not in compact[0]["content"]
    for name in ("question", "memory_notes", "best_paths", "evidence_sufficient"):
        assert f"[[ ## {name} ## ]]\n{{{name}}}" in compact[0]["content"]
    # the instructions, the field list and the user message (with each output's type) are ChatAdapter's
    assert compact[0]["content"].split("All interactions")[0] == stock[0]["content"].split("All interactions")[0]
    assert compact[1:] == stock[1:]
    assert "must be formatted as a valid Python list[str]" not in compact[-1]["content"]  # sufficiency answers a bool
    assert len(compact[0]["content"]) < len(stock[0]["content"])


def test_outputs_parse_to_their_types():
    lm = scripted_lm({"relations_to_follow": lambda i: {"relations_to_follow": i["candidate_relations"][:1]}})
    with dspy.context(lm=lm, adapter=CompactChatAdapter()):
        out = dspy.Predict(PruneRelations)(**RELATION_INPUTS, candidate_relations=["directed_by", "written_by"])
    assert out.relations_to_follow == ["directed_by"]


def test_a_choice_is_an_enum_with_a_length_cap_in_the_schema():
    signature = PruneRelations.with_updated_fields("relations_to_follow", type_=choices(["a", "b", "a"], at_most=1))
    schema = output_model(signature).model_json_schema()
    field = schema["properties"]["relations_to_follow"]
    assert field["items"]["enum"] == ["a", "b"] and field["maxItems"] == 1 and "minItems" not in field
    at_least_one = output_model(PruneRelations.with_updated_fields("relations_to_follow", type_=choices(["a", "b"], at_least=1)))
    assert at_least_one.model_json_schema()["properties"]["relations_to_follow"]["minItems"] == 1
    assert schema["additionalProperties"] is False and schema["required"] == ["relations_to_follow"]
    with pytest.raises(ValueError):
        choices([])


def test_the_constrained_adapter_keeps_the_system_message_the_same_whatever_the_candidates():
    adapter = ConstrainedJSONAdapter()
    systems = set()
    for candidates in (["a", "b"], ["c", "d", "e"]):
        signature = PruneRelations.with_updated_fields("relations_to_follow", type_=choices(candidates, at_most=2))
        systems.add(messages(adapter, signature, **RELATION_INPUTS, candidate_relations=candidates)[0]["content"])
    (system,) = systems  # one system message: the prefix cache reuses it, and no candidate is listed twice
    assert "Literal" not in system and "`relations_to_follow` (list[str])" in system


def test_the_schema_goes_only_to_an_lm_that_declares_it_and_answers_parse_leniently():
    signature = PruneRelations.with_updated_fields("relations_to_follow", type_=choices(["directed_by", "written_by"], at_most=1))
    for constrained in (True, False):
        lm = scripted_lm({"relations_to_follow": lambda i: {"relations_to_follow": ["Directed_By"]}}, constrained=constrained)
        with dspy.context(lm=lm, adapter=ConstrainedJSONAdapter()):
            out = dspy.Predict(signature)(**RELATION_INPUTS, candidate_relations=["directed_by", "written_by"])
        assert out.relations_to_follow == ["Directed_By"]  # read as text; the program checks it against the candidates
        (sent,) = lm.scripted.formats
        if constrained:
            assert sent["type"] == "json_schema" and sent["schema"]["properties"]["relations_to_follow"]["maxItems"] == 1
        else:
            assert sent is None


def test_garbage_is_a_parse_error_not_an_answer():
    lm = scripted_lm({"relations_to_follow": lambda i: "no json here"})
    with dspy.context(lm=lm, adapter=ConstrainedJSONAdapter()), pytest.raises(Exception, match="JSON"):
        dspy.Predict(PruneRelations)(**RELATION_INPUTS, candidate_relations=["directed_by"])
