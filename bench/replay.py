"""Recorded walks replayed without the LLM: how a change of the ranking moves candidate recall, in
a minute instead of an hour of LM time.

A `bench.accuracy` record keeps each question's decisions in its trace: the plan (`raw_plan`,
`conditions`), the relation prune's choice at each depth (`walk[].pruned`; records older than
`74afdc2` keep only `chosen`, which adds the beam's fill, so their replays drift more) and answer
sufficiency's verdicts. A scripted LM answers each step with the record's decision, so the walk
retrieves what it retrieved then, and the compiled program ranks the candidates again, under the
WalkConfig changes given with `--set`. The steps a record does not keep are answered plainly: the
entity prune keeps every entity, the reflection resumes none, the fact filter and memory update
(which no ranking reads) keep nothing, and extraction chooses the record's answers among those
offered (the first offered when none is).

Per question: whether the replayed choices are the record's (with no `--set`, the replay's own
check), whether a gold answer is among the ranked candidates, whether it is among the choices
shown to extraction (candidate recall, as `bench.accuracy` counts it, less the kept facts), and
whether it is the first choice shown (what a skipped extraction answers, and the small model
mostly picks).
With `--answers`, whole answers instead: each record answered again, extraction's recorded choice
included, without and with the `--set` changes (a change after the model's choices, such as the
value check, measured in a minute: Hits@1 and F1 without and with, and which answers moved).
Writes `replay.jsonl` (`answers.jsonl`) and `table.md` with `--out`. No LLM is called, no test question is needed:
replay dev records to tune, then ask only the test questions whose choices the change moves.

    .venv/bin/python -m bench.replay --records bench/results/cwq-dev/records/dev.jsonl.gz --program bench/results/cwq-dev/program \\
        --split dev --per-hop 100 --train 1500 \\
        [--set choices_shown=15 --set choices_per_chain=4] [--out DIR]
    .venv/bin/python -m bench.replay --answers --base value_check=false --set value_check=true --records ... --program ...
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

import dspy  # noqa: E402

from bench.accuracy import CWQ_MINI, DATASETS, METAQA, TRAIN, cwq_bench, metaqa_bench  # noqa: E402
from bench.reproduce import read_gzipped  # noqa: E402
from kgqa.evaluate.metrics import score_answers  # noqa: E402
from kgqa.evaluate.runner import read_records  # noqa: E402
from kgqa.lm.adapter import ConstrainedJSONAdapter  # noqa: E402
from kgqa.lm.scripted import scripted_lm  # noqa: E402
from kgqa.optimizers.labels import gold_among  # noqa: E402
from kgqa.programs import WalkConfig  # noqa: E402
from kgqa.programs.inspection import before_extraction  # noqa: E402
from kgqa.programs.saving import load_program  # noqa: E402

_HOP = re.compile(r"\bhop (\d+)")


class RecordedDecisions:
    """The decisions of one record's trace, as handlers of a scripted LM; `use(record)` switches
    to the next question's record."""

    def __init__(self) -> None:
        self.trace: dict = {}
        self.verdicts: Iterator[bool] = iter(())
        self.answers: list[str] = []

    def use(self, record: dict) -> None:
        self.trace = record.get("trace") or {}
        self.answers = list(record.get("answers") or [])
        ran = [s["why"] for s in self.trace.get("steps", ()) if s["step"] == "sufficiency" and s["status"] == "ran"]
        self.verdicts = iter(why != "one hop short" for why in ran)

    def lm(self) -> dspy.LM:
        return scripted_lm({
            "topic_kind": self.plan,
            "relations_to_follow": self.prune,
            "evidence_sufficient": lambda inputs: {"evidence_sufficient": next(self.verdicts, True)},
            "entities_to_keep": lambda inputs: {"entities_to_keep": list(inputs["candidate_entities"])},
            "entities_to_resume": lambda inputs: {"entities_to_resume": []},
            "relevant_facts": lambda inputs: {"relevant_facts": []},
            "memory_notes": lambda inputs: {"memory_notes": []},
            "extracted_answers": self.extract,
        }, constrained=True)

    def extract(self, inputs: dict) -> dict:
        """The record's answers among the candidates offered, in its order (its extracted answers come
        first in it), else the first offered: a change after extraction replays what the model chose."""
        offered = [path.rsplit(" -> ", 1)[-1] for path in inputs["candidate_paths"]]
        return {"extracted_answers": [a for a in self.answers if a in offered] or offered[:1]}

    def plan(self, inputs: dict) -> dict:
        planned = self.trace.get("raw_plan") or {}
        return {"topic_kind": planned.get("topic_kind", ""), "answer_kind": planned.get("answer_kind", ""),
                "hop_targets": planned.get("hop_targets", self.trace.get("plan", [])),
                "answer_constraints": self.trace.get("conditions", [])}

    def prune(self, inputs: dict) -> dict:
        match = _HOP.search(str(inputs.get("hop", "")))
        depth = int(match.group(1)) if match else 1
        for hop in self.trace.get("walk", ()):
            if hop.get("depth") == depth:
                return {"relations_to_follow": hop.get("pruned", hop.get("chosen", []))}
        return {"relations_to_follow": []}


