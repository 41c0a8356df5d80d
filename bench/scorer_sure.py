"""Where to let the path scorer answer without the extraction call (`WalkConfig.scorer_sure`),
measured on CWQ-mini dev questions outside the compile sample, paired question by question.

One command: the program compiled fresh on the `--train` compile questions of seed `--seed`
(`bench.accuracy`'s CWQ-mini bench; kept in `--out`, so a rerun reuses it), then `--dev` dev
questions asked with extraction deciding (`scorer_sure` 1.0; records resumed), then the sweep.
Each record's trace keeps the path scorer's softmax share of the first candidate shown to
extraction (`Trace.first_share`). At a threshold t, a question whose share is at least t would be
answered by that first candidate instead of by extraction; the rest keep the answers they got.
For each t: the questions it would answer so, Hits@1 of the run and at t, the answers gained and
lost (paired), and the extraction and fact-filter calls (and their input tokens) it would save.
Hits@1 is exact for the first answer; it leaves out the value check, which reorders the answers
of a comparison after extraction. `--records FILE` sweeps a run's records without asking anything
(`--outside-compile`: only those of questions outside the compile sample). The extraction step's
break-even (`break_even`) is what sets `Budget.sure_precision`.
The threshold the compile measured on held-out training walks (`programs.scorer.Calibration`, the
walk's default) is swept too and marked "compiled"; `--program DIR` names the program to read it from.
Tune on dev only.

    .venv/bin/python -m bench.scorer_sure --dev 300 --out runs/scorer-sure
    .venv/bin/python -m bench.scorer_sure --records runs/scorer-sure/bootstrap-dev.jsonl --program runs/scorer-sure/program-bootstrap
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from kgqa.env import stay_offline

stay_offline()

from kgqa.evaluate.metrics import score_answers  # noqa: E402
from kgqa.evaluate.runner import read_records  # noqa: E402

THRESHOLDS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)  # 0.0: the scorer's first always
SAVED_STEPS = ("extract_answers", "filter_facts")  # the predictors only extraction's answer reads


@dataclass(frozen=True)
class Sweep:
    threshold: float
    questions: int  # in the records
    answered: int  # by the scorer's first at this threshold
    hits_run: float  # Hits@1 of the run as it was
    hits_sure: float  # Hits@1 with the scorer answering where it is sure
    gained: int
    lost: int
    calls_saved: int
    tokens_saved: int

    def row(self, *, compiled: float | None = None) -> str:
        mark = " (compiled)" if self.threshold == compiled else ""
        return (f"| {self.threshold:.2f}{mark} | {self.answered} | {self.hits_run:.3f} | {self.hits_sure:.3f} | "
                f"+{self.gained} / -{self.lost} | {self.calls_saved / self.questions:.2f} | "
                f"{self.tokens_saved / self.questions:,.0f} |")


def load(path: Path) -> list[dict]:
    """A run's records: its JSONL, or the same packed as `.jsonl.gz` (as `bench/results/` keeps them)."""
    if path.suffix == ".gz":
        from bench.reproduce import read_gzipped

        return read_gzipped(path)
    return list(read_records(path, repair=False).values())


def first_right(record: dict) -> bool:
    """Whether the first candidate shown to extraction is a gold answer."""
    shown = record["trace"].get("candidates") or []
    gold = record["gold"]
    return bool(shown) and score_answers(shown[:1], gold["answers"], gold.get("aliases")).hits1 > 0


def sweep(records: list[dict], thresholds=THRESHOLDS) -> list[Sweep]:
    """Each threshold's paired outcome over `records` (a run with extraction deciding)."""
    if not records:
        raise ValueError("no records to read")
    if not any("first_share" in r["trace"] for r in records):
        raise ValueError("these records keep no scorer share (Trace.first_share): run them again at this commit")
    out = []
    for t in thresholds:
        answered = gained = lost = calls = tokens = 0
        hits_run = hits_sure = 0.0
        for record in records:
            trace, was = record["trace"], record["scores"]["hits1"] > 0
            share = trace.get("first_share")
            sure = share is not None and share >= t
            now = first_right(record) if sure else was
            hits_run += was
            hits_sure += now
            if sure:
                answered += 1
                gained += now and not was
                lost += was and not now
                usage = trace.get("step_usage") or {}
                calls += sum(usage.get(step, [0, 0])[0] for step in SAVED_STEPS)
                tokens += sum(usage.get(step, [0, 0, 0])[1] for step in SAVED_STEPS)
        n = len(records)
        out.append(Sweep(t, n, answered, hits_run / n, hits_sure / n, gained, lost, calls, tokens))
    return out


def break_even(records: list[dict]) -> str:
    """How often extraction kept a right first candidate and rescued a wrong one, and the share of
    right firsts above which the first should answer alone (`Budget.sure_precision`): where a first
    right with probability p answers alone, p is won where extraction would have lost it and 1 - p
    lost where it would have rescued it."""
    right = [r["scores"]["hits1"] > 0 for r in records if first_right(r)]
    wrong = [r["scores"]["hits1"] > 0 for r in records if not first_right(r)]
    if not right or not wrong:
        return "break-even: not measured (no right or no wrong first candidate)"
    kept, rescued = sum(right) / len(right), sum(wrong) / len(wrong)
    even = rescued / (rescued + 1 - kept) if rescued + 1 - kept > 0 else 1.0
    return (f"extraction kept a right first on {sum(right)} of {len(right)} ({kept:.3f}) and rescued a wrong first on "
            f"{sum(wrong)} of {len(wrong)} ({rescued:.3f}): the first should answer alone where it is right more than "
            f"{even:.2f} of the time")


