"""The local engine's setup: build flags per CPU, a wheel cache keyed by what it was built for, the
engine proved in a child process (a crash is a clear failure, never a dead pytest), and the doctor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgqa.lm import build, smoke
from tests.conftest import require_local_lm

ROOT = Path(__file__).resolve().parents[1]
SAPPHIRE_RAPIDS = ("amx_bf16", "amx_int8", "amx_tile", "avx", "avx2", "avx512_bf16", "avx512_vnni", "avx512bw", "avx512f",
                   "avx512vl", "bmi2", "f16c", "fma", "sse4_2")
HASWELL = ("avx", "avx2", "bmi2", "f16c", "fma", "sse4_2")


def test_host_features_come_from_cpuinfo_and_keep_only_simd_names():
    cpuinfo = "processor\t: 0\nflags\t\t: fpu vme sse4_2 avx avx2 amx_tile amx_int8 hypervisor\n"
    assert build.host_features(cpuinfo) == ("amx_int8", "amx_tile", "avx", "avx2", "sse4_2")
    assert build.host_features("Features\t: fp asimd asimddp sve\n") == ("asimd", "asimddp", "sve")
    assert build.host_features("nothing here") == ()


def test_native_x86_builds_leave_amx_out_and_portable_ones_need_only_avx2():
    native = build.plan("native", arch="x86_64", features=SAPPHIRE_RAPIDS)
    assert "-DGGML_NATIVE=ON" in native.cmake_args
    assert native.c_flags == ("-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16")
    env = native.environment()
    assert env["CFLAGS"] == env["CXXFLAGS"] == "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    portable = build.plan("portable", arch="x86_64", features=SAPPHIRE_RAPIDS)
    assert "-DGGML_NATIVE=OFF" in portable.cmake_args and "-DGGML_AVX2=ON" in portable.cmake_args
    assert not any("AVX512" in a or "AMX" in a for a in portable.cmake_args) and portable.c_flags == ()
    arm = build.plan("native", arch="aarch64", features=("asimd", "sve"))
    assert arm.c_flags == () and "-DGGML_NATIVE=ON" in arm.cmake_args  # no x86 flags on Arm
    with pytest.raises(ValueError, match="unknown llama.cpp build mode"):
        build.plan("fastest")


def test_the_wheel_cache_key_names_the_cpu_a_native_build_was_made_for():
    on_amx = build.plan("native", arch="x86_64", features=SAPPHIRE_RAPIDS)
    on_haswell = build.plan("native", arch="x86_64", features=HASWELL)
    assert on_amx.key != on_haswell.key  # a native wheel from one CPU is never reused on another
    assert on_amx.key == build.plan("native", arch="x86_64", features=SAPPHIRE_RAPIDS).key
    assert build.plan("portable", arch="x86_64", features=SAPPHIRE_RAPIDS).key == build.plan("portable", arch="x86_64", features=HASWELL).key
    assert on_amx.key.startswith(f"llama-cpp-python-{build.LLAMA_CPP_PYTHON}-native-x86_64-")


def test_the_mode_comes_from_the_flag_then_the_environment(monkeypatch):
    monkeypatch.setenv(build.MODE_VARIABLE, "portable")
    assert build.chosen_mode() == "portable" and build.chosen_mode("native") == "native"
    monkeypatch.setenv(build.MODE_VARIABLE, "turbo")
    with pytest.raises(SystemExit, match="not a build mode"):
        build.chosen_mode()


def test_a_child_that_dies_by_a_signal_is_a_clear_failure(tmp_path):
    """A real child process killed by SIGSEGV, as an AMX build dies on its first decode."""
    crashing = tmp_path / "python"
    crashing.write_text("#!/bin/sh\nkill -SEGV $$\n")
    crashing.chmod(0o755)
    result = smoke.run(python=str(crashing), timeout=30)
    assert not result.engine_ok
    assert "died by SIGSEGV" in result.detail and build.REBUILD_HINT in result.detail
    assert "likely cause" in result.detail and result.line().startswith("FAIL engine:")


def test_a_child_that_fails_says_what_it_printed(tmp_path):
    failing = tmp_path / "python"
    failing.write_text("#!/bin/sh\necho 'OSError: libggml-cpu.so: cannot open shared object file' >&2\nexit 3\n")
    failing.chmod(0o755)
    result = smoke.run(python=str(failing), timeout=30)
    assert not result.engine_ok and "exit 3" in result.detail and "libggml-cpu.so" in result.detail


def test_the_in_process_engine_refuses_to_load_a_build_that_failed_its_proof(monkeypatch):
    from kgqa.lm import local

    monkeypatch.setattr(smoke, "proven", lambda: None)
    monkeypatch.setattr(smoke, "run", lambda **_: smoke.SmokeResult(False, "the llama.cpp engine died by SIGSEGV ..."))
    with pytest.raises(local.LocalModelError, match="SIGSEGV"):
        local.ensure_engine_runs()


@pytest.fixture(scope="module")
def engine_installed():
    require_local_lm()


def test_the_engine_loads_and_generates_in_a_child_process(engine_installed):
    result = smoke.run(timeout=600)
    assert result.engine_ok, result.detail
    assert result.prompt_tokens >= smoke.PROMPT_TOKENS - 30 and result.generated_tokens == smoke.GENERATED_TOKENS
    assert result.prompt_tokens_per_s > 1 and result.generated_tokens_per_s > 0.5
    assert smoke.proven() is not None  # the in-process engine will not prove it again


def doctor(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "KGQA_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "kgqa", "doctor", *args], capture_output=True, text=True, env=env, timeout=900)


def test_doctor_reports_each_check_and_the_engine_speed(engine_installed, tmp_path):
    done = doctor("--json", home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["engine_ok"] and report["prompt_tokens_per_s"] > 1 and report["generated_tokens_per_s"] > 0.5
    checks = {c["name"]: c for c in report["checks"]}
    assert set(checks) == {"python", "packages", "cpu", "model", "engine", "embedder", "demo-kg", "virtuoso", "mlflow"}
    assert checks["model"]["sha256"] == __import__("kgqa.lm.model", fromlist=["x"]).GGUF_SHA256
    assert checks["cpu"]["host"] == list(build.host_features())
    assert "llama-cpp-python" in checks["packages"]["versions"]


def test_doctor_fails_with_the_fix_when_a_required_check_fails(engine_installed, tmp_path):
    done = doctor(home=Path("/proc/kgqa-cannot-be-made"))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    (mlflow,) = [line for line in lines if line.split()[1] == "mlflow"]
    assert mlflow.startswith("FAIL") and "fix: set KGQA_HOME to a writable folder" in mlflow
    assert any(line.startswith("ok") and " engine " in line and "prompt tok/s" in line for line in lines)
    assert len(lines) == 9  # one line per check
