"""The test questions this directory's linker links otherwise than `../linking-current-walk/`'s (the
linker before `graph_out_relations`): + now exact, - exact before, blank wrong both ways.

    .venv/bin/python bench/results/linking-out-relations/changed.py > bench/results/linking-out-relations/changed.md
"""
import json
from pathlib import Path

here = Path(__file__).resolve().parent


def links(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


def exact(record: dict) -> bool:
    return set(record["linked"]) == set(record["gold"])


before = links(here.parent / "linking-current-walk" / "links-cwq-mini-all-test.jsonl")
after = links(here / "links-cwq-mini-all-test.jsonl")
moved = [(before[i], after[i]) for i in after if set(before[i]["linked"]) != set(after[i]["linked"])]
better, worse = sum(exact(b) and not exact(a) for a, b in moved), sum(exact(a) and not exact(b) for a, b in moved)
print(f"{len(moved)} of {len(after)} test questions linked otherwise: {better} now exact, {worse} exact before, "
      f"{len(moved) - better - worse} wrong both ways\n")
for a, b in moved:
    mark = "+" if exact(b) and not exact(a) else "-" if exact(a) and not exact(b) else " "
    print(f"- `{mark}` {a['question']}  \n  gold {a['gold']}; before {a['linked']}; now {b['linked']}")
