"""Evaluating a program: one JSONL record per question, written as it completes, resumable.

Not `dspy.Evaluate`: that one resubmits stragglers after 120 s, stops after 10 errors and keeps
results in memory. Here every finished question is on disk (one `write` + fsync per record),
a rerun skips the ids already there (a line cut short by a crash is dropped and redone), and
an exception in one question becomes that question's record.

An LM that does not answer is not a wrong answer: such a question's record carries the error
(`StopReason.LM_ERROR`) and a rerun asks it again. When `stop_after` questions in a row end that
way, the LM is down: the run stops (`LMDown`), with every record so far kept.

One evaluation writes a records file at a time: a second one on the same file is refused
(`RecordsBusy`), naming the first, instead of asking every question again beside it. A record holds
at most the first `RECORD_CHARS` characters of the question and of the error it was given.
"""

from __future__ import annotations

import contextvars
import fcntl
import json
import logging
import os
import statistics
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import dspy

from kgqa.errors import KGQAError, LMUnavailable
from kgqa.evaluate.metrics import example_scores, same_answer
from kgqa.programs.render import fact_names
from kgqa.programs.trace import StopReason, Trace

log = logging.getLogger(__name__)
RECORD_CHARS = 1_000  # of a question or an error kept in its record (a bad row's question may be megabytes)


@dataclass(frozen=True)
class Summary:
    questions: int
    hits1: float
    hit_any: float
    f1: float
    llm_calls: float
    input_tokens: float
    output_tokens: float
    sparql_queries: float
    seconds: float
    errors: int
    seconds_median: float = 0.0
    lm_errors: int = 0  # questions the LM did not answer (down, timed out): no answer, resumed by a rerun
    llm_failures: float = 0.0  # per question: calls the LM did not answer
    fallbacks: float = 0.0  # per question: steps decided without the model (its reply unparseable or invalid)
    degraded: float = 0.0  # share of questions with any LM failure, unparseable reply or fallback
    candidate_recall: float = 0.0  # share of questions whose gold answer reached the answer step (a candidate shown, or in a kept fact)

    def as_dict(self) -> dict:
        return asdict(self)

    def table(self, title: str = "") -> str:
        rows = [
            ("questions", f"{self.questions}"),
            ("Hits@1", f"{self.hits1:.3f}"),
            ("Hit@any", f"{self.hit_any:.3f}"),
            ("F1", f"{self.f1:.3f}"),
            ("LLM calls / q", f"{self.llm_calls:.1f}"),
            ("input tokens / q", f"{self.input_tokens:.0f}"),
            ("output tokens / q", f"{self.output_tokens:.0f}"),
            ("SPARQL queries / q", f"{self.sparql_queries:.1f}"),
            ("seconds / q", f"{self.seconds:.2f}"),
            ("median s / q", f"{self.seconds_median:.2f}"),
            ("LM failures / q", f"{self.llm_failures:.2f}"),
            ("fallbacks / q", f"{self.fallbacks:.2f}"),
            ("share with either", f"{self.degraded:.3f}"),
            ("errors", f"{self.errors}" + (f" ({self.lm_errors} LM not answering: run again to resume)" if self.lm_errors else "")),
        ]
        width = max(len(k) for k, _ in rows)
        lines = [f"| {'metric':<{width}} | value |", f"|{'-' * (width + 2)}|-------|"]
        lines += [f"| {k:<{width}} | {v} |" for k, v in rows]
        return (f"{title}\n" if title else "") + "\n".join(lines)


class LMDown(LMUnavailable):
    """The LM did not answer several questions in a row: the run stopped, its records kept."""

    def __init__(self, message: str, summary: Summary) -> None:
        super().__init__(message)
        self.summary = summary


class RecordsBusy(KGQAError, RuntimeError):
    """Another evaluation is writing the same records file."""


def record_for(example: dspy.Example, prediction: dspy.Prediction | None, error: str | None, seconds: float) -> dict:
    answers = list(prediction.answers) if prediction is not None else []
    stop = prediction.trace.stop_reason if prediction is not None else None
    if error is None and stop and (stop.unfinished or stop is StopReason.BAD_QUESTION):
        error = prediction.trace.error  # the LM did not answer, the run was cut, or the question cannot be asked
    scores = example_scores(example, dspy.Prediction(answers=answers))
    return {
        "id": example.id,
        "question": _clipped(example.question),
        "gold": {"answers": list(example.answers), "aliases": dict(getattr(example, "aliases", {}) or {})},
        "prediction": "\n\n".join(prediction.paths) if prediction is not None else "",
        "answers": answers,
        "trace": prediction.trace.to_dict() if prediction is not None else {},
        "scores": scores.as_dict(),
        "seconds": round(seconds, 3),
        "error": _clipped(error),
    }