def table(sweeps: list[Sweep], *, compiled: float | None = None) -> str:
    """The sweep as a Markdown table, the compile's own threshold (`compiled`) marked."""
    head = ("| share at least | answered by the scorer | Hits@1 run | Hits@1 | gained / lost | calls saved a question | "
            "input tokens saved a question |\n|---|---|---|---|---|---|---|")
    return "\n".join([head, *(s.row(compiled=compiled) for s in sweeps)]) + "\n"


def calibration(program: Path):
    """The calibration saved with `program`'s path scorer; None where it has no scorer."""
    from kgqa.programs.scorer import PathScorer

    scorer = PathScorer.load(program)
    return scorer.calibration if scorer.trained else None


def ask(bench, out: Path, *, lm, sample: str = "dev", progress: bool = True) -> Path:
    """`bench`'s `sample` asked by its compiled program (compiled into `out` once, then reused)
    with extraction deciding, under `lm`; the records' path (a rerun resumes them)."""
    from dataclasses import replace

    import dspy

    from bench.accuracy import build
    from kgqa.evaluate.runner import evaluate
    from kgqa.lm.adapter import ConstrainedJSONAdapter
    from kgqa.programs import WalkConfig

    out.mkdir(parents=True, exist_ok=True)
    records = out / f"bootstrap-{sample}.jsonl"
    foreign = foreign_records(records, sample=[ex.id for ex in bench.test[sample]], compiled_on=[ex.id for ex in bench.train])
    if foreign:
        raise ValueError(f"{records}: {foreign}; a record copied in from another run is not paired with this "
                         "program's questions: move it out")
    with dspy.context(lm=lm, adapter=ConstrainedJSONAdapter()):
        program = build("bootstrap", bench, out, WalkConfig(), sample)
        program.config = replace(program.config, scorer_sure=1.0)
        evaluate(program, bench.test[sample], out=records, progress=progress)
    return records


def foreign_records(path: Path, *, sample: list[str], compiled_on: list[str]) -> str | None:
    """What is wrong with the records already in `path` for a run over `sample` by a program compiled on
    `compiled_on` (question ids): records of questions the program was compiled on (its scorer has
    seen their gold paths), or of questions outside the sample; None when nothing is."""
    if not path.exists():
        return None
    ids = list(read_records(path, repair=False))
    trained, outside = set(ids) & set(compiled_on), set(ids) - set(sample)
    if trained:
        return f"{len(trained)} records of questions the program was compiled on (e.g. {min(trained)})"
    if outside:
        return f"{len(outside)} records of questions outside the sample (e.g. {min(outside)})"
    return None


def main(argv: list[str] | None = None) -> int:
    from bench.accuracy import CWQ_MINI

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=Path, help="sweep these JSONL records (a run with extraction deciding); ask nothing")
    parser.add_argument("--dev", type=int, default=300, help="CWQ-mini dev questions outside the compile sample")
    parser.add_argument("--train", type=int, default=1500, help="compile questions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lm", default="local")
    parser.add_argument("--cwq-mini", type=Path, default=CWQ_MINI)
    parser.add_argument("--out", type=Path, default=Path("runs/scorer-sure"), help="the program and the records")
    parser.add_argument("--program", type=Path, help="the program whose compiled threshold to sweep too "
                        "(default: --out's, when asking)")
    parser.add_argument("--outside-compile", action="store_true",
                        help="with --records: leave out records of the questions of the --train/--seed compile sample")
    parser.add_argument("--thresholds", type=lambda text: [float(t) for t in text.split(",")], default=list(THRESHOLDS))
    args = parser.parse_args(argv)
    if args.records is not None and not args.records.exists():
        parser.error(f"no records at {args.records}")
    if args.records is None:
        from bench.accuracy import cwq_bench
        from kgqa.specs import make_lm

        bench = cwq_bench(args.dev, args.train, args.seed, args.cwq_mini, split="dev")
        try:
            path = ask(bench, args.out, lm=make_lm(args.lm))
        except ValueError as error:
            parser.error(str(error))
        args.program = args.program or args.out / "program-bootstrap"
    else:
        path = args.records
    records = load(path)
    if args.records is not None and args.outside_compile:
        from bench.accuracy import compile_sample
        from kgqa.data.rog import load_rog

        compiled_on = {ex.id for ex in compile_sample(load_rog(args.cwq_mini / "cwq_mini_dev.jsonl.gz"), args.train, args.seed)}
        kept = [r for r in records if r["id"] not in compiled_on]
        print(f"{len(records) - len(kept)} records of the {args.train} seed-{args.seed} compile questions left out")
        records = kept
    thresholds, compiled = list(args.thresholds), None
    if args.program is not None:
        try:
            calibrated = calibration(args.program)
        except ValueError as error:
            parser.error(f"{args.program}: {error}")
        if calibrated is None or calibrated.sure_at is None:
            print(f"{args.program}: its compile trusts the scorer at no share ({calibrated})")
        else:
            compiled = calibrated.sure_at
            thresholds = sorted({*thresholds, compiled})
            print(f"{args.program}: its compile trusts the scorer from a share of {compiled:.2f} (its first was a gold "
                  f"answer on {calibrated.right} of {calibrated.measured} held-out teacher walks from there; "
                  f"{calibrated.held_out} held out)")
    try:
        print(f"{len(records)} questions of {path}\n")
        print(table(sweep(records, thresholds), compiled=compiled), end="")
        print(f"\n{break_even(records)}")
    except ValueError as error:
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
