"""compile -> program.json -> evaluate -> resume -> ask, as a user runs them, under a scripted LM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORACLE = "py:tests.programs.oracle:demo_oracle"


def kgqa(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "KGQA_HOME": str(home), "OPENAI_API_KEY": "sk-not-a-real-key"}
    return subprocess.run([sys.executable, "-m", "kgqa", *args], capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    work = tmp_path_factory.mktemp("workflow")
    out = work / "program"
    result = kgqa(
        "compile", "--train", "demo:train[0:6]", "--dev", "demo:dev[0:4]", "--kg", "demo",
        "--optimizer", "bootstrap", "--lm", ORACLE, "--out", str(out), "--quiet", home=work,
    )
    assert result.returncode == 0, result.stderr
    return work, out, result.stdout


def test_compile_writes_program_config_and_an_mlflow_run(compiled):
    work, out, stdout = compiled
    state = json.loads((out / "program.json").read_text())
    assert state["plan.predict"]["demos"] and all(d["hop_targets"] for d in state["plan.predict"]["demos"])  # gold plans from the demo paths
    config = json.loads((out / "config.json").read_text())
    assert config["kg"] == "demo" and config["profile"] == "freebase" and config["optimizer"] == "bootstrap"
    assert config["lm"] == ORACLE and config["walk"]["depth"] == 3 and "dspy" in config["versions"]
    assert "dev, before compiling" in stdout and "dev, after compiling" in stdout
    assert config["compile_seconds"] > 0 and f"compiled in {config['compile_seconds']} s" in stdout
    scorer = json.loads((out / "path_scorer.json").read_text())  # the path scorer, fitted on the teacher's walks
    assert 1 <= scorer["report"]["questions"] <= 6 and (out / "path_scorer.safetensors").is_file()

    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{work / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["kgqa"])
    run = runs[runs["tags.mlflow.runName"] == "compile bootstrap"].iloc[0]
    assert run["params.optimizer"] == "bootstrap" and run["metrics.dev_after_hits1"] == 1.0
    assert "metrics.dev_before_hits1" in runs and run["metrics.compile_seconds"] == config["compile_seconds"]
    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(run["run_id"])}
    assert {"program.json", "config.json", "chains.json", "path_scorer.json", "path_scorer.safetensors"} <= artifacts
    assert run["metrics.scorer_questions"] == scorer["report"]["questions"] and run["metrics.scorer_fit_seconds"] > 0


def test_compile_fits_the_path_scorer_and_the_switch_or_zero_questions_leave_it_out(tmp_path):
    out = tmp_path / "program"
    result = kgqa("compile", "--train", "demo:train", "--kg", "demo", "--optimizer", "bootstrap", "--scorer-questions", "5",
                  "--lm", ORACLE, "--out", str(out), home=tmp_path)
    assert result.returncode == 0, result.stderr
    for bar in ("gold paths: 100%", "bootstrap:", "teacher walks:", "path scorer, epoch 1 of 2: 100%", "path scorer, epoch 2 of 2: 100%"):
        assert bar in result.stderr  # the long parts show their progress (not --quiet)
    assert 1 <= json.loads((out / "path_scorer.json").read_text())["report"]["questions"] <= 5
    assert (out / "path_scorer.safetensors").is_file()
    asked = kgqa("ask", "--program", str(out), "--kg", "demo", "--lm", ORACLE, "--json", "Who directed Parasite?", home=tmp_path)
    assert asked.returncode == 0 and json.loads(asked.stdout)["trace"]["path_scorer"] is True, asked.stderr
    off = kgqa("ask", "--program", str(out), "--kg", "demo", "--lm", ORACLE, "--json", "--off", "path_scorer",
               "Who directed Parasite?", home=tmp_path)
    assert off.returncode == 0 and json.loads(off.stdout)["trace"]["path_scorer"] is False, off.stderr
    none = kgqa("compile", "--train", "demo:train", "--kg", "demo", "--optimizer", "bootstrap", "--scorer-questions", "0",
                "--lm", ORACLE, "--out", str(out), "--quiet", home=tmp_path)
    assert none.returncode == 0 and not (out / "path_scorer.json").exists(), none.stderr


def test_evaluate_writes_records_as_it_goes_and_resumes(compiled):
    work, out, _ = compiled
    preds = work / "preds.jsonl"
    first = kgqa("evaluate", "--program", str(out), "--data", "demo:test", "--lm", ORACLE, "--out", str(preds),
                 "--limit", "5", "--quiet", home=work)
    assert first.returncode == 0, first.stderr
    records = [json.loads(line) for line in preds.read_text().splitlines()]
    assert len(records) == 5
    record = records[0]
    assert set(record) >= {"id", "question", "gold", "prediction", "answers", "trace", "error"}
    assert record["prediction"].startswith("# Reasoning Path:\n") and "\n# Answer:\n" in record["prediction"]
    assert record["trace"]["llm_calls"] > 0 and record["error"] is None

    again = kgqa("evaluate", "--program", str(out), "--data", "demo:test", "--lm", ORACLE, "--out", str(preds),
                 "--quiet", home=work)
    assert again.returncode == 0, again.stderr
    ids = [json.loads(line)["id"] for line in preds.read_text().splitlines()]
    assert len(ids) == 22 == len(set(ids)) and ids[:5] == [r["id"] for r in records]  # the first five were not redone
    assert "| questions          | 22 |" in again.stdout and "| Hits@1             | 1.000 |" in again.stdout


def test_ask_prints_answers_with_paths(compiled):
    work, out, _ = compiled
    result = kgqa("ask", "Who directed the film 1941?", "--program", str(out), "--lm", ORACLE, home=work)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("answers: Steven Spielberg\n# Reasoning Path:\n1941 -> film.film.directed_by -> Steven Spielberg")
    as_json = kgqa("ask", "Who directed Parasite?", "--program", str(out), "--lm", ORACLE, "--json", home=work)
    answer = json.loads(as_json.stdout)
    assert answer["answers"] == ["Bong Joon-ho"] and answer["trace"]["stop_reason"] == "chosen"
    page = work / "parasite.html"
    drawn = kgqa("ask", "Who directed Parasite?", "--program", str(out), "--lm", ORACLE, "--html", str(page), home=work)
    assert drawn.returncode == 0, drawn.stderr
    assert 'data-label="Bong Joon-ho"' in page.read_text() and 'data-relation="film.film.directed_by"' in page.read_text()


def test_ask_says_why_there_is_no_answer_and_exits_non_zero(compiled):
    work, out, _ = compiled
    unknown = kgqa("ask", "Who directed it?", "--program", str(out), "--lm", ORACLE, "--topic", "m.0nothere", home=work)
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert "no answer (no_topic_entity): unknown topic entities: 'm.0nothere'" in unknown.stderr
    down = kgqa("ask", "Who directed Parasite?", "--program", str(out), "--lm", ORACLE, "--kg", "http://127.0.0.1:9/sparql",
                "--profile", "freebase", "--topic", "m.0dm159", home=work)
    assert down.returncode == 1 and "no answer (kg_error)" in down.stderr and "127.0.0.1:9" in down.stderr
    as_json = kgqa("ask", "  ", "--program", str(out), "--lm", ORACLE, "--json", home=work)
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["trace"]["stop_reason"] == "bad_question"


@pytest.mark.parametrize(
    "args,message",
    [
        (["ask", "q?", "--program", "/nonexistent"], "no config.json in /nonexistent"),
        (["evaluate", "--program", "/nonexistent", "--data", "demo:test", "--out", "x.jsonl"], "no config.json"),
        (["compile", "--train", "nope:x", "--kg", "demo", "--out", "o"], "bad data spec 'nope:x'"),
        (["compile", "--train", "demo:train", "--kg", "bogus", "--out", "o", "--lm", ORACLE], "bad KG spec 'bogus'"),
        (["compile", "--train", "metaqa:/missing.txt", "--kg", "demo", "--out", "o"], "no such file: /missing.txt"),
        (["compile", "--train", "demo:train", "--kg", "http://127.0.0.1:9/sparql", "--out", "o", "--lm", "openai/x", "--api-base", "http://127.0.0.1:9/v1"],
         "LM 'openai/x' did not answer"),
        (["compile", "--train", "demo:train", "--kg", "demo", "--out", "o", "--lm", "nonsense"], "bad LM spec 'nonsense'"),
    ],
)
def test_user_errors_are_one_clear_line(tmp_path, args, message):
    result = kgqa(*args, home=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_a_path_the_user_gave_that_cannot_be_written_is_one_clear_line(compiled):
    work, out, _ = compiled
    result = kgqa("ask", "Who directed Parasite?", "--program", str(out), "--lm", ORACLE, "--html", "/proc/no/such/dir/walk.html", home=work)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]  # (the embedder's loading bar may come before it)
    assert last.startswith("kgqa: error: ") and "/proc/no/such/dir/walk.html" in last


def test_question_answer_pairs_over_a_sparql_endpoint_compile_the_whole_program(tmp_path, virtuoso_server):
    """A user's own data: rows of question, answers and topic entities (no paths), the graph on Virtuoso."""
    from kgqa.data.demo import split_path

    rows = [json.loads(line) for line in split_path("train").read_text().splitlines() if line.strip()]
    train = tmp_path / "pairs.jsonl"
    train.write_text("".join(json.dumps({k: row[k] for k in ("id", "question", "answers", "topic_entities")}) + "\n" for row in rows))
    out = tmp_path / "program"
    result = kgqa("compile", "--train", f"jsonl:{train}", "--kg", virtuoso_server.url, "--profile", "freebase",
                  "--optimizer", "bootstrap", "--lm", ORACLE, "--out", str(out), "--quiet", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"gold paths for {len(rows)} of {len(rows)} training questions: 0 given by the data" in result.stdout
    config = json.loads((out / "config.json").read_text())
    assert config["path_labels"] == {"given": 0, "found": len(rows), "none": 0}
    state = json.loads((out / "program.json").read_text())
    assert {1, 2} <= {len(d["hop_targets"]) for d in state["plan.predict"]["demos"]}  # gold plans of more than one length
    assert state["extract_answers.predict"]["demos"] and state["check_sufficiency.predict"]["demos"]
    scorer = json.loads((out / "path_scorer.json").read_text())  # the path scorer, fitted on the found paths' walks
    assert scorer["report"]["questions"] >= len(rows) // 2 and (out / "chains.json").is_file()
    asked = kgqa("ask", "--program", str(out), "--lm", ORACLE, "--json", "Who directed Parasite?", home=tmp_path)
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout)["answers"][:1] == ["Bong Joon-ho"]