def _clipped(text: str | None) -> str | None:
    return text if text is None or len(text) <= RECORD_CHARS else text[:RECORD_CHARS] + "..."


def read_records(path: Path, *, repair: bool = True) -> dict[str, dict]:
    """Records by id. A last line cut short by a crash is removed from the file, unless `repair`
    is off: a reader beside a running evaluation must not cut the line being written."""
    if not path.exists():
        return {}
    records, good = {}, 0
    with path.open("rb") as handle:
        for line in handle:
            try:
                record = json.loads(line) if line.endswith(b"\n") else None
            except ValueError:
                record = None
            if not isinstance(record, dict) or "id" not in record:
                break
            records[record["id"]] = record
            good += len(line)
    if repair and good < path.stat().st_size:
        with path.open("r+b") as handle:
            handle.truncate(good)
    return records


def record_line(record: dict) -> bytes:
    """One record as a JSONL line. Text that UTF-8 cannot encode (a lone surrogate, which JSON
    allows) is written as JSON escapes instead, and the record says so (`"escaped": true`): every
    record can be written and read back."""
    try:
        return (json.dumps(record, ensure_ascii=False) + "\n").encode()
    except UnicodeEncodeError:
        return (json.dumps({**record, "escaped": True}) + "\n").encode()


def _rewrite(path: Path, records) -> None:
    """Replace `path` with these records, atomically: a crash leaves the old file or the new one."""
    scratch = path.with_name(path.name + ".tmp")
    with scratch.open("wb") as handle:
        handle.writelines(record_line(record) for record in records)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(scratch, path)


def unfinished(record: dict) -> bool:
    """A record of a question that was not answered for a reason outside it (the LM was down): a rerun asks it again."""
    stop = Trace.from_dict(record.get("trace")).stop_reason
    return bool(stop and stop.unfinished)


def summarize(records: Sequence[dict]) -> Summary:
    n = len(records)
    traces = [Trace.from_dict(r["trace"]) for r in records]

    def mean(values) -> float:
        values = list(values)
        return sum(values) / len(values) if values else 0.0

    return Summary(
        questions=n,
        hits1=mean(r["scores"]["hits1"] for r in records),
        hit_any=mean(r["scores"]["hit_any"] for r in records),
        f1=mean(r["scores"]["f1"] for r in records),
        llm_calls=mean(t.llm_calls for t in traces),
        input_tokens=mean(t.input_tokens for t in traces),
        output_tokens=mean(t.output_tokens for t in traces),
        sparql_queries=mean(t.sparql_queries for t in traces),
        seconds=mean(r["seconds"] for r in records),
        errors=sum(1 for r in records if r["error"]),
        seconds_median=statistics.median(r["seconds"] for r in records) if records else 0.0,
        lm_errors=sum(1 for r in records if unfinished(r)),
        llm_failures=mean(t.llm_failures for t in traces),
        fallbacks=mean(t.fallbacks for t in traces),
        degraded=mean(bool(t.llm_failures or t.parse_failures or t.fallbacks) for t in traces),
        candidate_recall=mean(candidate_recalled(r, t) for r, t in zip(records, traces)),
    )


def candidate_recalled(record: dict, trace: Trace) -> bool:
    """Whether a gold answer reached the answer step: among the candidates shown to path answer
    extraction, or named in a fact the fact filter kept."""
    gold = (record.get("gold") or {}).get("answers") or []
    facts = [name for fact in trace.facts for name in fact_names(fact)]
    return any(same_answer(shown, answer) for shown in [*trace.candidates, *facts] for answer in gold)


