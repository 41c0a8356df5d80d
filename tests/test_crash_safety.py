"""`kgqa evaluate` killed with SIGKILL mid-run, then rerun: no record lost, none duplicated, and the
summary equals an uninterrupted run's. Two runs on one records file: the second is refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ASKED = 10  # demo test questions a run asks: each a few seconds of sentence encoding on a slow CPU


def command(program: Path, out: Path, lm: str) -> list[str]:
    return [sys.executable, "-m", "kgqa", "evaluate", "--program", str(program), "--data", f"demo:test[0:{ASKED}]",
            "--lm", lm, "--out", str(out), "--quiet"]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def summary_of(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("| ") and "seconds" not in line and "s / q" not in line]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, dict]:
    home = tmp_path_factory.mktemp("home")
    env = {**os.environ, "KGQA_HOME": str(home)}
    program = home / "program"
    made = subprocess.run(
        [sys.executable, "-m", "kgqa", "compile", "--train", "demo:train[0:2]", "--kg", "demo", "--optimizer", "none",
         "--lm", "py:tests.programs.oracle:demo_oracle", "--out", str(program), "--quiet"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )
    assert made.returncode == 0, made.stderr
    return program, env


def wait_for_records(path: Path, count: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not path.exists() or len(path.read_bytes().splitlines()) < count):
        time.sleep(0.05)


def test_sigkill_mid_run_then_resume(compiled, tmp_path):
    program, env = compiled

    whole = subprocess.run(command(program, tmp_path / "whole.jsonl", "py:tests.programs.oracle:demo_oracle"),
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert whole.returncode == 0, whole.stderr

    killed_out = tmp_path / "killed.jsonl"
    process = subprocess.Popen(command(program, killed_out, "py:tests.programs.oracle:slow_demo_oracle"),
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_records(killed_out, 5)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    partial = killed_out.read_bytes().splitlines()
    assert 5 <= len(partial) < ASKED

    resumed = subprocess.run(command(program, killed_out, "py:tests.programs.oracle:demo_oracle"),
                             capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    after = records(killed_out)
    ids = [r["id"] for r in after]
    assert len(ids) == len(set(ids)) == ASKED  # nothing lost, nothing twice
    assert sorted(ids) == sorted(r["id"] for r in records(tmp_path / "whole.jsonl"))
    assert summary_of(resumed.stdout) == summary_of(whole.stdout)


def test_a_second_evaluation_on_the_same_records_is_refused_naming_the_first(compiled, tmp_path):
    program, env = compiled
    out = tmp_path / "records.jsonl"
    first = subprocess.Popen(command(program, out, "py:tests.programs.oracle:slow_demo_oracle"), cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_records(out, 2)
    second = subprocess.run(command(program, out, "py:tests.programs.oracle:demo_oracle"),
                            capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert second.returncode != 0
    refusal = [line for line in second.stderr.splitlines() if line.strip()]
    assert refusal == [f"kgqa: error: {out} is being written by another evaluation (pid {first.pid}): let it finish "
                       "(a rerun then asks only what is left), or give another --out"]
    _, errors = first.communicate(timeout=300)
    assert first.returncode == 0, errors
    ids = [r["id"] for r in records(out)]
    assert len(ids) == len(set(ids)) == ASKED  # every question once: the second asked none
    assert not out.with_name(out.name + ".lock").exists()
