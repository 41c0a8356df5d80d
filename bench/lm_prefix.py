"""Prefix reuse on the local LM: the same program calls with the prefix-state cache on and off.

Runs the program (compiled, when `--program DIR` is given: its demos make long shared prefixes)
on demo questions twice, on two fresh local engines: with KV-state reuse (llama.cpp's prefix
cache plus its reuse of the previous prompt), and without (every call processes its whole
prompt). Greedy decoding makes both runs issue the same calls. Prints per-call prompt tokens,
tokens actually processed and seconds, and a last line `speedup=X` (seconds off / seconds on).

    .venv/bin/python -m bench.lm_prefix [--questions 3] [--program .kgqa/demo]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # noqa: E402

from kgqa.lm.adapter import CompactChatAdapter  # noqa: E402
from kgqa.lm.local import local_lm  # noqa: E402
from kgqa.specs import load_data, open_kg  # noqa: E402


def run(reuse: bool, questions, program_dir) -> tuple[list[dict], list, float]:
    from programs import KGQA
    from programs.saving import load_program

    kg = open_kg("demo")
    program = load_program(program_dir, kg) if program_dir else KGQA(kg)
    lm = local_lm(reuse_prefix=reuse)
    start = time.perf_counter()
    answers = []
    with dspy.context(lm=lm, adapter=CompactChatAdapter()):
        for ex in questions:
            answers.append(program(question=ex.question, topic_entities=ex.topic_entities).answers)
    return lm.local_engine.stats.calls, answers, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=3, help="demo test questions")
    parser.add_argument("--program", help="a compiled program directory (default: the uncompiled program)")
    args = parser.parse_args(argv)
    questions = load_data(f"demo:test[0:{args.questions}]")
    results = {}
    for reuse in (False, True):
        calls, answers, wall = run(reuse, questions, args.program)
        results[reuse] = (calls, answers)
        prompt = sum(c["prompt_tokens"] for c in calls)
        processed = sum(c["processed_tokens"] for c in calls)
        seconds = sum(c["seconds"] for c in calls)
        print(
            f"prefix reuse {'on ' if reuse else 'off'}: {len(calls)} calls, prompt tokens {prompt / len(calls):.0f}/call, "
            f"processed {processed / len(calls):.0f}/call, {seconds / len(calls):.2f} s/call, {wall:.1f} s in all"
        )
    if results[False][1] != results[True][1]:
        print("warning: the two runs answered differently", file=sys.stderr)
    off = sum(c["seconds"] for c in results[False][0])
    on = sum(c["seconds"] for c in results[True][0])
    print(f"speedup={off / on:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
