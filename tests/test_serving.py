"""A compiled program as an MLflow model: registered by `kgqa compile --register`, loaded by URI,
served over HTTP by a real server started as a subprocess, under a scripted LM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kgqa.lm.served import free_port
from tests.conftest import ROOT, run_kgqa

ORACLE = "py:tests.programs.oracle:demo_oracle"


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    home = tmp_path_factory.mktemp("serving")
    result = run_kgqa("compile", "--train", "demo:train[0:4]", "--kg", "demo", "--optimizer", "bootstrap", "--lm", ORACLE,
                  "--out", str(home / "program"), "--register", "kgqa-demo", "--quiet", home=home)
    assert result.returncode == 0, result.stderr
    return home


def test_compile_registers_a_model_that_loads_by_uri(registered):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{registered / 'mlflow.db'}")
    client = mlflow.MlflowClient()
    (version,) = client.search_model_versions("name='kgqa-demo'")
    client.set_registered_model_alias("kgqa-demo", "champion", version.version)
    for uri in ("models:/kgqa-demo/1", "models:/kgqa-demo@champion"):
        result = run_kgqa("ask", "Who directed Parasite?", "--program", uri, "--lm", ORACLE, "--json", home=registered)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["answers"] == ["Bong Joon-ho"]
    model_dir = Path(mlflow.artifacts.download_artifacts("models:/kgqa-demo/1"))
    assert {p.name for p in (model_dir / "artifacts" / "program").iterdir()} >= {"program.json", "config.json"}
    assert not list(model_dir.rglob("*.pkl"))  # the model is code and JSON: nothing pickled
    missing = run_kgqa("ask", "q?", "--program", "models:/no-such-model/1", "--lm", ORACLE, home=registered)
    assert missing.returncode == 2 and "cannot fetch the model models:/no-such-model/1" in missing.stderr


def _post(url: str, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@pytest.fixture(scope="module")
def server(registered):
    port = free_port()
    env = {**os.environ, "KGQA_HOME": str(registered), "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "kgqa", "serve", "--program", "models:/kgqa-demo/1", "--port", str(port)],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                with urllib.request.urlopen(f"{base}/ping", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the server did not start: {process.stdout.read().decode()[-3000:]}")
            time.sleep(1)
        yield f"{base}/invocations"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)  # stop it by its PID (and the workers it started)
        process.wait(timeout=60)


def test_the_server_answers_questions(server):
    status, body = _post(server, json.dumps({"inputs": [{"question": "Who directed Parasite?"}, "Who directed the film 1941?"]}).encode())
    assert status == 200, body
    first, second = body["predictions"]
    assert first["answers"] == ["Bong Joon-ho"] and first["paths"][0].startswith("# Reasoning Path:\nParasite -> ")
    assert first["trace"]["stop_reason"] == "chosen" and second["answers"] == ["Steven Spielberg"]


@pytest.mark.parametrize("body,message", [
    (json.dumps({"inputs": []}).encode(), "no question"),
    (json.dumps({"inputs": [{"topic_entities": ["m.0dm159"]}]}).encode(), "`question` must be a non-empty string"),
    (json.dumps({"inputs": [{"question": 5}]}).encode(), "`question` must be a non-empty string"),
    (json.dumps({"inputs": [{"question": "Who?", "topic_entities": "m.0dm159"}]}).encode(), "must be a list of strings"),
    (json.dumps({"inputs": [{"question": "x" * 1_000_000}]}).encode(), "characters long"),
    (b"{not json", ""),
])
def test_bad_requests_get_a_4xx_and_the_server_keeps_serving(server, body, message):
    status, answer = _post(server, body)
    assert 400 <= status < 500 and message in json.dumps(answer)
    status, again = _post(server, json.dumps({"inputs": ["Who directed Parasite?"]}).encode())
    assert status == 200 and again["predictions"][0]["answers"] == ["Bong Joon-ho"]
