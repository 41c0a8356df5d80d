"""What users do with kgqa, as functions: compile a program into a directory, evaluate one, ask one.
Each compile and evaluate is an MLflow run. The command line only parses and prints around these."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import dspy

from kgqa import serving, tracking
from kgqa.errors import LMUnavailable
from kgqa.evaluate.runner import LMDown, Summary, evaluate, read_records
from kgqa.kg import KnowledgeGraph
from kgqa.optimizers.gold_paths import compile_program
from kgqa.optimizers.teleprompters import Budget
from kgqa.programs import KGQA, KGProgram, WalkConfig
from kgqa.programs.saving import CHAINS_FILE, CONFIG_FILE, LINKING_FILE, PROGRAM_FILE, save_program
from kgqa.programs.scorer import SETTINGS_FILE, WEIGHTS_FILE
from kgqa.programs.trace import StopReason, Trace
from kgqa.progress import QUIET, Progress


class LMUnreachable(LMUnavailable):
    """The language model did not answer a one-line request before a run."""


def check_lm(lm: dspy.BaseLM, spec: str) -> None:
    """One tiny request before a long run, so that a wrong model name or a dead server is one clear error."""
    try:
        lm("Reply with the word OK.", max_tokens=4)
    except Exception as exc:  # providers raise anything: connection, auth, not found
        reason = (str(exc).strip().splitlines() or [""])[0][:300]
        raise LMUnreachable(f"LM {spec!r} did not answer: {type(exc).__name__}: {reason}") from None


def compile_to_dir(
    *,
    kg: KnowledgeGraph,
    trainset: Sequence[dspy.Example],
    devset: Sequence[dspy.Example] | None,
    optimizer: str,
    out: str | Path,
    settings: dict,
    walk: WalkConfig = WalkConfig(),
    budget: Budget = Budget(),
    teacher: dspy.LM | None = None,
    reflection: dspy.LM | None = None,
    tracking_uri: str | None = None,
    experiment: str = "kgqa",
    threads: int = 1,
    progress: bool = True,
    register: str | None = None,
) -> dict[str, Summary]:
    """Compile on `trainset`, save `out/program.json` and `out/config.json` (with the seconds compiling
    took, `compile_seconds`), and measure on `devset` before and after; all of it logged to one MLflow
    run, the program as an MLflow model (registered as `register` if given). Returns the dev summaries."""
    out = Path(out)
    params = {**settings, "optimizer": optimizer, **{f"walk.{k}": v for k, v in walk.to_dict().items()}}
    params.update({f"budget.{k}": v for k, v in asdict(budget).items()})
    summaries: dict[str, Summary] = {}
    with tracking.mlflow_run(f"compile {optimizer}", params=params, tracking_uri=tracking_uri, experiment=experiment):
        uncompiled = KGQA(kg, config=walk)
        if devset:
            summaries["before"] = evaluate(uncompiled, devset, out=out / "dev_before.jsonl", threads=threads, progress=progress)
            tracking.log_metrics("dev_before_", summaries["before"].as_dict())
        start = time.perf_counter()
        bars = Progress(sys.stderr) if progress else QUIET  # the terminal's, taken before the teleprompters' output is kept aside
        with tracking.autolog_compile(), _quiet_third_party():
            compiled = compile_program(
                uncompiled, optimizer, trainset=trainset, valset=devset, budget=budget, teacher=teacher, reflection=reflection,
                progress=bars,
            )
        seconds = round(time.perf_counter() - start, 1)
        tracking.log_metrics("", {"compile_seconds": seconds})
        scorer = getattr(compiled, "path_scorer", None)
        if scorer is not None and scorer.trained:  # what the path scorer was fitted on, and in how long
            report = scorer.report
            tracking.log_metrics("scorer_", {"questions": report.questions, "groups": report.groups, "fit_seconds": report.seconds,
                                             "last_loss": report.losses[-1] if report.losses else 0.0})
        labels = getattr(compiled, "path_labels", None)  # how many training questions had gold paths, and from where
        if labels:
            tracking.log_metrics("path_labels_", labels)
        save_program(compiled, out, settings={**settings, "optimizer": optimizer, "budget": asdict(budget), "compile_seconds": seconds,
                                              **({"path_labels": labels} if labels else {})})
        if devset:
            summaries["after"] = evaluate(compiled, devset, out=out / "dev_after.jsonl", threads=threads, progress=progress)
            tracking.log_metrics("dev_after_", summaries["after"].as_dict())
        for name in (PROGRAM_FILE, CONFIG_FILE, LINKING_FILE, CHAINS_FILE, SETTINGS_FILE, WEIGHTS_FILE):
            if (out / name).is_file():  # the compiled parts there are (an untrained one leaves no file)
                tracking.log_artifact(out / name)
        serving.log_model(out, registered_name=register)
    return summaries


@contextlib.contextmanager
def _quiet_third_party():
    """DSPy's teleprompters draw their own progress bars and print their own counts while
    compiling: kept out of kgqa's output (its log lines and its own lines stay; errors still raise)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def evaluate_program(
    program: KGProgram,
    examples: Sequence[dspy.Example],
    *,
    out: str | Path,
    settings: dict,
    tracking_uri: str | None = None,
    experiment: str = "kgqa",
    threads: int = 1,
    progress: bool = True,
    pages: int = 3,
) -> Summary:
    """Evaluate into `out` (resumable records) as one MLflow run, with pictures of the first
    `pages` wrong walks as artifacts. A run the LM stopped answering logs what it has, then raises `LMDown`."""
    with tracking.mlflow_run("evaluate", params=settings, tracking_uri=tracking_uri, experiment=experiment):
        try:
            summary = evaluate(program, examples, out=out, threads=threads, progress=progress)
        except LMDown as down:
            tracking.log_metrics("", down.summary.as_dict())
            tracking.set_tag("stopped", str(down)[:500])
            tracking.log_artifact(out)
            raise
        tracking.log_metrics("", summary.as_dict())
        tracking.log_artifact(out)
        for page in draw_wrong_walks(Path(out), [ex.id for ex in examples], pages=pages):
            tracking.log_artifact(page, artifact_path="walks")
    return summary


def draw_wrong_walks(records_file: Path, ids: Sequence[str], *, pages: int) -> list[Path]:
    """Pictures of the first `pages` wrong answers (Hits@1 = 0) among `ids`, drawn from their
    records into `<records>_walks/<id>.html`; the paths written. A question that could not be asked
    walked nowhere: it gets no picture."""
    from kgqa.picture import walk_page

    records = read_records(records_file, repair=False)
    wrong = [records[i] for i in dict.fromkeys(ids) if i in records and not records[i]["scores"]["hits1"]
             and records[i]["trace"].get("stop_reason") != StopReason.BAD_QUESTION.value][:pages]
    folder = records_file.with_name(records_file.stem + "_walks")
    written = []
    for record in wrong:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (re.sub(r"[^A-Za-z0-9_.-]+", "_", str(record["id"]))[:100] + ".html")
        path.write_text(walk_page(record["question"], record["answers"], record["prediction"].split("\n\n") if record["prediction"] else [],
                                  Trace.from_dict(record["trace"])), encoding="utf-8", errors="backslashreplace")
        written.append(path)
    return written