def evaluate(
    program: dspy.Module,
    examples: Sequence[dspy.Example],
    *,
    out: str | Path,
    threads: int = 1,
    progress: bool = True,
    stop_after: int = 3,
    stamp: Mapping[str, str] | None = None,
) -> Summary:
    """Run the program on every example not yet answered in `out`, appending records; summarize
    them all. Records of questions the LM did not answer are asked again. `stop_after` questions
    in a row that the LM did not answer stop the run with `LMDown` (0: never stop).

    `stamp` (what ran: hashes of the program file and of the code, say) goes into every record; a
    record with another stamp, or none, is dropped from `out` and its question asked again, so the
    file only ever holds records of what runs now."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with _sole_writer(out):
        return _evaluate(program, examples, out=out, threads=threads, progress=progress, stop_after=stop_after, stamp=stamp)


@contextmanager
def _sole_writer(out: Path) -> Iterator[None]:
    """Holds `out`'s lock for the run: `OUT.lock`, locked (flock) and holding the writer's pid. A
    second writer is refused in one line naming the first; a killed writer's lock goes with it."""
    lock = out.with_name(out.name + ".lock")
    while True:
        handle = lock.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise RecordsBusy(f"{out} is being written by another evaluation (pid {holder}): let it finish (a rerun then "
                              "asks only what is left), or give another --out") from None
        try:
            if os.stat(lock).st_ino == os.fstat(handle.fileno()).st_ino:
                break  # locked the file that is there, not one a finishing writer has just removed
        except FileNotFoundError:
            pass
        handle.close()
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
    finally:
        lock.unlink(missing_ok=True)
        handle.close()


def _evaluate(program: dspy.Module, examples: Sequence[dspy.Example], *, out: Path, threads: int, progress: bool,
              stop_after: int, stamp: Mapping[str, str] | None) -> Summary:
    unique = list({ex.id: ex for ex in reversed(examples)}.values())[::-1]  # first of each id
    done = read_records(out)
    if stamp is not None:
        stamp = dict(stamp)
        kept = {i: r for i, r in done.items() if r.get("stamp") == stamp}
        if len(kept) < len(done):
            log.info("%s: %d records of another program or code are asked again", out, len(done) - len(kept))
            _rewrite(out, kept.values())
            done = kept
    todo = [ex for ex in unique if ex.id not in done or unfinished(done[ex.id])]
    lock = threading.Lock()
    bar = _progress(len(unique), len(unique) - len(todo)) if progress else None
    outage: list[dict] = []  # the latest records the LM did not answer, in a row (in the order they ended)
    down = threading.Event()

    def answer(example: dspy.Example) -> dict | None:
        if down.is_set():  # the LM is down: questions not started are left for the rerun
            return None
        start = time.perf_counter()
        try:
            if getattr(example, "bad_row", None):  # a row that cannot be asked: its record says why, nothing is asked
                prediction = dspy.Prediction(answers=[], paths=[], trace=Trace(StopReason.BAD_QUESTION, error=example.bad_row))
            else:
                prediction = program(question=example.question, topic_entities=example.topic_entities)
            record = record_for(example, prediction, None, time.perf_counter() - start)
        except Exception as exc:  # one question failing must not stop the run: it becomes the record
            log.warning("question %s failed: %s: %s", example.id, type(exc).__name__, exc)
            record = record_for(example, None, f"{type(exc).__name__}: {exc}"[:500], time.perf_counter() - start)
        if stamp is not None:
            record["stamp"] = stamp
        with lock:  # counted here, before this thread takes its next question
            outage[:] = [*outage, record] if unfinished(record) else []
            if stop_after and len(outage) >= stop_after:
                down.set()
        return record

    with out.open("ab") as handle:

        def write(record: dict | None) -> None:
            if record is None:
                return
            line = record_line(record)
            with lock:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
                done[record["id"]] = record
                if bar is not None:
                    bar.update(1)

        if threads <= 1:
            for example in todo:
                write(answer(example))
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                futures = [pool.submit(contextvars.copy_context().run, answer, ex) for ex in todo]
                for future in as_completed(futures):
                    write(future.result())
    if bar is not None:
        bar.close()
    summary = summarize([done[ex.id] for ex in unique if ex.id in done])
    if down.is_set():
        left = sum(1 for ex in unique if ex.id not in done or unfinished(done[ex.id]))
        raise LMDown(f"the LM did not answer {len(outage)} questions in a row, so the run stopped: {outage[-1]['error']}. "
                     f"{len(done)} records are kept in {out}; {left} questions are left: run the same command again "
                     "once the LM answers", summary)
    return summary


def _progress(total: int, initial: int):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="q", desc="evaluate", dynamic_ncols=True)
