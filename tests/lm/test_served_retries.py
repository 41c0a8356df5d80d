"""A served LM that fails for a moment is retried and leaves no trace; one that stays down is one
`LMUnavailable` after a bounded number of attempts. Against a scripted OpenAI-style server."""

from __future__ import annotations

import json
import threading
import time

import pytest

from kgqa.errors import LMUnavailable
from kgqa.lm.served import ServedLMError, free_port, served_lm
from tests.kg.scripted_server import ScriptedServer

REPLY = json.dumps({"choices": [{"message": {"content": "OK"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 1}}).encode()


def chat_server(script=(), *, port: int = 0) -> ScriptedServer:
    return ScriptedServer(list(script), content_type="application/json", default=REPLY, port=port)


def lm_at(server_port: int, *, retries: int = 3):
    return served_lm("openai/kgqa-local", api_base=f"http://127.0.0.1:{server_port}/v1", retries=retries, backoff=0.05)


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_a_transient_server_error_is_retried_and_leaves_no_trace(status):
    server = chat_server([(status, b'{"error": "busy"}', 0.0)] * 2)
    try:
        assert lm_at(server.port)("Reply with the word OK.") == ["OK"]
    finally:
        server.close()
    assert len(server.requests) == 3  # two failures, then the answer


def test_a_server_restarted_in_between_is_retried():
    port = free_port()
    answered = {}

    def ask():
        answered["reply"] = lm_at(port, retries=4)("Reply with the word OK.")  # backoff 0.05 .. 0.8 s

    asking = threading.Thread(target=ask)
    asking.start()
    time.sleep(0.3)  # the first attempts find nothing listening
    server = chat_server(port=port)
    try:
        asking.join(timeout=10)
    finally:
        server.close()
    assert answered == {"reply": ["OK"]} and len(server.requests) == 1


def test_a_server_that_stays_down_is_one_lm_unavailable_after_bounded_attempts():
    server = chat_server([(503, b'{"error": "model not loaded"}', 0.0)] * 10)
    try:
        engine = lm_at(server.port, retries=2).served_engine
        with pytest.raises(ServedLMError, match=r"answered 503: .*model not loaded.*\(3 attempts\)") as failed:
            engine._send({"model": "kgqa-local", "messages": []})
    finally:
        server.close()
    assert isinstance(failed.value, LMUnavailable) and len(server.requests) == 3


def test_a_client_error_is_not_retried():
    server = chat_server([(400, b'{"error": "context length exceeded"}', 0.0)])
    try:
        with pytest.raises(ServedLMError, match="answered 400: .*context length"):
            lm_at(server.port).served_engine._post({"model": "kgqa-local", "messages": []}, None)
    finally:
        server.close()
    assert len(server.requests) == 1
