"""The default LM: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) in process through llama-cpp-python.

The weights come from `kgqa.lm.model`. `LocalEngine` implements
DSPy 3.4's engine interface (`complete(Request) -> Response`). Calls are serialized (llama.cpp
is not thread-safe), and a prefix-state cache keeps the KV state of earlier prompts so that a
predictor's instructions and demos are processed once, not on every call: on 2 cores prompt
processing (~100 tokens/s) dominates.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from dspy.lm15 import Response

from kgqa.lm.chat import chat_messages, chat_response, response_schema, spelled
from kgqa.lm.model import MODEL_NAME, LocalModelError, model_path

__all__ = ["MODEL_NAME", "LocalEngine", "LocalModelError", "local_lm", "model_path"]


@dataclass
class EngineStats:
    """Per call: prompt tokens, prompt tokens actually processed (the rest came from reused KV state), seconds."""

    calls: list[dict] = field(default_factory=list)

    @property
    def prompt_tokens(self) -> int:
        return sum(c["prompt_tokens"] for c in self.calls)

    @property
    def processed_tokens(self) -> int:
        return sum(c["processed_tokens"] for c in self.calls)


class LocalEngine:
    # DSPy reads these off a custom engine: a JSON adapter then sends each call's output schema,
    # which llama.cpp turns into a grammar (enums, maxItems), so choices come out valid and short.
    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "stop", "response_format"})

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        prefix_cache_bytes: int = 1 << 30,
        reuse_prefix: bool = True,
        seed: int = 0,
        max_tokens: int = 256,
    ) -> None:
        self.path = Path(path) if path else None
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, os.cpu_count() or 1)
        self.prefix_cache_bytes = prefix_cache_bytes if reuse_prefix else 0
        self.reuse_prefix = reuse_prefix
        self.seed = seed
        self.max_tokens = max_tokens
        self.stats = EngineStats()
        self._llm = None
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict) -> LocalEngine:
        return self

    @property
    def llm(self):
        if self._llm is None:
            try:
                from llama_cpp import Llama, LlamaRAMCache
            except ImportError as exc:
                raise LocalModelError("llama-cpp-python is not installed (make setup, or python -m kgqa.lm.build)") from exc
            ensure_engine_runs()
            self._llm = Llama(
                model_path=str(self.path or model_path()),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_batch=512,
                seed=self.seed,
                verbose=False,
            )
            if self.prefix_cache_bytes:
                self._llm.set_cache(_lean_cache(LlamaRAMCache)(capacity_bytes=self.prefix_cache_bytes))
        return self._llm

    def complete(self, request) -> Response:
        messages = chat_messages(request)
        config = request.config
        temperature = getattr(config, "temperature", None)
        max_tokens = getattr(config, "max_tokens", None) or self.max_tokens
        schema = response_schema(getattr(config, "response_format", None))
        with self._lock:
            llm = self.llm
            if not self.reuse_prefix:
                llm.reset()  # forget the last prompt too: every call processes its whole prompt
            before = _processed(llm)
            start = time.perf_counter()
            out = llm.create_chat_completion(
                messages=messages,
                temperature=0.0 if temperature is None else float(temperature),
                max_tokens=int(max_tokens),
                stop=list(getattr(config, "stop", ()) or ()) or None,
                seed=self.seed,
                response_format=None if schema is None else spelled(schema, "json_object"),  # llama.cpp's GBNF
            )
            seconds = time.perf_counter() - start
            processed = _processed(llm) - before
        response = chat_response(out, model=MODEL_NAME)
        self.stats.calls.append({"prompt_tokens": response.usage.input_tokens, "processed_tokens": processed,
                                 "completion_tokens": response.usage.output_tokens, "seconds": seconds})
        return response


def ensure_engine_runs() -> None:
    """A llama.cpp build made for the wrong CPU kills the process on its first decode. Prove this
    build once in a child process (kgqa.lm.smoke; setup does it too) before loading it here."""
    from kgqa.lm import smoke

    if smoke.proven():
        return
    result = smoke.run()
    if not result.engine_ok:
        raise LocalModelError(result.detail)


def _lean_cache(base):
    """llama-cpp-python's RAM cache, minus its leak: every saved state also copies the logits
    buffer (n_batch x 151,936 floats, ~311 MB) that the byte budget does not count, so a long run
    grew past 24 GB. A restored prefix never uses those logits (the last prompt token is always
    evaluated again), so they are kept as a broadcast zero view: one row of memory."""
    import numpy as np

    class LeanRAMCache(base):
        def __setitem__(self, key, state) -> None:
            shape = state.scores.shape
            state.scores = np.broadcast_to(np.zeros((1, shape[1]), dtype=state.scores.dtype), shape)
            super().__setitem__(key, state)

    return LeanRAMCache


def _processed(llm) -> int:
    """Prompt tokens llama.cpp has evaluated so far (its perf counter), to show prefix reuse."""
    import llama_cpp

    return int(llama_cpp.llama_perf_context(llm._ctx.ctx).n_p_eval)


def local_lm(**engine_options):
    """`dspy.LM` on the local model; the engine (and its stats) is `lm.local_engine`."""
    import dspy

    engine = LocalEngine(**engine_options)
    lm = dspy.LM(f"local/{MODEL_NAME}", engine=engine, cache=False)
    lm.local_engine = engine
    return lm
