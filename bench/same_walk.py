"""Does a change keep the walk? A compiled program asked fixed questions with a fake LM that answers
each call from a hash of its inputs, in minutes and with no LLM: a change that shows the model the
same prompts gets the same replies, so any difference in the answers or the traces is the code's.

The fake LM (`hashed_lm`) makes every step decide: the plan's hop targets and conditions are words
of the question, each choice is some of the candidates offered, sufficiency says yes or no, and one
reply in `GARBAGE_EVERY` is unusable text (so fallbacks run too). Each question's record is its
answers, reasoning paths and trace (step outcomes, LLM calls, tokens to the word, the walk's log),
timings left out. Run it before a refactor with `--out`, after it with `--against` the first file:

    .venv/bin/python -m bench.same_walk --dataset cwq --program bench/results/cwq-test-seed0/program \\
        --questions 200 --out /tmp/before.jsonl
    (change the code)
    .venv/bin/python -m bench.same_walk ... --out /tmp/after.jsonl --against /tmp/before.jsonl

CWQ-mini questions are dev rows outside the program's compile sample (`bench.accuracy.cwq_bench`,
split dev); MetaQA's are the fixed dev samples of each hop (`--questions` per hop). Exits 1 when a
record differs. A scripted LM's replies, not the local model's: this says whether the code walks
as before, not how well.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from kgqa.env import stay_offline

stay_offline()

import dspy  # noqa: E402

from kgqa.lm.adapter import ConstrainedJSONAdapter  # noqa: E402
from kgqa.lm.scripted import scripted_lm  # noqa: E402

GARBAGE_EVERY = 11  # one reply in this many (by hash) is text no adapter can parse
_UNTIMED = ("kg_seconds",)  # trace fields that measure time, not what the walk did


def digest(inputs: dict) -> int:
    """A call's inputs as a number: the same inputs, the same number, on any machine."""
    return int(hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:12], 16)


