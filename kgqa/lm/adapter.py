"""Adapters that cost small models fewer tokens, and one that constrains their choices.

`CompactChatAdapter`: DSPy's `ChatAdapter` shows every output field in the system message's
structure as `{field}        # note: the value you produce must adhere to the JSON schema: {...}`.
Small models copy that note into their answers (seen on Qwen2.5-Coder-1.5B: ~30 generated tokens
per field, about a second each on 2 cores), and the user message already says each field's type.
It writes the structure with bare placeholders; prompts, parsing and demos are otherwise
ChatAdapter's. It does not retry an unparseable reply with the JSON adapter: a small model that
loops to its token cap usually loops again, and the program handles an unusable step.

`ConstrainedJSONAdapter`: replies are JSON objects, and an LM that declares JSON-schema output
(the local llama.cpp engine through its GBNF grammars; hosted models with structured outputs)
gets the output fields' schema with every call. A choice field typed with `choices(candidates,
at_most=k)` then becomes `{"type": "array", "items": {"enum": [...]}, "maxItems": k}`: the model
cannot invent, misspell or over-select a candidate, and its answer is a few tokens. LMs without
that support get the same prompt and are parsed leniently: choices are read as plain strings
and the program checks them against the candidates (and snaps near misses), as before.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args, get_origin

import dspy
import pydantic
from dspy.adapters.utils import serialize_for_json
from dspy.signatures.signature import Signature

from kgqa.signatures.choices import choices

__all__ = ["CompactChatAdapter", "ConstrainedJSONAdapter", "choices", "output_model"]


def _placeholders(fields) -> str:
    return "\n\n".join(f"[[ ## {name} ## ]]\n{{{name}}}" for name in fields)


class CompactChatAdapter(dspy.ChatAdapter):
    def __init__(self, *, use_json_adapter_fallback: bool = False, **options) -> None:
        super().__init__(use_json_adapter_fallback=use_json_adapter_fallback, **options)

    def format_field_structure(self, signature: type[Signature]) -> str:
        return "\n\n".join(
            [
                "All interactions will be structured in the following way, with the appropriate values filled in.",
                _placeholders(signature.input_fields),
                _placeholders(signature.output_fields),
                "[[ ## completed ## ]]",
            ]
        )


def _lenient(annotation: Any) -> Any:
    """The annotation with every Literal read as str (and length limits dropped), for parsing free text."""
    origin = get_origin(annotation)
    if origin is Literal:
        return str
    if origin is Annotated:
        return _lenient(get_args(annotation)[0])
    if origin is list:
        return list[_lenient(get_args(annotation)[0])]
    return annotation


def output_model(signature: type[Signature]) -> type[pydantic.BaseModel]:
    """The signature's outputs as a closed pydantic model, keeping each field's constraints
    (DSPy's own schema keeps the annotation only, so `maxItems` would be lost)."""
    fields = {
        name: (Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation, ...)
        for name, field in signature.output_fields.items()
    }
    return pydantic.create_model("Outputs", __config__=pydantic.ConfigDict(extra="forbid"), **fields)


class ConstrainedJSONAdapter(dspy.JSONAdapter):
    def __init__(self, **options) -> None:
        super().__init__(use_native_function_calling=False, **options)

    def format_field_structure(self, signature: type[Signature]) -> str:
        outputs = ", ".join(f'"{name}": ...' for name in signature.output_fields)
        return "\n\n".join(
            [
                "All interactions will be structured in the following way, with the appropriate values filled in.",
                _placeholders(signature.input_fields),
                f"Outputs are one JSON object: {{{outputs}}}",
            ]
        )

    def user_message_output_requirements(self, signature: type[Signature]) -> str:
        return "Respond with a JSON object with " + ", ".join(f"`{name}`" for name in signature.output_fields) + "."

    def format_field_with_value(self, fields_with_values: dict, role: str = "user") -> str:
        if role == "user":
            return super().format_field_with_value(fields_with_values, role=role)
        # a demo's reply on one line: JSONAdapter indents it, which costs every demo a third more
        # tokens, and a small model copies the indentation into its own (slower) replies
        return json.dumps(serialize_for_json({field.name: value for field, value in fields_with_values.items()}),
                          ensure_ascii=False)

    def _prepare_response_format(self, lm, lm_kwargs, signature):
        if "response_format" in getattr(lm, "supported_params", ()) and lm.supports_response_schema:
            lm_kwargs["response_format"] = output_model(signature)

    def format_field_description(self, signature: type[Signature]) -> str:
        # The candidates are in the inputs; listing them again in each field's type would make
        # the system message differ per call (no prefix reuse) and cost their tokens twice.
        return super().format_field_description(_relaxed(signature))

    def parse(self, signature: type[Signature], completion: str) -> dict[str, Any]:
        return super().parse(_relaxed(signature), completion)


def _relaxed(signature: type[Signature]) -> type[Signature]:
    """The signature with choice fields typed as plain strings: what free text is parsed as."""
    for name, field in signature.output_fields.items():
        if _lenient(field.annotation) != field.annotation or field.metadata:
            signature = signature.with_updated_fields(name, type_=_lenient(field.annotation))
            signature.output_fields[name].metadata.clear()
    return signature
