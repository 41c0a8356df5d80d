"""`kgqa serve` as an operator runs it: a real server started as a subprocess on a saved program,
under a scripted LM that takes half a second a call and logs which question each call served.
Bounded requests, abandoned work cancelled, clean stops, health, an LM that is down."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kgqa.kg import KnowledgeGraph
from kgqa.lm.served import free_port
from kgqa.programs import KGQA
from kgqa.programs.saving import save_program
from tests.conftest import ROOT

LOGGED = "py:tests.programs.oracle:logged_demo_oracle"
BATCH, PROBE = "Who directed Parasite?", "Who directed the film 1941?"


@pytest.fixture(scope="module")
def program(tmp_path_factory, demo_store) -> Path:
    directory = tmp_path_factory.mktemp("served") / "program"
    save_program(KGQA(KnowledgeGraph(demo_store, profile="freebase")), directory, settings={"kg": "demo", "lm": LOGGED})
    return directory


class Served:
    """A `kgqa serve` subprocess; `calls()` are the questions its LM was called for, in order."""

    def __init__(self, program: Path, tmp: Path, *args: str, delay: float = 0.5) -> None:
        self.port, self.log = free_port(), tmp / f"lm-calls-{time.monotonic_ns()}.jsonl"
        self.base = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "KGQA_HOME": str(tmp), "PYTHONPATH": str(ROOT), "KGQA_TEST_LM_LOG": str(self.log),
               "KGQA_TEST_LM_DELAY": str(delay)}
        self.process = subprocess.Popen([sys.executable, "-m", "kgqa", "serve", "--program", str(program), "--port", str(self.port),
                                         "-v", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.output: list[str] = []
        threading.Thread(target=lambda: self.output.extend(line.decode(errors="replace") for line in self.process.stdout),
                         daemon=True).start()
        deadline = time.monotonic() + 240
        while not self.up():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the server did not start: {''.join(self.output)[-3000:]}")
            time.sleep(0.5)

    def up(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/ping", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def calls(self) -> list[str]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def post(self, body: bytes | dict, *, timeout: float = 120) -> tuple[int, dict, int]:
        """(status, JSON body, body size) of POST /invocations."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base}/invocations", data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
                return response.status, json.loads(raw), len(raw)
        except urllib.error.HTTPError as error:
            raw = error.read()
            return error.code, json.loads(raw or b"{}"), len(raw)

    def get(self, path: str) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(f"{self.base}{path}", timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def stop(self, sig: int = signal.SIGTERM) -> float:
        """Send SIG; the seconds until the process exited."""
        start = time.monotonic()
        self.process.send_signal(sig)
        self.process.wait(timeout=60)
        return time.monotonic() - start

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def served(program, tmp_path):
    started: list[Served] = []

    def start(*args: str, delay: float = 0.5) -> Served:
        started.append(Served(program, tmp_path, *args, delay=delay))
        return started[-1]

    yield start
    for server in started:
        server.close()


def port_is_free(port: int) -> bool:
    """Nothing listens on PORT and a new server can bind it (as servers do, with SO_REUSEADDR: the
    connections the stop closed may linger in TIME_WAIT)."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            return False
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
            return True
        except OSError:
            return False


def test_requests_are_bounded_and_errors_never_echo_the_input(served):
    server = served("--max-questions", "4", "--max-body", "100000", delay=0.0)
    status, body, size = server.post(b'{"inputs": ["' + b"x" * 200_000 + b'"]}')
    assert (status, body["error_code"]) == (413, "BODY_TOO_LARGE") and "limit 100,000" in body["message"] and size < 300
    status, body, size = server.post({"inputs": [BATCH] * 5})
    assert (status, body["error_code"]) == (413, "TOO_MANY_QUESTIONS") and "limit 4" in body["message"] and size < 300
    status, body, size = server.post({"inputs": ["y" * 90_000]})
    assert status == 400 and "90,000 characters long" in body["message"] and size < 300
    status, body, _ = server.post({"inputs": [BATCH], "z" * 5000: 1})
    assert status == 400 and body["message"].startswith("unknown fields: 'zzz") and len(body["message"]) < 100
    status, body, _ = server.post(b"{not json")
    assert status == 400 and body["error_code"] == "BAD_REQUEST"
    status, body, _ = server.post({"inputs": [BATCH, {"question": PROBE}]})
    assert status == 200 and [p["answers"] for p in body["predictions"]] == [["Bong Joon-ho"], ["Steven Spielberg"]]


def test_health_says_the_lm_and_the_kg_answer(served):
    server = served(delay=0.0)
    status, body = server.get("/health")
    assert status == 200 and body["status"] == "ok" and body["lm"]["ok"] and body["kg"]["ok"] and body["kg"]["name"] == "demo"
    assert body["requests"] == {"running": 0, "waiting": 0} and "seconds" in body["lm"] and server.calls() == []  # a probe, no question


def test_a_request_past_its_deadline_is_cut_and_starts_nothing_more(served):
    # the deadline falls inside the first question's first LLM call (a question takes two): whatever the
    # machine's speed, the question is cut at its next call (a deadline inside a question's last call
    # would let that question finish, and only the ones after it go unstarted)
    server = served("--timeout", "1", delay=2.0)
    start = time.monotonic()
    status, body, _ = server.post({"inputs": [BATCH] * 10})
    waited = time.monotonic() - start
    assert status == 504 and body["error_code"] == "DEADLINE_EXCEEDED" and "1 s deadline passed" in body["message"]
    assert waited < 4 and len(body["predictions"]) == 1 and "1 of 10 questions were begun" in body["message"]
    cut = body["predictions"][0]
    assert cut["trace"]["stop_reason"] == "cut" and "deadline passed" in cut["trace"]["error"] and cut["answers"] == []
    time.sleep(2.5)  # longer than an LLM call: none starts after the cut
    assert server.calls() == [BATCH]  # the first question's first call, nothing after it
    status, health = server.get("/health")  # the server is idle and its LM answers (a probe, not a question)
    assert status == 200 and health["status"] == "ok" and health["requests"] == {"running": 0, "waiting": 0}


def test_a_client_that_goes_away_stops_its_batch_and_the_next_request_is_answered_promptly(served):
    server = served()
    with pytest.raises(OSError):  # the client gives up after 1.5 s of a ~10 s batch and closes its connection
        server.post({"inputs": [BATCH] * 10}, timeout=1.5)
    start = time.monotonic()
    status, body, _ = server.post({"inputs": [PROBE]})
    assert status == 200 and body["predictions"][0]["answers"] == ["Steven Spielberg"]
    assert time.monotonic() - start < 3.5  # the abandoned batch's last LLM call (0.5 s), then this question (~1 s)
    time.sleep(1.5)
    calls = server.calls()
    abandoned = [q for q in calls if q == BATCH]
    assert len(abandoned) <= 6 and calls[-1] == PROBE  # ~2 questions of the 10, and none after the probe
    assert any("499 CLIENT_GONE: 10 questions" in line for line in server.output), "".join(server.output)[-2000:]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_cuts_the_running_batch_and_frees_the_port_within_seconds(served, sig):
    server = served()
    answer: dict = {}
    client = threading.Thread(target=lambda: answer.update(zip(("status", "body", "size"), server.post({"inputs": [BATCH] * 10}))))
    client.start()
    time.sleep(2.0)
    seconds = server.stop(sig)
    client.join(timeout=10)
    assert server.process.returncode == 0 and seconds < 5, "".join(server.output)[-2000:]
    assert port_is_free(server.port)
    assert answer["status"] == 503 and answer["body"]["error_code"] == "STOPPING"
    assert "the server is stopping" in answer["body"]["message"] and 1 <= len(answer["body"]["predictions"]) < 10
    last = answer["body"]["predictions"][-1]["trace"]  # the question running at the stop finished, or was cut at its next step
    assert last["stop_reason"] == "chosen" or (last["stop_reason"] == "cut" and "the server is stopping" in last["error"])
    assert "stopped" in "".join(server.output)


def test_an_lm_that_is_down_gets_503_with_the_reason_and_the_server_stays_up(served):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    server = served("--lm", "openai/kgqa-local", "--api-base", dead, delay=0.0)
    status, body, _ = server.post({"inputs": [BATCH, PROBE]})
    assert status == 503 and body["error_code"] == "LM_UNAVAILABLE" and f"{dead}/chat/completions did not answer" in body["message"]
    assert len(body["predictions"]) == 1 and body["predictions"][0]["answers"] == []  # the second question was not started
    assert body["predictions"][0]["trace"]["stop_reason"] == "lm_error"
    status, health = server.get("/health")
    assert status == 503 and health["status"] == "unavailable" and not health["lm"]["ok"] and health["kg"]["ok"]
    assert "ConnectError" in health["lm"]["detail"] and server.up()


def test_a_graph_that_is_down_gets_503_and_health_says_so(served):
    dead = f"http://127.0.0.1:{free_port()}/sparql"
    server = served("--kg", dead, "--profile", "freebase", delay=0.0)
    status, body, _ = server.post({"inputs": [BATCH]})
    assert status == 503 and body["error_code"] == "KG_UNAVAILABLE" and dead in body["message"]
    status, health = server.get("/health")
    assert status == 503 and health["lm"]["ok"] and not health["kg"]["ok"] and dead in health["kg"]["detail"]


def test_concurrent_clients_are_all_answered(served):
    """Short requests from four clients at once: every one answered, none lost."""
    server = served(delay=0.0)
    results: list[int] = []

    def client() -> None:
        for _ in range(5):
            results.append(server.post({"inputs": [PROBE]})[0])

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert results == [200] * 20


def test_warming_up_loads_the_embedder_and_the_chain_prior_before_the_first_request(embedded_demo_kg):
    import dspy

    from kgqa.programs.chains import ChainPrior
    from kgqa.server import Answering

    program = KGQA(embedded_demo_kg)
    program.chain_prior = ChainPrior.fit([("Who directed Parasite?", [["film.film.directed_by"]])])
    answering = Answering(program, lm=dspy.utils.DummyLM([]), adapter=dspy.JSONAdapter(), kg=embedded_demo_kg)
    assert program.chain_prior._vectors is None
    answering.warm_up()
    assert program.chain_prior._vectors is not None and len(program.chain_prior._vectors) == 1
