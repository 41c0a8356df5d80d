"""A chat adapter that costs small models fewer tokens.

DSPy's `ChatAdapter` shows every output field in the system message's structure as
`{field}        # note: the value you produce must adhere to the JSON schema: {...}`. Small
models copy that note into their answers (seen on Qwen2.5-Coder-1.5B: ~30 generated tokens per
field, about a second each on 2 cores), and the user message already says each field's type
("must be formatted as a valid Python list[str]"). `CompactChatAdapter` writes the structure
with bare placeholders; prompts, parsing and demos are otherwise ChatAdapter's.

It does not retry a reply it cannot parse with the JSON adapter by default: a small model that
loops to its token cap usually loops again, doubling the cost of a step the program already
handles (an unusable step falls back to similarity).
"""

from __future__ import annotations

import dspy
from dspy.signatures.signature import Signature


class CompactChatAdapter(dspy.ChatAdapter):
    def __init__(self, *, use_json_adapter_fallback: bool = False, **options) -> None:
        super().__init__(use_json_adapter_fallback=use_json_adapter_fallback, **options)

    def format_field_structure(self, signature: type[Signature]) -> str:
        def placeholders(fields) -> str:
            return "\n\n".join(f"[[ ## {name} ## ]]\n{{{name}}}" for name in fields)

        return "\n\n".join(
            [
                "All interactions will be structured in the following way, with the appropriate values filled in.",
                placeholders(signature.input_fields),
                placeholders(signature.output_fields),
                "[[ ## completed ## ]]",
            ]
        )
