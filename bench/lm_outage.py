"""An LM that dies mid-run, as a user meets it: `kgqa evaluate` through the served local model
(`python -m kgqa.lm.served`), the LM server SIGKILLed `--kill-after` seconds in; then the server
restarted and the same command run again. Against the same program evaluated in process.

Per step: the exit status, the records (answered, LM errors), the summary's errors, LM failures
and fallbacks; at the end, whether the resumed records' answers and Hits@1 equal the in-process run's.
Writes `results.json` and `table.md` to `--out`; the engine speed is measured first.

    .venv/bin/python -m bench.lm_outage [--data demo:test] [--threads 2] [--kill-after 12]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

from kgqa.evaluate.runner import read_records, summarize  # noqa: E402
from kgqa.lm import smoke  # noqa: E402
from kgqa.lm.served import LOCAL_ALIAS, free_port, start_llama_server, stop_process_group  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "lm-outage-local"


def evaluate(program: Path, data: str, out: Path, *lm_args: str, threads: int, home: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "kgqa", "evaluate", "--program", str(program), "--data", data, "--out", str(out), "--quiet",
               "--threads", str(threads), *lm_args]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "KGQA_HOME": str(home)})


def step(name: str, process: subprocess.Popen, out: Path, started: float, *, lines_before: int = 0) -> dict:
    """Wait for PROCESS (started at monotonic time STARTED) and read what it wrote to OUT."""
    stdout, stderr = process.communicate()
    seconds = time.monotonic() - started
    lines = out.read_text().splitlines() if out.exists() else []
    written = [json.loads(line) for line in lines[lines_before:]]
    final = list(read_records(out, repair=False).values())
    summary = summarize(final)
    return {"step": name, "exit_status": process.returncode, "seconds": round(seconds, 1),
            "records_written": len(written), "answered": sum(not r["error"] for r in written),
            "lm_errors": sum(r["trace"].get("stop_reason") == "lm_error" for r in written),
            "questions_done": sum(not r["error"] for r in final), "hits1": round(summary.hits1, 3),
            "llm_failures_per_q": round(summary.llm_failures, 2), "fallbacks_per_q": round(summary.fallbacks, 2),
            "last_stderr_line": (stderr.strip().splitlines() or [""])[-1][:400],
            "summary_errors_line": next((line for line in stdout.splitlines() if line.startswith("| errors")), "")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program", type=Path, required=True, help="a compiled program on the demo KG (`kgqa demo` makes one)")
    parser.add_argument("--data", default="demo:test")
    parser.add_argument("--threads", type=int, default=2, help="kgqa evaluate --threads")
    parser.add_argument("--kill-after", type=float, default=12.0, help="seconds into the served run")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.jsonl"):
        old.unlink()
    speed = smoke.run()
    print(speed.line(), flush=True)
    home = args.out / "home"
    rows = []

    start = time.monotonic()
    local = evaluate(args.program, args.data, args.out / "in-process.jsonl", "--lm", "local", threads=1, home=home)
    rows.append(step("in process, uninterrupted", local, args.out / "in-process.jsonl", start))
    print(rows[-1], flush=True)

    port = free_port()
    served = ("--lm", f"openai/{LOCAL_ALIAS}", "--api-base", f"http://127.0.0.1:{port}/v1")
    lm = start_llama_server(port=port, log=args.out / "llama-server.log")
    start = time.monotonic()
    run = evaluate(args.program, args.data, args.out / "served.jsonl", *served, threads=args.threads, home=home)
    time.sleep(args.kill_after)
    stop_process_group(lm, sig=signal.SIGKILL)
    rows.append(step(f"served, LM SIGKILLed at {args.kill_after:g} s", run, args.out / "served.jsonl", start))
    print(rows[-1], flush=True)

    lm = start_llama_server(port=port, log=args.out / "llama-server.log")
    try:
        before = len((args.out / "served.jsonl").read_text().splitlines())
        start = time.monotonic()
        again = evaluate(args.program, args.data, args.out / "served.jsonl", *served, threads=args.threads, home=home)
        rows.append(step("served, LM restarted, same command again", again, args.out / "served.jsonl", start, lines_before=before))
        print(rows[-1], flush=True)
    finally:
        stop_process_group(lm)
    reference = {i: r["answers"] for i, r in read_records(args.out / "in-process.jsonl").items()}
    resumed = {i: r["answers"] for i, r in read_records(args.out / "served.jsonl").items()}
    same = sum(resumed.get(i) == answers for i, answers in reference.items())
    result = {"data": args.data, "engine": speed.line(), "threads": args.threads, "rows": rows,
              "same_answers_as_in_process": f"{same}/{len(reference)}"}
    (args.out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"{args.data} through `kgqa evaluate --threads {args.threads}`; engine: {speed.line()}.", "",
             "| step | exit | s | records written | answered | LM errors | done | Hits@1 | LM failures/q | fallbacks/q | what the user saw |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        summary_line = ": ".join(part.strip() for part in r["summary_errors_line"].strip("| ").split("|"))
        said = (r["last_stderr_line"] if r["exit_status"] else summary_line).replace("|", "/")
        lines.append(f"| {r['step']} | {r['exit_status']} | {r['seconds']} | {r['records_written']} | {r['answered']} | {r['lm_errors']} "
                     f"| {r['questions_done']} | {r['hits1']} | {r['llm_failures_per_q']} | {r['fallbacks_per_q']} | {said} |")
    lines += ["", f"Answers after the resume equal the in-process run's for {same}/{len(reference)} questions."]
    (args.out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
