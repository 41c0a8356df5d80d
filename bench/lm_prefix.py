"""Prefix reuse on the local LM: one realistic sequence of program calls, replayed with the
prefix-state cache off and on.

The program (compiled, when `--program DIR` is given: its demos make long shared prefixes)
answers demo questions on the local LM, and every request it sends is recorded. The recorded
sequence is then replayed on two fresh engines: without KV-state reuse (every call processes its
whole prompt) and with it (llama.cpp's prefix cache plus its reuse of the previous prompt).
Replaying keeps the two sequences identical; two live runs drift apart, because reuse evaluates a
prompt in other pieces, which changes its floating-point sums enough to flip a greedy token now
and then, and the program's next calls follow its answers. A replayed call generates at most as
many tokens as it did when recorded. Prints per mode the calls, prompt tokens and tokens actually
processed per call, output tokens and seconds per call; the last line is `speedup=X` (seconds
off / seconds on, over the same calls).

    .venv/bin/python -m bench.lm_prefix [--questions 3] [--program .kgqa/demo]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

import dspy  # noqa: E402

from kgqa.lm.adapter import CompactChatAdapter  # noqa: E402
from kgqa.lm.local import MODEL_NAME, LocalEngine  # noqa: E402
from kgqa.specs import load_data, open_kg  # noqa: E402


class Recorder:
    """An engine that passes each request on and keeps it, with the output tokens it got."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.requests: list[tuple[object, int]] = []

    def __deepcopy__(self, memo: dict) -> Recorder:
        return self

    def complete(self, request):
        response = self.engine.complete(request)
        self.requests.append((request, response.usage.output_tokens))
        return response


def record(questions, program_dir) -> list[tuple[object, int]]:
    from kgqa.programs import KGQA
    from kgqa.programs.saving import load_program

    kg = open_kg("demo")
    program = load_program(program_dir, kg) if program_dir else KGQA(kg)
    recorder = Recorder(LocalEngine())
    lm = dspy.LM(f"local/{MODEL_NAME}", engine=recorder, cache=False)
    with dspy.context(lm=lm, adapter=CompactChatAdapter()):
        for ex in questions:
            program(question=ex.question, topic_entities=ex.topic_entities)
    return recorder.requests


def replay(requests, *, reuse: bool) -> list[dict]:
    engine = LocalEngine(reuse_prefix=reuse)
    for request, output_tokens in requests:
        config = dataclasses.replace(request.config, max_tokens=max(1, output_tokens))
        engine.complete(dataclasses.replace(request, config=config))
    return engine.stats.calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=3, help="demo test questions")
    parser.add_argument("--program", help="a compiled program directory (default: the uncompiled program)")
    args = parser.parse_args(argv)
    requests = record(load_data(f"demo:test[0:{args.questions}]"), args.program)
    seconds = {}
    for reuse in (False, True):
        calls = replay(requests, reuse=reuse)
        n = len(calls)
        seconds[reuse] = sum(c["seconds"] for c in calls)
        print(
            f"prefix reuse {'on ' if reuse else 'off'}: {n} calls, "
            f"prompt tokens {sum(c['prompt_tokens'] for c in calls) / n:.0f}/call, "
            f"processed {sum(c['processed_tokens'] for c in calls) / n:.0f}/call, "
            f"output tokens {sum(c['completion_tokens'] for c in calls)}, "
            f"{seconds[reuse] / n:.2f} s/call, {seconds[reuse]:.1f} s in all",
            flush=True,
        )
    print(f"speedup={seconds[False] / seconds[True]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
