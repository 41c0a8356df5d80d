"""Prove the local engine in a child process: load the model, read a prompt, generate tokens.

A llama.cpp build made for the wrong CPU does not raise, it kills the process (SIGSEGV, SIGILL).
So the proof runs in a child: a crash there is a clear error here, with the CPU features the
build used and the command that rebuilds it with safe flags. The child also measures the engine's
speed (prompt tokens/s from llama.cpp's counters, generated tokens/s by the clock, sampling
included), the two figures every published speed is quoted against.

    python -m kgqa.lm.smoke           # one line; exit 1 if the engine fails (setup runs this)
    python -m kgqa.lm.smoke --json    # the result as one JSON object

A passing proof is recorded beside the build record (`kgqa-engine-proven.json` under
`sys.prefix`), so the in-process engine can check once per build, not once per run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

from kgqa.lm import build

PROOF_NAME = "kgqa-engine-proven.json"
PROMPT_TOKENS = 450  # about one kgqa step's prompt
GENERATED_TOKENS = 48


@dataclass(frozen=True)
class SmokeResult:
    engine_ok: bool
    detail: str  # what happened, in one line
    prompt_tokens: int = 0
    generated_tokens: int = 0
    prompt_tokens_per_s: float | None = None
    generated_tokens_per_s: float | None = None
    threads: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        if not self.engine_ok:
            return f"FAIL engine: {self.detail}"
        return (f"ok engine: {self.prompt_tokens_per_s:.0f} prompt tok/s, {self.generated_tokens_per_s:.1f} generated tok/s "
                f"({self.threads} threads; {self.prompt_tokens}-token prompt, {self.generated_tokens} tokens)")


def _smoke_prompt(llm, tokens: int) -> str:
    """A fixed prompt of about TOKENS tokens: facts to read, then a list to continue."""
    lines, i = ["Facts about films, as a knowledge graph lists them:"], 0
    while len(llm.tokenize("\n".join(lines).encode())) < tokens - 20:
        i += 1
        lines.append(f"film_{i} -> film.film.directed_by -> director_{i % 17}; film_{i} -> film.film.release_year -> {1950 + i}")
    lines.append("Count upwards, one number per line: 1, 2, 3,")
    return "\n".join(lines)


def _child(threads: int) -> dict:
    """Runs in the child process: everything that can crash is here."""
    import llama_cpp

    from kgqa.lm.model import model_path

    start = time.perf_counter()
    llm = llama_cpp.Llama(model_path=str(model_path()), n_ctx=1024, n_threads=threads, n_batch=512, seed=0, verbose=False)
    prompt = _smoke_prompt(llm, PROMPT_TOKENS)
    banned = {token: -1e9 for token in (llm.token_eos(), *llm.tokenize(b"<|im_end|>", add_bos=False, special=True))}
    began = time.perf_counter()
    out = llm.create_completion(prompt, max_tokens=GENERATED_TOKENS, temperature=0.0, logit_bias=banned)
    wall = time.perf_counter() - began
    perf = llama_cpp.llama_perf_context(llm._ctx.ctx)
    prompt_seconds = perf.t_p_eval_ms / 1000
    generated = int(out["usage"]["completion_tokens"])
    return {
        "prompt_tokens": int(out["usage"]["prompt_tokens"]),
        "generated_tokens": generated,
        "prompt_tokens_per_s": perf.n_p_eval / prompt_seconds if prompt_seconds > 0 else None,
        "generated_tokens_per_s": generated / (wall - prompt_seconds) if wall > prompt_seconds else None,
        "seconds": time.perf_counter() - start,
        "text": out["choices"][0]["text"][:80],
    }


def _crash_detail(returncode: int, stderr: str) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        what = f"the llama.cpp engine died by {name} while loading the model and generating (in a child process)"
    else:
        last = next((line for line in reversed(stderr.strip().splitlines()) if line.strip()), "no message")
        what = f"the llama.cpp engine failed (exit {returncode}): {last[:300]}"
    record = build.installed_build()
    host = build.host_features()
    if record:
        made = f"it is kgqa's {record['mode']} build ({' '.join(record['cmake_args'] + record['c_flags'])})"
    else:
        made = "it was not built by kgqa's setup: pip's default build uses -march=native, AMX included"
    amx = " ".join(f for f in host if f.startswith("amx"))
    cause = ("likely cause: instructions the build compiled in that this host does not run"
             + (f" (the CPU reports {amx}, whose kernels fault on VMs that do not grant them)" if amx else "")
             + f"; host features: {' '.join(host) or 'unknown'}")
    return f"{what}; {made}; {cause}; rebuild with safe flags: {build.REBUILD_HINT}"


def run(*, threads: int | None = None, timeout: float = 600.0, python: str = sys.executable) -> SmokeResult:
    """Load the model and generate in a child process; never raises for what happens in the child."""
    threads = threads or max(1, os.cpu_count() or 1)
    command = [python, "-m", "kgqa.lm.smoke", "--child", "--threads", str(threads)]
    root = Path(__file__).resolve().parents[2]  # the checkout, when kgqa is not installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return SmokeResult(False, f"the llama.cpp engine did not finish a {PROMPT_TOKENS}-token prompt in {timeout:.0f} s", threads=threads)
    if done.returncode != 0:
        return SmokeResult(False, _crash_detail(done.returncode, done.stderr), threads=threads)
    try:
        measured = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return SmokeResult(False, f"the engine's child printed no result: {done.stdout[-200:]!r}", threads=threads)
    if measured["generated_tokens"] < 1:
        return SmokeResult(False, "the engine loaded but generated no token", threads=threads)
    result = SmokeResult(True, f"generated {measured['text']!r}", threads=threads,
                         **{k: measured[k] for k in ("prompt_tokens", "generated_tokens", "prompt_tokens_per_s", "generated_tokens_per_s", "seconds")})
    _write_proof(result)
    return result


def _fingerprint() -> dict:
    """What a proof holds for: the llama-cpp-python installed (version and build) and the host's features."""
    try:
        version = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        version = None
    return {"llama_cpp_python": version, "build": (build.installed_build() or {}).get("key"), "host": list(build.host_features())}


def _proof_path() -> Path:
    return Path(sys.prefix) / PROOF_NAME


def _write_proof(result: SmokeResult) -> None:
    try:
        _proof_path().write_text(json.dumps({"fingerprint": _fingerprint(), "result": asdict(result)}, indent=2))
    except OSError:
        pass  # a read-only environment: the proof is asked for again next time


def proven() -> dict | None:
    """The last passing proof, if it holds for the engine installed now."""
    try:
        proof = json.loads(_proof_path().read_text())
    except (OSError, ValueError):
        return None
    return proof if proof.get("fingerprint") == _fingerprint() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kgqa.lm.smoke", description="Prove the local LM engine in a child process.")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument("--threads", type=int, help="llama.cpp threads (default: all cores)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.threads or max(1, os.cpu_count() or 1))), flush=True)
        return 0
    result = run(threads=args.threads)
    print(json.dumps(asdict(result)) if args.json else f"kgqa: {result.line()}", file=sys.stdout if result.engine_ok or args.json else sys.stderr)
    return 0 if result.engine_ok else 1


if __name__ == "__main__":
    sys.exit(main())
