"""The records a value-check run keeps, and the questions it asks again.

The value check acts after the model's last choice, so a question's LLM calls are the same with it
or without it. `bench.replay --answers` answers each recorded question again under the record's
decisions, without and with the check. A question is asked again (live, with the LM) when the check
moved its replayed answers, or when it reads a comparison in the question and the replay without
the check did not give back the record's answers (there the replay is no proof). Every other record
is copied to OUT with `"reused": true`, and `bench.accuracy` with the same arguments and `--out OUT`
asks the rest.

With `--earlier EARLIER/answers.jsonl` (the same replay under the code the records ran), a change to
the check itself: a question is asked again when its answers with the check moved from the earlier
code's.

    .venv/bin/python bench/results/value-check-cwq/reask.py --records RECORDS.jsonl \
        --answers REPLAY/answers.jsonl [--earlier EARLIER/answers.jsonl] --program PROGRAM_DIR --out OUT_DIR
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from kgqa.programs.values import read_comparison  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=Path, required=True)
    parser.add_argument("--answers", type=Path, required=True, help="bench.replay --answers's answers.jsonl")
    parser.add_argument("--earlier", type=Path, help="the same replay under the code the records ran")
    parser.add_argument("--program", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    replayed = _rows(args.answers)
    earlier = _rows(args.earlier) if args.earlier else None
    records = [json.loads(line) for line in args.records.read_text().splitlines() if line.strip()]
    again = set()
    for record in records:
        row = replayed.get(record["id"])
        if earlier is not None:
            if row is not None and row["after"] != earlier.get(record["id"], {}).get("after"):
                again.add(record["id"])
            continue
        moved = row is not None and row["before"] != row["after"]
        unproven = (row is None or not row["as_recorded"]) and read_comparison(record["question"]) is not None
        if moved or unproven:
            again.add(record["id"])
    args.out.mkdir(parents=True, exist_ok=True)
    link = args.out / "program-bootstrap"
    if not link.exists():  # the records' own program, linked: the value check needs no compile
        link.symlink_to(os.path.relpath(args.program.resolve(), args.out.resolve()), target_is_directory=True)
    kept = [{**record, "reused": True} for record in records if record["id"] not in again]
    (args.out / args.records.name).write_text("".join(json.dumps(r) + "\n" for r in kept))
    print(f"{len(kept)} records kept, {len(again)} to ask again")
    return 0


def _rows(path: Path) -> dict[str, dict]:
    return {row["id"]: row for row in map(json.loads, path.read_text().splitlines())}


if __name__ == "__main__":
    sys.exit(main())
