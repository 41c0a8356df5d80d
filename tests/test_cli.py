"""The `kgqa` command as a user runs it: a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kgqa.data.demo import DEMO_KG


def kgqa(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgqa", *args], capture_output=True, text=True, timeout=300)


def test_kg_load_then_stats_then_compact(tmp_path):
    store = tmp_path / "store"
    loaded = kgqa("kg", "load", str(DEMO_KG), "--store", str(store))
    assert loaded.returncode == 0, loaded.stderr
    assert "profile freebase" in loaded.stdout and "compacted in " in loaded.stdout
    stats = kgqa("kg", "stats", "--store", str(store), "--json")
    assert stats.returncode == 0, stats.stderr
    numbers = json.loads(stats.stdout)
    assert numbers["profile"] == "freebase" and numbers["triples"] > 500 and numbers["relations"] >= 20
    assert numbers["load_seconds"] >= 0 and numbers["compact_seconds"] >= 0 and numbers["relation_index"] is True
    compacted = kgqa("kg", "compact", "--store", str(store))
    assert compacted.returncode == 0 and "compacted in " in compacted.stdout, compacted.stderr
    refused = kgqa("kg", "compact", "--store", str(tmp_path / "none"))  # no store there: refused, not made
    assert refused.returncode != 0 and "no kgqa store" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "none").exists()


def test_user_errors_are_one_line_without_traceback(tmp_path):
    result = kgqa("kg", "stats", "--store", str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and result.stderr.startswith("kgqa: error: no kgqa store")
    result = kgqa("kg", "load", str(tmp_path / "missing.nt"), "--store", str(tmp_path / "s"))
    assert result.returncode == 2 and "no such file" in result.stderr and "Traceback" not in result.stderr


def test_demo_compiles_evaluates_and_answers(tmp_path):
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-m", "kgqa", "demo", "--out", str(tmp_path / "demo"), "--lm", "py:tests.programs.oracle:demo_oracle", "--quiet"],
        capture_output=True, text=True, timeout=600, cwd=root, env={**os.environ, "KGQA_HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "demo" / "program.json").is_file() and (tmp_path / "mlflow.db").is_file()
    assert "demo test (demo:test[0:6])" in result.stdout and "| Hits@1             | 1.000 |" in result.stdout
    assert "Q: Who directed Parasite?\nA: Bong Joon-ho" in result.stdout


def test_ask_exits_non_zero_when_the_lm_stops_answering(tmp_path, demo_store):
    from kgqa.kg import KnowledgeGraph
    from kgqa.programs import KGQA
    from kgqa.programs.saving import save_program

    save_program(KGQA(KnowledgeGraph(demo_store, profile="freebase")), tmp_path / "program", settings={"kg": "demo"})
    result = kgqa("ask", "Who directed Parasite?", "--program", str(tmp_path / "program"), "--lm",
                  "py:tests.programs.oracle:lm_down_after_check")
    assert result.returncode == 1 and "answers:" not in result.stdout
    assert "no answer (lm_error): the LM scripted/kgqa did not answer: ConnectionRefusedError" in result.stderr


def test_walk_options_reach_the_walk_config():
    from kgqa.cli import _walk_config, build_parser

    args = build_parser().parse_args(["ask", "who directed Heat", "--program", "p", "--topic-choice", "--off", "memory_update", "--depth", "2",
                                      "--scorer-sure", "0.8"])
    config = _walk_config(args)
    assert config.topic_choice and not config.memory_update and config.depth == 2 and config.scorer_sure == 0.8
    with pytest.raises(ValueError, match="scorer_sure must be between 0 and 1"):
        _walk_config(build_parser().parse_args(["ask", "q?", "--program", "p", "--scorer-sure", "2"]))
    assert not _walk_config(build_parser().parse_args(["ask", "who directed Heat", "--program", "p"])).topic_choice  # off by default