def some(items: object, x: int, most: int = 3) -> list:
    """1 to `most` of `items` in a row (wrapping around), where and how many chosen by `x`."""
    items = items if isinstance(items, list) else []
    if not items:
        return []
    k = 1 + x % min(most, len(items))
    start = (x // 7) % len(items)
    return [items[(start + i) % len(items)] for i in range(k)]


def _plan(inputs: dict, x: int) -> dict:
    words = [w for w in str(inputs.get("question", "")).replace("?", "").split() if len(w) > 3] or ["thing"]
    return {"topic_kind": "thing", "answer_kind": words[x % len(words)],
            "hop_targets": [" ".join(some(words, x // (i + 1), 2)) for i in range(1 + x % 2)],
            "answer_constraints": [f"{words[(x // 3) % len(words)]} condition"] if x % 3 == 0 else []}


def _ends(paths: object) -> list[str]:
    """The answers a list of candidate paths ends at ('A -> r -> B' ends at 'B')."""
    return [str(p).rsplit(" -> ", 1)[-1] for p in (paths if isinstance(paths, list) else [])]


_REPLIES = {  # the signature's first output field -> its reply to inputs with digest x
    "topic_kind": _plan,
    "relations_to_follow": lambda i, x: {"relations_to_follow": some(i.get("candidate_relations"), x)},
    "entities_to_keep": lambda i, x: {"entities_to_keep": some(i.get("candidate_entities"), x)},
    "relevant_facts": lambda i, x: {"relevant_facts": some(i.get("candidate_facts"), x)},
    "memory_notes": lambda i, x: {"memory_notes": [f"note {x % 997}"]},
    "evidence_sufficient": lambda i, x: {"evidence_sufficient": x % 2 == 0},
    "extracted_answers": lambda i, x: {"extracted_answers": some(_ends(i.get("candidate_paths")), x, 2)},
    "entities_to_resume": lambda i, x: {"entities_to_resume": some(i.get("earlier_entities"), x)},
    "entities_meant": lambda i, x: {"entities_meant": some(i.get("candidate_entities"), x, 2)},
    "direct_answers": lambda i, x: {"direct_answers": some(str(i.get("question", "")).split(), x, 2)},
}


def hashed_lm() -> dspy.LM:
    """The fake LM: every kgqa signature answered from a hash of the call's inputs."""
    def reply(answer):
        def handler(inputs: dict):
            x = digest(inputs)
            return "I cannot tell." if x % GARBAGE_EVERY == 0 else answer(inputs, x)
        return handler

    return scripted_lm({field: reply(answer) for field, answer in _REPLIES.items()})


def records(program, examples: Iterable[tuple[str, dspy.Example]]) -> Iterable[dict]:
    """Each (sample, question) asked of `program` under the fake LM: its answers, paths and trace."""
    with dspy.context(lm=hashed_lm(), adapter=ConstrainedJSONAdapter()):
        for sample, ex in examples:
            prediction = program(question=ex.question, topic_entities=list(ex.topic_entities) or None)
            trace = {k: v for k, v in prediction.trace.to_dict().items() if k not in _UNTIMED}
            yield {"sample": sample, "id": ex.id, "answers": prediction.answers, "paths": prediction.paths, "trace": trace}


def differences(before: Sequence[dict], after: Sequence[dict]) -> list[str]:
    """What differs between two runs of the same questions, a line per field that does ('id: field: old | new')."""
    return [line for lines in by_question(before, after) for line in lines]


def by_question(before: Sequence[dict], after: Sequence[dict]) -> list[list[str]]:
    """Each question's lines of `differences` (none where it walked the same); one list of one line
    when the two runs did not ask the same questions."""
    if not same_questions(before, after):
        return [[f"not the same questions: {len(before)} records before, {len(after)} after"]]
    return [_differing(old, new) for old, new in zip(before, after)]


def same_questions(before: Sequence[dict], after: Sequence[dict]) -> bool:
    """Whether two runs asked the same questions in the same order."""
    return [(r["sample"], r["id"]) for r in before] == [(r["sample"], r["id"]) for r in after]


def _differing(old: dict, new: dict) -> list[str]:
    """The fields in which one question's two records differ, the trace's field by field."""
    def fields(record: dict) -> dict:
        return {k: v for k, v in record.items() if k != "trace"} | {f"trace.{k}": v for k, v in record.get("trace", {}).items()}

    was, now = fields(old), fields(new)
    return [f"{old['id']}: {name}: {str(was.get(name))[:120]} | {str(now.get(name))[:120]}"
            for name in sorted(set(was) | set(now)) if was.get(name) != now.get(name)]


def _questions(dataset: str, program_dir: Path, size: int):
    from bench.accuracy import CWQ_MINI, METAQA, cwq_bench, metaqa_bench
    from kgqa.programs.saving import load_program, read_settings

    settings = read_settings(program_dir)
    train = settings.get("train")
    if not train:
        raise SystemExit(f"{program_dir}: its settings do not say how many compile questions it was compiled on")
    bench = cwq_bench(size, train, 0, CWQ_MINI, split="dev") if dataset == "cwq" else metaqa_bench(size, train, 0, METAQA)
    program = load_program(program_dir, bench.kg, settings=settings)
    return program, [(sample, ex) for sample, examples in bench.test.items() for ex in examples]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=("cwq", "metaqa"), required=True)
    parser.add_argument("--program", type=Path, required=True, help="a compiled program of that dataset")
    parser.add_argument("--questions", type=int, default=200, help="CWQ-mini dev questions, or MetaQA questions per hop")
    parser.add_argument("--out", type=Path, required=True, help="where to write this run's records (JSON lines)")
    parser.add_argument("--against", type=Path, default=None, help="an earlier run's records to compare with")
    args = parser.parse_args(argv)
    program, examples = _questions(args.dataset, args.program, args.questions)
    lines = [json.dumps(r, sort_keys=True, default=str) for r in records(program, examples)]
    args.out.write_text("".join(line + "\n" for line in lines))
    print(f"{len(lines)} questions walked with the fake LM: {args.out}")
    if args.against is None:
        return 0
    before = [json.loads(line) for line in args.against.read_text().splitlines() if line.strip()]
    after = [json.loads(line) for line in lines]  # as written: what a later run reads back
    per_question = by_question(before, after)
    found = [line for lines in per_question for line in lines]
    same = sum(not lines for lines in per_question) if same_questions(before, after) else 0
    print(f"against {args.against}: {same} of {len(after)} questions walked the same")
    print("\n".join(found[:20]))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
