"""Where the gold answer is lost, without the LLM: CWQ-mini dev questions outside the compile
sample, walked by a compiled program's learned parts (its path scorer fills the beam and orders the
candidates; its chain prior votes) with every LLM choice made by similarity (`SimilarityWalk`,
`CWQ_FLOOR_DEPTH` hops unless a setting says `depth`), once per walk setting of `--variants`.

For each setting, the share of questions whose gold answer is
- first among the candidates path answer extraction would be shown, second or third, 4th to last shown;
- reached but not shown: among the first `SCORED` the path scorer orders, or after them;
- not reached, though within the walk's hops of a topic entity in the row's graph (the walk left
  it behind: a relation it did not go on by, an entity past its frontier); one hop further; further;
with the seconds a question, each setting paired with the first (questions it puts a gold answer
first for, or shows one for, that the first does not, and the other way round), and why path
answer extraction would not be asked (its skip reason) on how many questions, with how many of
them have a gold answer first. No number here is an answer rate
(`bench.reproduce` measures those); it says which of the walk's bounds loses gold answers. Tune
on dev only.

    .venv/bin/python -m bench.recall --program bench/results/cwq-test-seed0/program --dev 300 \\
        --variants '[{}, {"beam_width": 16}]'
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kgqa.env import stay_offline

stay_offline()

from bench.accuracy import CWQ_FLOOR_DEPTH, CWQ_MINI, answerable, cwq_bench  # noqa: E402
from bench.path_scorer import paired as gained_lost  # noqa: E402
from kgqa.evaluate.metrics import same_answer  # noqa: E402
from kgqa.programs import WalkConfig  # noqa: E402
from kgqa.programs.baselines import SimilarityWalk  # noqa: E402
from kgqa.programs.inspection import before_extraction  # noqa: E402
from kgqa.programs.ranking import SCORED  # noqa: E402
from kgqa.programs.saving import load_program, read_settings  # noqa: E402

PLACES = ("first", "2nd-3rd", "4th-shown", "scored, not shown", "reached, not scored", "left behind", "3 hops away",
          "beyond 3 hops")


@dataclass(frozen=True)
class Outcome:
    """Where one question's gold answer stands in one walk."""

    place: str
    seconds: float
    settled: str  # why path answer extraction would not be asked ("" where it would be)

    @property
    def shown(self) -> bool:
        return self.place in PLACES[:3]


def place(labels: list[str], shown: list[str], answers: list[str], *, within: int, hops: int) -> str:
    """The first of `PLACES` that holds a gold answer: shown to extraction (first, second or third,
    later), among the candidates (ordered by the path scorer or after them), or not reached though
    `within` hops of a topic entity in the row's graph (left behind within the walk's `hops`, or
    one more hop away, or further)."""
    def gold(label: str) -> bool:
        return any(same_answer(label, a) for a in answers)

    at = next((i for i, label in enumerate(shown) if gold(label)), None)
    if at is not None:
        return PLACES[0] if at == 0 else PLACES[1] if at < 3 else PLACES[2]
    at = next((i for i, label in enumerate(labels) if gold(label)), None)
    if at is not None:
        return PLACES[3] if at < SCORED else PLACES[4]
    return PLACES[5] if within <= hops else PLACES[6] if within == hops + 1 else PLACES[7]


def walk_all(walker: SimilarityWalk, examples: list, within: dict[str, int]) -> list[Outcome]:
    outcomes = []
    for ex in examples:
        started = time.perf_counter()
        ranked, _ = before_extraction(walker, ex.question, list(ex.topic_entities) or None)
        candidates, shown = (ranked.candidates, ranked.shown) if ranked else ([], [])
        settled = (ranked.settled or "") if candidates else "nothing reached"
        outcomes.append(Outcome(place([c.label for c in candidates], [c.label for c in shown], list(ex.answers),
                                      within=within[ex.id], hops=walker.config.depth), time.perf_counter() - started,
                                settled.split(":")[0]))
    return outcomes


def paired(base: list[bool], other: list[bool]) -> str:
    """'+gained / -lost' (`bench.path_scorer.paired`): the questions `other` holds that `base` does
    not, and the other way round."""
    return "+{} / -{}".format(*gained_lost(base, other))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program", type=Path, required=True, help="a compiled CWQ-mini program (its scorer, prior and walk)")
    parser.add_argument("--seed", type=int, default=0, help="the seed it was compiled with (its compile sample is left out)")
    parser.add_argument("--dev", type=int, default=300)
    parser.add_argument("--variants", default="[{}]", help="a JSON list of WalkConfig fields: one walk for each")
    parser.add_argument("--out", type=Path, default=None, help="where to write the table (table.md) and each question's places")
    args = parser.parse_args(argv)
    settings = read_settings(args.program)
    seed, train = args.seed, settings.get("train")
    if not train:
        parser.error(f"{args.program}: its settings do not say how many compile questions it was compiled on")
    bench = cwq_bench(args.dev, train, seed, CWQ_MINI, split="dev")
    program = load_program(args.program, bench.kg, settings=settings)
    dev = bench.test["dev"]
    within = {ex.id: next((h for h in range(1, 5) if answerable(ex, h)), 99) for ex in dev}  # hops to a gold answer
    base_config = program.config.to_dict()
    results = []
    for variant in json.loads(args.variants):
        config = bench.walk(WalkConfig(**{**base_config, "depth": CWQ_FLOOR_DEPTH, **variant}))
        walker = SimilarityWalk(bench.kg, config=config, embedder=program.embedder, path_scorer=program.path_scorer,
                                chain_prior=program.chain_prior)
        outcomes = walk_all(walker, dev, within)
        results.append((variant, outcomes))
        print(json.dumps(variant), {p: sum(o.place == p for o in outcomes) for p in PLACES}, flush=True)
    base = [o.shown for o in results[0][1]]
    lines = [f"CWQ-mini dev, {len(dev)} questions outside the compile sample of {args.program} (seed {seed}, "
             f"{train} compile questions); walked with no LLM", "",
             "| walk | " + " | ".join(PLACES) + " | s a question | first: gained / lost | shown: gained / lost |",
             "|---|" + "---|" * (len(PLACES) + 3)]
    base_first = [o.place == PLACES[0] for o in results[0][1]]
    for variant, outcomes in results:
        shares = " | ".join(f"{sum(o.place == p for o in outcomes) / len(outcomes):.3f}" for p in PLACES)
        first = [o.place == PLACES[0] for o in outcomes]
        seconds = sum(o.seconds for o in outcomes) / len(outcomes)
        lines.append(f"| {json.dumps(variant) if variant else 'as compiled'} | {shares} | {seconds:.2f} | "
                     f"{paired(base_first, first)} | {paired(base, [o.shown for o in outcomes])} |")
    lines += ["", "Why path answer extraction would not be asked (questions; the first shown right):", ""]
    for variant, outcomes in results:
        reasons = Counter(o.settled for o in outcomes if o.settled)
        lines.append(f"- {json.dumps(variant) if variant else 'as compiled'}: " + "; ".join(
            f"{why} {n} ({sum(o.settled == why and o.place == PLACES[0] for o in outcomes)})" for why, n in reasons.most_common()))
    print("\n".join(lines))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "table.md").write_text("\n".join(lines) + "\n")
        (args.out / "places.json").write_text(json.dumps({json.dumps(v): {ex.id: o.place for ex, o in zip(dev, outcomes)}
                                                          for v, outcomes in results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
