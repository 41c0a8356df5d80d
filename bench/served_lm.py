"""Questions per minute with the LM served: llama-cpp-python's OpenAI-compatible server on the local
model, one compiled program answering demo questions at 1, 2 and 4 threads, against the same
program on the in-process engine.

The program is compiled as `kgqa demo` compiles it (bootstrap on 4 demo training questions, local
LM) unless `--program DIR` names one. The server runs with all cores (`--server-threads`) and the
prefix-state cache; each thread count gets a fresh server, so no run starts with a cache the one
before it warmed. Per run: questions, wall seconds, questions per minute, LLM calls and tokens per
question, Hits@1, and how many answers equal the in-process run's. Writes `table.md` and
`results.json` to `--out`. The engine speed (`python -m kgqa.lm.smoke`) is measured first:
quote the numbers with it.

    .venv/bin/python -m bench.served_lm [--questions demo:test[0:12]] [--threads 1,2,4]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

import dspy  # noqa: E402

from kgqa.evaluate.runner import evaluate, read_records  # noqa: E402
from kgqa.lm import smoke  # noqa: E402
from kgqa.lm.adapter import ConstrainedJSONAdapter  # noqa: E402
from kgqa.lm.local import local_lm  # noqa: E402
from kgqa.lm.served import LOCAL_ALIAS, llama_server, served_lm  # noqa: E402
from kgqa.optimizers.teleprompters import Budget  # noqa: E402
from kgqa.programs.saving import load_program  # noqa: E402
from kgqa.specs import load_data, open_kg  # noqa: E402
from kgqa.workflow import compile_to_dir  # noqa: E402

OUT = Path(__file__).parent / "results" / "served-lm-local"


def run(program_dir: Path, examples, lm, *, threads: int, out: Path) -> dict:
    program = load_program(program_dir, open_kg("demo"))
    out.unlink(missing_ok=True)
    with dspy.context(lm=lm, adapter=ConstrainedJSONAdapter()):
        start = time.perf_counter()
        summary = evaluate(program, examples, out=out, threads=threads, progress=False)
        seconds = time.perf_counter() - start
    return {"threads": threads, "questions": summary.questions, "seconds": round(seconds, 1),
            "questions_per_minute": round(60 * summary.questions / seconds, 2), "hits1": round(summary.hits1, 3),
            "llm_calls": round(summary.llm_calls, 2), "input_tokens": round(summary.input_tokens),
            "output_tokens": round(summary.output_tokens), "answers": {i: r["answers"] for i, r in read_records(out).items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", default="demo:test[0:12]", help="data spec on the demo KG")
    parser.add_argument("--threads", default="1,2,4", help="questions in parallel, per run")
    parser.add_argument("--server-threads", type=int, default=os.cpu_count(), help="llama.cpp threads of the server")
    parser.add_argument("--program", type=Path, help="a compiled program (default: compiled here as kgqa demo does)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    examples = load_data(args.questions)

    speed = smoke.run(threads=args.server_threads)
    print(speed.line(), flush=True)
    local = local_lm(n_threads=args.server_threads)
    program_dir = args.program
    if program_dir is None:
        program_dir = args.out / "program"
        dspy.configure(lm=local, adapter=ConstrainedJSONAdapter())
        compile_to_dir(kg=open_kg("demo"), trainset=load_data("demo:train[0:4]"), devset=None, optimizer="bootstrap",
                       out=program_dir, settings={"kg": "demo", "lm": "local", "train": "demo:train[0:4]"},
                       budget=Budget(demos=2), progress=False)

    rows = [{"lm": "in process", **run(program_dir, examples, local, threads=1, out=args.out / "in-process.jsonl")}]
    print(_line(rows[-1]), flush=True)
    for threads in (int(t) for t in args.threads.split(",")):
        with llama_server(threads=args.server_threads, log=args.out / "server.log") as api_base:
            lm = served_lm(f"openai/{LOCAL_ALIAS}", api_base=api_base)
            rows.append({"lm": "llama_cpp.server", **run(program_dir, examples, lm, threads=threads,
                                                         out=args.out / f"served-{threads}.jsonl")})
        print(_line(rows[-1]), flush=True)
    baseline = rows[0]["answers"]
    for row in rows:
        answers = row.pop("answers")
        row["same_answers_as_in_process"] = sum(answers.get(i) == a for i, a in baseline.items())
    result = {"questions": args.questions, "server_threads": args.server_threads, "engine": speed.line(),
              "prompt_tokens_per_s": round(speed.prompt_tokens_per_s or 0), "generated_tokens_per_s": round(speed.generated_tokens_per_s or 0, 1),
              "rows": rows}
    (args.out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "table.md").write_text(_table(result))
    print(_table(result))


def _line(row: dict) -> str:
    return f"{row['lm']}, {row['threads']} thread(s): {row['questions_per_minute']} q/min, {row['seconds']} s"


def _table(result: dict) -> str:
    lines = [f"Questions {result['questions']} on the demo KG; llama.cpp threads {result['server_threads']}; "
             f"engine {result['prompt_tokens_per_s']} prompt tok/s, {result['generated_tokens_per_s']} generated tok/s.", "",
             "| LM | threads | questions | wall s | q/min | Hits@1 | LLM calls/q | in tokens/q | out tokens/q | same answers as in process |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['lm']} | {r['threads']} | {r['questions']} | {r['seconds']} | {r['questions_per_minute']} | {r['hits1']} "
                     f"| {r['llm_calls']} | {r['input_tokens']} | {r['output_tokens']} | {r['same_answers_as_in_process']}/{r['questions']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
