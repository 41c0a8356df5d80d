"""The records a sufficiency-pool run keeps: every question where answer sufficiency did not run.

The pool changes only what the sufficiency check is shown, so a question where the check was
skipped walks, and is answered, as recorded. Those records are copied with `"reused": true`;
`bench.accuracy` with the sample's arguments and `--out` beside them asks the rest again.

    .venv/bin/python bench/results/sufficiency-pairs-cwq/keep_unasked.py --records RECORDS.jsonl --out OUT.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

from bench.accuracy import skipped_throughout  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    records = [json.loads(line) for line in args.records.read_text().splitlines() if line.strip()]
    kept = [{**r, "reused": True} for r in records if skipped_throughout(r, "sufficiency")]
    args.out.write_text("".join(json.dumps(r) + "\n" for r in kept))
    print(f"{len(kept)} records kept, {len(records) - len(kept)} to ask again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
