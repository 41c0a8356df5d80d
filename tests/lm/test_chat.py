"""The chat translation's response formats: schemas llama-cpp-python can turn into a grammar."""

from __future__ import annotations

import json

import pytest

from kgqa.lm.chat import grammar_safe, spelled

FACT = 'The Four Seasons: Winter | composition includes | Concerto No. 4, RV 297 "Winter"'
SCHEMA = {"type": "object", "required": ["relevant_facts"], "properties": {"relevant_facts": {
    "type": "array", "maxItems": 2, "items": {"enum": [FACT, "AC\\DC | genre | Rock", "plain"]}}},
    "additionalProperties": False}


def test_quotes_and_backslashes_in_choices_are_respelled_for_llama_cpp_python_only():
    safe = spelled(SCHEMA, "json_object")["schema"]["properties"]["relevant_facts"]
    assert safe["items"]["enum"] == [FACT.replace('"', "'"), "AC/DC | genre | Rock", "plain"]
    assert safe["maxItems"] == 2 and SCHEMA["properties"]["relevant_facts"]["items"]["enum"][0] == FACT  # a copy
    assert spelled(SCHEMA, "json_schema")["json_schema"]["schema"] == SCHEMA  # servers with their own converter
    assert grammar_safe({"const": 'say "hi"'}) == {"const": "say 'hi'"}
    assert grammar_safe({"enum": ['a"b', "a'b"]}) == {"enum": ["a'b"]}  # respelled alike: one choice


def test_llama_cpp_pythons_grammar_of_the_respelled_schema_has_well_formed_literals():
    gbnf = pytest.importorskip("llama_cpp.llama_grammar")
    broken = gbnf.json_schema_to_gbnf(json.dumps(SCHEMA))
    assert '\\\\"Winter\\\\"' in broken  # its converter's bug: the quote ends the literal early, llama.cpp aborts
    grammar = gbnf.json_schema_to_gbnf(json.dumps(grammar_safe(SCHEMA)))
    assert "\\\\" not in grammar and "RV 297 'Winter'" in grammar
