"""A fault-injecting engine: wraps another engine and, on a seeded share of calls, answers with
garbage, truncated JSON, wrong types, invented relations or entities, an exception or a timeout.
For fault tests. The first four are the model's text (`TEXT_FAULTS`): the program falls back and
still answers where it can. The last two are outages (`OUTAGES`): the question ends as an error."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter

from dspy.lm15 import Message, Response, TextPart, Usage

TEXT_FAULTS = ("garbage", "truncated", "wrong_types", "invented")
OUTAGES = ("exception", "timeout")
FAULTS = TEXT_FAULTS + OUTAGES


class InjectedFault(RuntimeError):
    pass


class FaultyEngine:
    def __init__(self, inner, *, rate: float = 0.3, seed: int = 0, faults: tuple[str, ...] = FAULTS, timeout: float = 0.05):
        self.inner, self.rate, self.faults, self.timeout = inner, rate, faults, timeout
        self.injected: Counter[str] = Counter()
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def complete(self, request) -> Response:
        with self._lock:
            fault = self._random.choice(self.faults) if self._random.random() < self.rate else None
            if fault:
                self.injected[fault] += 1
        if fault == "exception":
            raise InjectedFault("injected: the LM server answered 503")
        if fault == "timeout":
            time.sleep(self.timeout)
            raise TimeoutError("injected: the LM did not answer in time")
        response = self.inner.complete(request)
        if fault is None:
            return response
        text = response.message.text or ""
        if fault == "garbage":
            text = "As an AI language model I think the answer is probably something like that."
        elif fault == "truncated":
            text = text[: max(1, len(text) // 2)]
        elif fault == "wrong_types":
            text = text.replace('["', '{"oops": ["').replace('"]', '"]}').replace("True", "maybe").replace("False", "[]")
        elif fault == "invented":
            text = _invent(text)
        return Response(
            id=None, model=response.model, message=Message.assistant([TextPart(text)]), finish_reason="stop",
            usage=response.usage or Usage(input_tokens=0, output_tokens=0, total_tokens=0),
        )


def _invent(text: str) -> str:
    """Swap every JSON list in the answer for names that exist nowhere."""
    out, start = [], 0
    while (open_at := text.find("[", start)) != -1 and (close_at := text.find("]", open_at)) != -1:
        if text[open_at:].startswith("[[ ##"):
            out.append(text[start : open_at + 5])
            start = open_at + 5
            continue
        out += [text[start:open_at], json.dumps(["made.up.relation", "Imaginary Person"])]
        start = close_at + 1
    return "".join(out) + text[start:]
