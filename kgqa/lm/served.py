"""A served LM: any OpenAI-compatible chat server (llama.cpp's `llama_cpp.server` or `llama-server`,
vLLM, SGLang), reached directly so that every call carries its output schema.

Through LiteLLM, DSPy sends a JSON schema only to models its catalog says take one, and a
self-hosted model is in no catalog: the walk's choices would go out unconstrained. `ServedEngine`
implements DSPy's engine interface (`complete(Request) -> Response`), declares schema support, and
sends each call's schema in the dialect the server speaks:
- `json_schema`: OpenAI's `{"type": "json_schema", "json_schema": {"name", "schema"}}` (vLLM,
  SGLang, llama.cpp's C++ server, OpenAI);
- `json_object`: `{"type": "json_object", "schema": ...}` (llama-cpp-python's server, which answers the first
  with an error).
`dialect="auto"` (the default) tries `json_schema` and falls back to `json_object` for good when
the server refuses it. Decoding is greedy with a fixed seed, as in process, so a program answers
the same through a served copy of the local model as through the in-process engine.

A dropped connection, a timeout or a 5xx/429 answer is retried `retries` times with exponential
backoff (1, 2, 4 s by default: a restarted server is back within it); past that the call raises
`ServedLMError`, an `LMUnavailable`: the question ends as an error, never as a fallback answer.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import httpx
from dspy.lm15 import Response

from kgqa.errors import LMUnavailable
from kgqa.kg.processes import dies_with_parent
from kgqa.lm.chat import chat_messages, chat_response, response_schema, spelled

Dialect = Literal["auto", "json_schema", "json_object"]
# llama-cpp-python's server (the json_object dialect) penalises repeats by default (1.1); its
# in-process API, and llama.cpp's own server, do not (1.0). Greedy decoding then picks other tokens:
# on 22 demo questions the served model's answers differed from the in-process engine's on 8.
JSON_OBJECT_SAMPLING = {"repeat_penalty": 1.0}
LOCAL_ALIAS = "kgqa-local"  # what `llama_server` calls the local model: --lm openai/kgqa-local


class ServedLMError(LMUnavailable):
    """The server answered with an error, or not at all (after its retries)."""


class ServedEngine:
    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "stop", "response_format"})

    def __init__(
        self,
        *,
        api_base: str,
        model: str,
        api_key: str | None = None,
        dialect: Dialect = "auto",
        seed: int = 0,
        max_tokens: int = 256,
        timeout: float = 300.0,
        retries: int = 3,
        backoff: float = 1.0,
    ) -> None:
        self.url = api_base.rstrip("/") + "/chat/completions"
        self.model = model
        self.dialect = dialect
        self.seed = seed
        self.max_tokens = max_tokens
        self.retries, self.backoff = retries, backoff
        key = api_key or os.environ.get("OPENAI_API_KEY")
        self._client = httpx.Client(timeout=timeout, headers={"Authorization": f"Bearer {key}"} if key else {})

    def __deepcopy__(self, memo: dict) -> ServedEngine:
        return self

    def complete(self, request) -> Response:
        config = request.config
        temperature = getattr(config, "temperature", None)
        body = {
            "model": self.model,
            "messages": chat_messages(request),
            "temperature": 0.0 if temperature is None else float(temperature),
            "max_tokens": int(getattr(config, "max_tokens", None) or self.max_tokens),
            "seed": self.seed,
        }
        if getattr(config, "stop", None):
            body["stop"] = list(config.stop)
        out = self._post(body, response_schema(getattr(config, "response_format", None)))
        return chat_response(out, model=out.get("model") or self.model)

    def _post(self, body: dict, schema: dict | bool | None) -> dict:
        spelling = "json_object" if self.dialect == "json_object" else "json_schema"
        if spelling == "json_object":
            body = {**body, **JSON_OBJECT_SAMPLING}
        if schema is not None:
            body = {**body, "response_format": spelled(schema, spelling)}
        reply = self._send(body)
        if schema is not None and _refuses_format(reply) and spelling == "json_schema" and self.dialect != "json_schema":
            # llama-cpp-python's server refuses OpenAI's spelling (with a 500): its own, from now on
            # (other threads may have sent the first spelling meanwhile: each retries once)
            self.dialect = "json_object"
            reply = self._send({**body, **JSON_OBJECT_SAMPLING, "response_format": spelled(schema, "json_object")})
        if reply.status_code != 200:
            raise ServedLMError(f"{self.url} answered {reply.status_code}: {reply.text[:300]}")
        try:
            return reply.json()
        except ValueError:
            raise ServedLMError(f"{self.url} answered with something other than JSON: {reply.text[:200]!r}") from None

    def _send(self, body: dict) -> httpx.Response:
        """The server's reply; transport failures, 5xx and 429 are retried with exponential backoff."""
        for attempt in range(self.retries + 1):
            try:
                reply = self._client.post(self.url, json=body)
            except httpx.TransportError as exc:  # refused, reset, DNS, timed out
                failure = f"did not answer: {type(exc).__name__}: {exc}"
            except httpx.HTTPError as exc:  # a bad URL: retrying cannot help
                raise ServedLMError(f"{self.url} did not answer: {type(exc).__name__}: {exc}") from None
            else:
                if not _transient(reply) or _refuses_format(reply):
                    return reply
                failure = f"answered {reply.status_code}: {reply.text[:300]}"
            if attempt < self.retries:
                time.sleep(self.backoff * 2**attempt)
        raise ServedLMError(f"{self.url} {failure}" + (f" ({self.retries + 1} attempts)" if self.retries else ""))


