"""DSPy's engine requests as OpenAI-style chat messages, and chat completions back as DSPy responses:
the one translation the in-process engine (`kgqa.lm.local`) and a served one (`kgqa.lm.served`) share."""

from __future__ import annotations

from dspy.lm15 import Message, Response, TextPart, Usage


def chat_messages(request) -> list[dict]:
    """The request's system text and messages as `[{"role", "content"}, ...]`."""
    system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system or [])
    messages = [{"role": "system", "content": system}] if system else []
    return messages + [{"role": m.role, "content": m.text or ""} for m in request.messages]


def chat_response(out: dict, *, model: str) -> Response:
    """An OpenAI-style chat completion (llama-cpp-python's, or a server's JSON) as a DSPy response."""
    choice = out["choices"][0]
    usage = out.get("usage") or {}
    prompt_tokens, completion_tokens = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    return Response(
        id=out.get("id"),
        model=model,
        message=Message.assistant([TextPart(choice["message"].get("content") or "")]),
        finish_reason="length" if choice.get("finish_reason") == "length" else "stop",
        usage=Usage(input_tokens=prompt_tokens, output_tokens=completion_tokens, total_tokens=prompt_tokens + completion_tokens),
    )


def response_schema(response_format: dict | None) -> dict | bool | None:
    """The JSON schema in DSPy's response format; True for JSON without a schema; None for free text."""
    if not response_format:
        return None
    return response_format.get("schema") or (response_format.get("json_schema") or {}).get("schema") or True


def spelled(schema: dict | bool, dialect: str) -> dict:
    """A response format as a server takes it: OpenAI's `json_schema` (vLLM, SGLang, llama.cpp's C++
    server), or llama-cpp-python's `json_object` with a `schema` (its server and its in-process API)."""
    if schema is True:
        return {"type": "json_object"}
    if dialect == "json_object":
        return {"type": "json_object", "schema": grammar_safe(schema)}
    return {"type": "json_schema", "json_schema": {"name": "outputs", "schema": schema}}


def grammar_safe(schema: object) -> object:
    """The schema with `"` and `\\` in its enum and const strings written `'` and `/`.
    llama-cpp-python's schema-to-grammar converter escapes those two wrongly inside a literal, and
    llama.cpp then fails to parse the grammar and aborts the whole process (a candidate fact such as
    `... Op. 8 No. 4/RV 297 "Winter"` did it). The model writes the near spelling, and every choice is
    snapped back to its candidate by the program (`programs.steps.LMCalls.choice`)."""
    if isinstance(schema, list):
        return [grammar_safe(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    safe = {key: grammar_safe(value) for key, value in schema.items()}
    if isinstance(safe.get("enum"), list):
        safe["enum"] = list(dict.fromkeys(_literal(v) for v in safe["enum"]))
    if "const" in safe:
        safe["const"] = _literal(safe["const"])
    return safe


def _literal(value: object) -> object:
    return value.replace('"', "'").replace("\\", "/") if isinstance(value, str) else value
