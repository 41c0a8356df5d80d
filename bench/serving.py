"""`kgqa serve` under load and under faults, on the local LM, as an operator would run it.

Load: the server (a `kgqa serve` subprocess) on a compiled demo program, its LM in process
(`--lm local`) or behind `llama_cpp.server` (`--lm openai/kgqa-local`); N clients (1, 4, 16) send
one-question requests until `--questions` are answered. Per run: throughput, p50/p95 latency,
errors and lost answers (a request with no response, or a 200 without its prediction), and the
p95 against the queue's bound: with N clients a request waits for the N-1 ahead of it, so p95
should stay within 1.5x of N x the single-client median.

Faults, with the LM behind `llama_cpp.server`, 4 clients:
- lm-killed: the LM server is SIGKILLed after a quarter of the questions are answered; every
  request must still get a response (200, or 503 LM_UNAVAILABLE), the server must stay up, and
  once the LM is restarted the next questions are answered again.
- kg-down: the program's graph is a real Virtuoso endpoint, stopped by PID after a quarter.
- client-gone: one client sends a batch of 8 questions and goes away after 3 s; another sends one
  question at once; its latency and the server's log show the batch was cut, not finished.
Every run checks the server still answers /ping, and ends it with SIGTERM, timing the stop.

Requests (`--runs requests`), on the local LM in process with `--timeout 30`: malformed requests,
8 concurrent questions, a 1 MB question, a 60 MB body, 300 questions in one request, 16 questions
that outlast the timeout (and whether the server goes on working after its 504), and SIGTERM
while a batch runs: each row's status, response size and seconds.

    .venv/bin/python -m bench.serving [--questions 16] [--clients 1,4,16] [--runs load,faults]

Writes `results-RUNS.json` and `table-RUNS.md` to `--out`; the engine speed (`python -m kgqa.lm.smoke`) is
measured first: quote the numbers with it.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

import httpx  # noqa: E402

from kgqa.lm import smoke  # noqa: E402
from kgqa.lm.served import LOCAL_ALIAS, free_port, start_llama_server, stop_process_group, wait_until_answering  # noqa: E402
from kgqa.specs import load_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "serving-local"


class Server:
    """`kgqa serve` as a subprocess; its output is kept (the request log)."""

    def __init__(self, program: Path, *args: str, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.process = subprocess.Popen([sys.executable, "-m", "kgqa", "serve", "--program", str(program), "--port", str(self.port),
                                         "-v", *args], cwd=ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONPATH": str(ROOT)})
        wait_until_answering(f"{self.url}/ping", self.process, what="kgqa serve")

    def up(self) -> bool:
        try:
            return httpx.get(f"{self.url}/ping", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> dict:
        """SIGTERM; how long it took, the exit status, and whether the port is free after."""
        start = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            status = "killed after 60 s"
        return {"stop_seconds": round(time.monotonic() - start, 2), "exit_status": status, "port_free": not self.up()}


class LMServer:
    """The local model behind `llama_cpp.server`, a subprocess this bench may kill."""

    def __init__(self, *, threads: int, log: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.api_base = f"http://127.0.0.1:{self.port}/v1"
        self.process = start_llama_server(port=self.port, threads=threads, log=log)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        stop_process_group(self.process, sig=sig)


def drive(url: str, questions: list[str], *, clients: int, on_response=None) -> dict:
    """`clients` threads send one-question requests until every question is sent; per request its
    status, error code and seconds. `on_response(count)` is called after each response."""
    todo: queue.SimpleQueue = queue.SimpleQueue()
    for question in questions:
        todo.put(question)
    results: list[dict] = []
    lock = threading.Lock()

    def client() -> None:
        with httpx.Client(timeout=900) as http:
            while True:
                try:
                    question = todo.get_nowait()
                except queue.Empty:
                    return
                start = time.monotonic()
                try:
                    reply = http.post(f"{url}/invocations", json={"inputs": [question]})
                    body = reply.json()
                    result = {"status": reply.status_code, "code": body.get("error_code"),
                              "answered": reply.status_code == 200 and len(body.get("predictions", [])) == 1}
                except (httpx.HTTPError, ValueError) as exc:
                    result = {"status": None, "code": type(exc).__name__, "answered": False}
                result["seconds"] = time.monotonic() - start
                with lock:
                    results.append(result)
                    count = len(results)
                if on_response:
                    on_response(count)

    start = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - start
    seconds = sorted(r["seconds"] for r in results)
    codes: dict[str, int] = {}
    for r in results:
        if r["status"] != 200:
            codes[f"{r['status']} {r['code']}"] = codes.get(f"{r['status']} {r['code']}", 0) + 1
    return {"clients": clients, "questions": len(questions), "responses": sum(r["status"] is not None for r in results),
            "answered": sum(r["answered"] for r in results), "errors": codes,
            "lost": len(questions) - sum(r["status"] is not None for r in results) + sum(r["status"] == 200 and not r["answered"] for r in results),
            "wall_s": round(wall, 1), "per_minute": round(60 * len(results) / wall, 2),
            "p50_s": round(statistics.median(seconds), 2), "p95_s": round(_percentile(seconds, 0.95), 2)}


def _percentile(values: list[float], share: float) -> float:
    return values[min(len(values) - 1, max(0, round(share * len(values) + 0.5) - 1))]


def load_runs(program: Path, questions: list[str], *, clients: list[int], threads: int, out: Path) -> list[dict]:
    rows = []
    for lm in ("local", "llama_cpp.server"):
        lm_server = LMServer(threads=threads, log=out / "llama-server.log") if lm != "local" else None
        lm_args = ("--lm", "local") if lm_server is None else ("--lm", f"openai/{LOCAL_ALIAS}", "--api-base", lm_server.api_base)
        server = Server(program, *lm_args, "--timeout", "900", log=out / f"serve-{lm.replace('.', '-')}.log")
        try:
            drive(server.url, questions[:1], clients=1)  # the first question loads the model: not timed
            single = None
            for n in clients:
                row = {"run": "load", "lm": lm, **drive(server.url, questions, clients=n)}
                single = single or row["p50_s"]
                row["p95_bound_s"] = round(n * single, 2)  # N-1 requests ahead, then its own
                row["p95_over_bound"] = round(row["p95_s"] / row["p95_bound_s"], 2)
                row["server_up"] = server.up()
                rows.append(row)
                print(_line(row), flush=True)
        finally:
            stopped = server.stop()
            if lm_server:
                lm_server.kill(signal.SIGTERM)
        rows[-1].update(stopped)
    return rows


def fault_runs(program: Path, questions: list[str], *, threads: int, out: Path) -> list[dict]:
    rows = []
    lm_server = LMServer(threads=threads, log=out / "llama-server.log")
    lm_args = ("--lm", f"openai/{LOCAL_ALIAS}", "--api-base", lm_server.api_base)
    server = Server(program, *lm_args, "--timeout", "900", log=out / "serve-faults.log")
    try:
        drive(server.url, questions[:1], clients=1)
        quarter = max(1, len(questions) // 4)
        killed = threading.Event()

        def kill_lm(count: int) -> None:
            if count == quarter and not killed.is_set():
                killed.set()
                lm_server.kill()

        row = {"run": "lm-killed", "lm": "llama_cpp.server", **drive(server.url, questions, clients=4, on_response=kill_lm)}
        row["server_up"] = server.up()
        lm_server = LMServer(threads=threads, log=out / "llama-server.log", port=lm_server.port)  # restarted where it was
        after = drive(server.url, questions[:4], clients=1)
        row["after_restart"] = f"{after['answered']}/{after['questions']} answered"
        rows.append(row)
        print(_line(row), flush=True)

        with open(server.log, "rb") as log:
            log.seek(0, 2)
            mark = log.tell()
        batch: dict = {}

        def walk_away() -> None:
            try:
                httpx.post(f"{server.url}/invocations", json={"inputs": questions[:8]}, timeout=3)
            except httpx.HTTPError as exc:
                batch["client"] = f"gave up: {type(exc).__name__}"

        leaving = threading.Thread(target=walk_away)
        leaving.start()
        time.sleep(0.2)
        row = {"run": "client-gone", "lm": "llama_cpp.server", **drive(server.url, questions[8:9], clients=1)}
        leaving.join()
        time.sleep(1)
        cut = [line for line in server.log.read_bytes()[mark:].decode(errors="replace").splitlines() if "CLIENT_GONE" in line]
        row["abandoned_batch"] = (cut[0].split("CLIENT_GONE: ")[-1] if cut else "no 499 in the log") + f"; client {batch.get('client')}"
        row["server_up"] = server.up()
        rows.append(row)
        print(_line(row), flush=True)
    finally:
        stopped = server.stop()
    rows[-1].update(stopped)
    try:
        rows.append(kg_down_run(program, questions, lm_args=lm_args, out=out))
    finally:
        lm_server.kill(signal.SIGTERM)
    return rows


def kg_down_run(program: Path, questions: list[str], *, lm_args: tuple, out: Path) -> dict:
    from kgqa.data.demo import DEMO_KG
    from kgqa.kg import virtuoso

    if not virtuoso.available():
        return {"run": "kg-down", "skipped": "virtuoso-t is not installed"}
    endpoint = virtuoso.LocalVirtuoso.start(out / "virtuoso", [DEMO_KG])
    server = Server(program, *lm_args, "--kg", endpoint.url, "--profile", "freebase", "--timeout", "900", log=out / "serve-kg-down.log")
    try:
        quarter = max(1, len(questions) // 4)

        def stop_kg(count: int) -> None:
            if count == quarter:
                endpoint.stop()

        row = {"run": "kg-down", "lm": "llama_cpp.server", **drive(server.url, questions, clients=4, on_response=stop_kg)}
        row["server_up"] = server.up()
    finally:
        endpoint.stop()
        stopped = server.stop()
    row.update(stopped)
    print(_line(row), flush=True)
    return row


def request_runs(program: Path, questions: list[str], *, out: Path) -> list[dict]:
    server = Server(program, "--lm", "local", "--timeout", "30", log=out / "serve-requests.log")
    rows = []

    def send(what: str, body: bytes | dict, *, timeout: float = 900) -> dict:
        start = time.monotonic()
        try:
            reply = httpx.post(f"{server.url}/invocations", content=body if isinstance(body, bytes) else json.dumps(body).encode(),
                               headers={"Content-Type": "application/json"}, timeout=timeout)
            got = {"status": reply.status_code, "code": reply.json().get("error_code", ""), "bytes": len(reply.content),
                   "begun": len(reply.json().get("predictions", []))}
        except (httpx.HTTPError, ValueError) as exc:
            got = {"status": None, "code": type(exc).__name__, "bytes": 0, "begun": 0}
        row = {"sent": what, **got, "seconds": round(time.monotonic() - start, 1)}
        rows.append(row)
        print(row, flush=True)
        return row

    try:
        send("warm-up question", {"inputs": questions[:1]})
        send("invalid JSON", b"{not json")
        send("question: 42", {"inputs": [{"question": 42}]})
        send('topic_entities: "m.0"', {"inputs": [{"question": questions[0], "topic_entities": "m.0"}]})
        send("a null question", {"inputs": [{"question": None}]})
        start = time.monotonic()
        concurrent = drive(server.url, questions[:8], clients=8)
        rows.append({"sent": "8 concurrent single questions", "status": "200" if concurrent["answered"] == 8 else concurrent["errors"],
                     "code": "", "bytes": "", "begun": concurrent["answered"], "seconds": round(time.monotonic() - start, 1)})
        send("a 1 MB question", {"inputs": ["x" * 1_000_000]})
        send("a 60 MB body (one question, a 60 MB unknown field)", {"inputs": questions[:1], "pad": "a" * 60_000_000})
        send("300 questions in one request", {"inputs": [questions[0]] * 300})
        send("16 questions, over the 30 s timeout", {"inputs": questions[:16]})
        busy = []
        for _ in range(10):  # is it still working for nobody?
            busy.append(httpx.get(f"{server.url}/health", timeout=30).json()["requests"]["running"])
            time.sleep(0.5)
        rows[-1]["after"] = f"running requests over the next 5 s: {busy}"
        stopper = threading.Timer(5.0, lambda: server.process.send_signal(signal.SIGTERM))
        stopper.start()
        start = time.monotonic()
        send("16 questions, SIGTERM 5 s in", {"inputs": questions[:16]})
        status = server.process.wait(timeout=60)
        rows[-1]["after"] = f"exit {status} {time.monotonic() - start - 5:.1f} s after SIGTERM, port free {not server.up()}"
    finally:
        if server.process.poll() is None:
            server.stop()
    return rows


def _line(row: dict) -> str:
    return (f"{row['run']} {row['lm']} x{row['clients']}: {row['answered']}/{row['questions']} answered, errors {row['errors']}, "
            f"lost {row['lost']}, p50 {row['p50_s']} s, p95 {row['p95_s']} s, {row['per_minute']} q/min")


def _table(result: dict) -> str:
    lines = [f"`kgqa serve` on {result['program']}, {result['questions']} demo questions a run; engine: {result['engine']}.", ""]
    if result["requests"]:
        lines += ["| sent | status | error code | response bytes | questions begun | seconds | after |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['sent']} | {r['status']} | {r['code']} | {r['bytes']} | {r['begun']} | {r['seconds']} | {r.get('after', '')} |"
                  for r in result["requests"]]
        lines.append("")
    if not result["rows"]:
        return "\n".join(lines) + "\n"
    lines += [
              "| run | LM | clients | answered | errors | lost | q/min | p50 s | p95 s | p95 / (clients x single p50) | server up | stop |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        if "skipped" in r:
            lines.append(f"| {r['run']} | skipped: {r['skipped']} |||||||||||")
            continue
        errors = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0"
        stop = f"{r['stop_seconds']} s, exit {r['exit_status']}, port free {r['port_free']}" if "stop_seconds" in r else ""
        extra = r.get("after_restart") or r.get("abandoned_batch") or ""
        lines.append(f"| {r['run']}{' (' + extra + ')' if extra else ''} | {r['lm']} | {r['clients']} | {r['answered']}/{r['questions']} "
                     f"| {errors} | {r['lost']} | {r['per_minute']} | {r['p50_s']} | {r['p95_s']} | {r.get('p95_over_bound', '')} "
                     f"| {r['server_up']} | {stop} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program", type=Path, required=True, help="a compiled program on the demo KG (`kgqa demo` makes one)")
    parser.add_argument("--questions", type=int, default=16, help="questions a run (demo test and dev questions)")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--runs", default="load,faults", help="any of load, faults, requests")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="llama.cpp threads")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    pool = [ex.question for split in ("test", "dev") for ex in load_data(f"demo:{split}")]
    questions = [pool[n % len(pool)] for n in range(args.questions)]
    speed = smoke.run(threads=args.threads)
    print(speed.line(), flush=True)
    rows = []
    runs = args.runs.split(",")
    if "load" in runs:
        rows += load_runs(args.program, questions, clients=[int(c) for c in args.clients.split(",")], threads=args.threads, out=args.out)
    if "faults" in runs:
        rows += fault_runs(args.program, questions, threads=args.threads, out=args.out)
    requests = request_runs(args.program, questions, out=args.out) if "requests" in runs else []
    result = {"program": str(args.program.relative_to(ROOT) if args.program.is_relative_to(ROOT) else args.program),
              "questions": args.questions, "engine": speed.line(), "rows": rows, "requests": requests}
    name = "-".join(runs)
    (args.out / f"results-{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"table-{name}.md").write_text(_table(result))
    print(_table(result))


if __name__ == "__main__":
    main()