@dataclass(frozen=True)
class Replayed:
    id: str
    same_choices: bool  # the replayed choices are the record's
    gold_ranked: bool
    gold_shown: bool
    gold_shown_before: bool  # in the record
    ranked: int  # candidates ranked
    gold_first: bool  # the first choice shown is a gold answer (what extraction mostly answers)
    gold_first_before: bool  # in the record

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def replayable(record: dict | None) -> bool:
    """A record whose walk can be replayed: it ended without an error and kept its plan."""
    return bool(record) and not record.get("error") and bool((record.get("trace") or {}).get("raw_plan"))


def load_records(path: Path) -> dict[str, dict]:
    """Records by id from a JSONL file, or from the gzipped JSONL a `bench.reproduce` row keeps."""
    if path.suffix == ".gz":
        return {record["id"]: record for record in read_gzipped(path)}
    return read_records(path, repair=False)


def replay(program, examples: Sequence[dspy.Example], records: dict[str, dict]) -> list[Replayed]:
    """Each example with a record, walked again under the record's decisions."""
    decisions = RecordedDecisions()
    results = []
    with dspy.context(lm=decisions.lm(), adapter=ConstrainedJSONAdapter()):
        for example in examples:
            record = records.get(example.id)
            if not replayable(record):
                continue
            decisions.use(record)
            walked, _ = before_extraction(program, example.question, list(example.topic_entities) or None)
            ranked, shown = ([c.label for c in walked.candidates], [c.label for c in walked.shown]) if walked else ([], [])
            before = record["trace"].get("candidates") or []
            results.append(Replayed(example.id, shown == before, gold_among(example, ranked), gold_among(example, shown),
                                    gold_among(example, before), len(ranked), gold_among(example, shown[:1]),
                                    gold_among(example, before[:1])))
    return results


@dataclass(frozen=True)
class AnswerChange:
    id: str
    as_recorded: bool  # replayed without the changes, the record's answers came back
    before: list[str]  # replayed without the changes
    after: list[str]  # replayed with them
    hits1_before: float
    hits1_after: float
    f1_before: float
    f1_after: float

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def replay_answers(program, examples: Sequence[dspy.Example], records: dict[str, dict], changes: dict) -> list[AnswerChange]:
    """Each example with a record, answered again under the record's decisions (extraction's
    choice included) without and with `changes` to the program's WalkConfig: what a change made
    after the model's choices (the value check, say) does to the answers, with no LLM call."""
    decisions, results = RecordedDecisions(), []
    plain, changed = program.config, dataclasses.replace(program.config, **changes)
    with dspy.context(lm=decisions.lm(), adapter=ConstrainedJSONAdapter()):
        for example in examples:
            record = records.get(example.id)
            if not replayable(record):
                continue
            got = []
            for config in (plain, changed):
                decisions.use(record)
                program.config = config
                got.append(program(question=example.question, topic_entities=list(example.topic_entities) or None).answers)
            program.config = plain
            before, after = (score_answers(answers, example.answers) for answers in got)
            results.append(AnswerChange(example.id, got[0] == record.get("answers"), got[0], got[1], before.hits1,
                                        after.hits1, before.f1, after.f1))
    return results


def answers_table(results: Sequence[AnswerChange], *, changes: dict) -> str:
    n = len(results) or 1
    moved = [r for r in results if r.before != r.after]
    rows = [
        ("questions replayed", f"{len(results)}"),
        ("answers as recorded (replayed without the changes)", f"{sum(r.as_recorded for r in results)}"),
        ("answers moved by the changes", f"{len(moved)}"),
        ("Hits@1 without / with", f"{sum(r.hits1_before for r in results) / n:.3f} / {sum(r.hits1_after for r in results) / n:.3f}"),
        ("F1 without / with", f"{sum(r.f1_before for r in results) / n:.3f} / {sum(r.f1_after for r in results) / n:.3f}"),
        ("first answer right: gained / lost", f"{sum(r.hits1_after > r.hits1_before for r in moved)} / "
                                              f"{sum(r.hits1_after < r.hits1_before for r in moved)}"),
    ]
    return _markdown(rows, changes)


