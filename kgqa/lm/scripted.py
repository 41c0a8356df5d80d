"""A deterministic LM for tests: each DSPy signature is answered by a handler.

The engine implements DSPy 3.4's `complete(Request) -> Response`. It reads which signature
is asked (its output fields, from the system message) and the inputs (the `[[ ## field ## ]]`
blocks of the last user message), calls the handler registered under the first output field,
and writes the handler's outputs back in the adapter's format. A handler that returns a plain
string sends that text as is, which is how garbage answers are scripted. Token counts are
whitespace words, so usage is real and repeatable.

    lm = scripted_lm({"sub_objectives": lambda inputs: {"sub_objectives": [inputs["question"]]}})
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage

Handler = Callable[[dict[str, Any]], Mapping[str, Any] | str]
_OUTPUTS = re.compile(r"Your output fields are:\n((?:\d+\. `\w+`.*(?:\n|$))+)")
_FIELD = re.compile(r"`(\w+)`")
_BLOCK = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\n\nRespond with|\Z)", re.S)


def _text(parts: object) -> str:
    if parts is None:
        return ""
    return parts if isinstance(parts, str) else "".join(getattr(p, "text", "") or "" for p in parts)


def _decode(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.strip()


def _encode(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (list, dict, int, float)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


class ScriptedEngine:
    def __init__(self, handlers: Mapping[str, Handler], *, default: Handler | None = None) -> None:
        self.handlers = dict(handlers)
        self.default = default
        self.calls: list[tuple[str, dict[str, Any]]] = []  # (first output field, inputs), in call order
        self.formats: list[dict | None] = []  # the response_format of each call (JSON schemas, when sent)
        self.shown: list[str] = []  # the text of each call's messages before the last one (its demos)
        self._lock = threading.Lock()

    def complete(self, request) -> Response:
        system = _text(request.system)
        outputs = _FIELD.findall(_OUTPUTS.search(system).group(1)) if _OUTPUTS.search(system) else []
        prompt = _text(request.messages[-1].text) if request.messages else ""
        inputs = {name: _decode(raw) for name, raw in _BLOCK.findall(prompt) if name not in outputs}
        key = outputs[0] if outputs else ""
        with self._lock:
            self.calls.append((key, inputs))
            self.formats.append(getattr(request.config, "response_format", None))
            self.shown.append("\n".join(_text(m.text) for m in request.messages[:-1]))
        handler = self.handlers.get(key, self.default)
        if not outputs and handler is None:  # a plain prompt, not a signature (a health check)
            handler = lambda _: "OK"  # noqa: E731
        if handler is None:
            raise KeyError(f"the scripted LM has no handler for a signature with outputs {outputs}")
        answer = handler(inputs)
        if isinstance(answer, str):
            text = answer
        elif "[[ ## completed ## ]]" in system:
            text = "".join(f"[[ ## {name} ## ]]\n{_encode(answer.get(name, ''))}\n\n" for name in outputs)
            text += "[[ ## completed ## ]]"
        else:
            text = json.dumps({name: answer.get(name) for name in outputs}, ensure_ascii=False)
        prompt_words = len(system.split()) + sum(len(_text(m.text).split()) for m in request.messages)
        usage = Usage(input_tokens=prompt_words, output_tokens=len(text.split()), total_tokens=prompt_words + len(text.split()))
        return Response(id=None, model="scripted", message=Message.assistant([TextPart(text)]), finish_reason="stop", usage=usage)

    def count(self, output_field: str) -> int:
        return sum(1 for key, _ in self.calls if key == output_field)


class ConstrainedScriptedEngine(ScriptedEngine):
    """A scripted engine that declares JSON-schema output, as the local llama.cpp engine does:
    a JSON adapter then sends each call's schema, which `formats` records."""

    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "stop", "response_format"})


def scripted_lm(handlers: Mapping[str, Handler], *, default: Handler | None = None, constrained: bool = False) -> dspy.LM:
    """A `dspy.LM` answered by handlers; `lm.scripted` is its engine, which records every call.
    `constrained`: the engine declares JSON-schema output (as the local engine does)."""
    engine = (ConstrainedScriptedEngine if constrained else ScriptedEngine)(handlers, default=default)
    lm = dspy.LM("scripted/kgqa", engine=engine, cache=False)
    lm.scripted = engine
    return lm