def _transient(reply: httpx.Response) -> bool:
    return reply.status_code >= 500 or reply.status_code == 429


def _refuses_format(reply: httpx.Response) -> bool:
    """llama-cpp-python's server answers OpenAI's json_schema spelling with a 500 that names it."""
    return reply.status_code >= 400 and "response_format" in reply.text


def served_lm(spec: str, *, api_base: str, dialect: Dialect = "auto", temperature: float | None = None,
              max_tokens: int | None = None, retries: int = 3, backoff: float = 1.0):
    """`dspy.LM` on the model SPEC (`openai/NAME`: NAME is what the server calls it) served at API_BASE;
    greedy unless TEMPERATURE is given; failures retried RETRIES times. The engine is `lm.served_engine`."""
    import dspy

    engine = ServedEngine(api_base=api_base, model=spec.split("/", 1)[-1], dialect=dialect, retries=retries, backoff=backoff)
    options = {k: v for k, v in {"temperature": temperature, "max_tokens": max_tokens}.items() if v is not None}
    lm = dspy.LM(spec, engine=engine, cache=False, **options)
    lm.served_engine = engine
    return lm


def llama_server_command(*, port: int, threads: int | None = None, host: str = "127.0.0.1", n_ctx: int = 8192,
                         cache_bytes: int = 256 << 20, python: str = sys.executable) -> list[str]:
    """llama-cpp-python's OpenAI-compatible server (`[server]` extra) on the local model, set up as
    the in-process engine is (context, batch, prefix-state cache). The cache is kept small: its
    states also hold a logits buffer (~311 MB each) that its byte budget does not count."""
    from kgqa.lm.model import model_path

    return [python, "-m", "llama_cpp.server", "--model", str(model_path()), "--model_alias", LOCAL_ALIAS,
            "--host", host, "--port", str(port), "--n_threads", str(threads or os.cpu_count() or 1),
            "--n_ctx", str(n_ctx), "--n_batch", "512", "--cache", "true", "--cache_size", str(cache_bytes)]


def wait_until_answering(url: str, process: subprocess.Popen, *, what: str, wait: float = 300.0) -> None:
    """Return once GET URL answers 200; `ServedLMError` if PROCESS exits first or WAIT seconds pass."""
    deadline = time.monotonic() + wait
    while True:
        if process.poll() is not None:
            raise ServedLMError(f"{what} exited with status {process.returncode} before serving")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise ServedLMError(f"{what} did not answer on {url} within {wait:.0f} s")
        time.sleep(0.5)


def start_llama_server(*, port: int, threads: int | None = None, log: Path | None = None, wait: float = 300.0) -> subprocess.Popen:
    """`llama_cpp.server` on the local model as a subprocess in a session of its own (stop it with
    `os.killpg`), returned once it answers on 127.0.0.1:PORT (the model is `openai/kgqa-local`). It
    is sent SIGTERM if this process dies without stopping it (`dies_with_parent`)."""
    from kgqa.lm.local import ensure_engine_runs

    ensure_engine_runs()  # a build that faults on this CPU is one clear error, not a dead server
    sink = open(log, "ab") if log else subprocess.DEVNULL
    process = subprocess.Popen(llama_server_command(port=port, threads=threads), stdout=sink, stderr=subprocess.STDOUT,
                               start_new_session=True, preexec_fn=dies_with_parent())
    if log:
        sink.close()  # the child has its own copy
    try:
        wait_until_answering(f"http://127.0.0.1:{port}/v1/models", process, what="llama_cpp.server" + (f" (its log: {log})" if log else ""),
                             wait=wait)
    except ServedLMError:
        stop_process_group(process)
        raise
    return process


def stop_process_group(process: subprocess.Popen, *, sig: int = signal.SIGTERM, wait: float = 30.0) -> None:
    """Stop a process started in a session of its own, and what it started: SIG, then SIGKILL after WAIT seconds."""
    if process.poll() is None:
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextmanager
def llama_server(*, threads: int | None = None, port: int | None = None, log: Path | None = None,
                 wait: float = 300.0) -> Iterator[str]:
    """The local model served by `llama_cpp.server` on 127.0.0.1 for the block's duration: yields
    its API base (`http://127.0.0.1:PORT/v1`; the model is `openai/kgqa-local`), stops it by PID."""
    port = port or free_port()
    process = start_llama_server(port=port, threads=threads, log=log, wait=wait)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_process_group(process)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> None:
    """`python -m kgqa.lm.served [--port P] [--threads N]`: serve the local model until stopped."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m kgqa.lm.served", description=main.__doc__)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--threads", type=int, help="llama.cpp threads (default: all cores)")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    from kgqa.lm.local import LocalModelError, ensure_engine_runs

    try:
        ensure_engine_runs()  # a build that faults on this CPU is one clear line, not a server that dies later
        command = llama_server_command(port=args.port, threads=args.threads, host=args.host)
    except LocalModelError as exc:
        raise SystemExit(f"kgqa: cannot serve the local model: {exc}") from None
    print(f"serving the local model as openai/{LOCAL_ALIAS} at http://{args.host}:{args.port}/v1", flush=True)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