def table(results: Sequence[Replayed], *, changes: dict) -> str:
    n = len(results) or 1
    moved = [r for r in results if not r.same_choices]
    rows = [
        ("questions replayed", f"{len(results)}"),
        ("choices as recorded", f"{sum(r.same_choices for r in results)}"),
        ("gold ranked", f"{sum(r.gold_ranked for r in results) / n:.3f}"),
        ("gold shown (candidate recall)", f"{sum(r.gold_shown for r in results) / n:.3f}"),
        ("gold shown in the records", f"{sum(r.gold_shown_before for r in results) / n:.3f}"),
        ("gold first shown", f"{sum(r.gold_first for r in results) / n:.3f}"),
        ("gold first shown in the records", f"{sum(r.gold_first_before for r in results) / n:.3f}"),
        ("choices moved: gold gained / lost", f"{sum(r.gold_shown and not r.gold_shown_before for r in moved)} / "
                                              f"{sum(r.gold_shown_before and not r.gold_shown for r in moved)}"),
    ]
    return _markdown(rows, changes)


def _markdown(rows: Sequence[tuple[str, str]], changes: dict) -> str:
    said = ", ".join(f"{k}={v}" for k, v in changes.items()) or "none"
    return f"WalkConfig changes: {said}\n\n| | |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)


def walk_changes(pairs: Sequence[str]) -> dict:
    """`--set NAME=VALUE` pairs as WalkConfig fields of their types (checked by WalkConfig)."""
    fields = {f.name for f in dataclasses.fields(WalkConfig)}
    changes = {}
    for pair in pairs:
        name, _, text = pair.partition("=")
        if name not in fields or not text:
            raise ValueError(f"--set wants NAME=VALUE with NAME a WalkConfig field, got {pair!r}")
        default = getattr(WalkConfig, name)
        if isinstance(default, bool):
            if text.lower() not in {"true", "false"}:
                raise ValueError(f"{name} is true or false, got {text!r}")
            changes[name] = text.lower() == "true"
        else:
            changes[name] = type(default)(text) if default is not None else int(text)
    WalkConfig(**changes)  # its own range checks
    return changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=Path, required=True,
                        help="records: a bench.accuracy JSONL, or a bench.reproduce row's records/SAMPLE.jsonl.gz")
    parser.add_argument("--program", type=Path, required=True, help="the compiled program the records ran")
    parser.add_argument("--dataset", choices=DATASETS, default="cwq-mini")
    parser.add_argument("--split", choices=("test", "dev"), default="test")
    parser.add_argument("--per-hop", type=int, default=100, help="as the records' bench.accuracy run")
    parser.add_argument("--train", type=int, help="as the records' run (the store holds the compile rows' graphs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--types", type=lambda text: [t for t in text.split(",") if t], default=[],
                        help="CWQ-mini: as the records' run, questions of these compositionality types only")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a WalkConfig change")
    parser.add_argument("--base", action="append", default=[], metavar="NAME=VALUE",
                        help="a WalkConfig change made to both sides, before --set's (the records' walk, where it differs)")
    parser.add_argument("--answers", action="store_true",
                        help="replay whole answers (extraction's recorded choice included) without and with the changes")
    parser.add_argument("--out", type=Path, help="directory for replay.jsonl (answers.jsonl) and table.md")
    args = parser.parse_args(argv)
    try:
        changes, base = walk_changes(args.set), walk_changes(args.base)
    except ValueError as exc:
        parser.error(str(exc))
    if not args.records.is_file():
        parser.error(f"no such records file: {args.records}")
    train = args.train or TRAIN[args.dataset]
    if args.dataset == "metaqa":
        bench = metaqa_bench(args.per_hop, train, args.seed, METAQA)
    else:
        bench = cwq_bench(args.per_hop, train, args.seed, CWQ_MINI, split=args.split, types=args.types)
    program = load_program(args.program, bench.kg)
    program.config = dataclasses.replace(program.config, **base)
    records = load_records(args.records)
    examples = [ex for sample in bench.test.values() for ex in sample]
    if args.answers:
        results, name = replay_answers(program, examples, records, changes), "answers.jsonl"
        text = answers_table(results, changes=changes)
    else:
        program.config = dataclasses.replace(program.config, **changes)
        results, name = replay(program, examples, records), "replay.jsonl"
        text = table(results, changes=changes)
    print(text, end="")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "table.md").write_text(text)
        with (args.out / name).open("w", encoding="utf-8") as f:
            f.writelines(json.dumps(r.as_dict()) + "\n" for r in results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
