"""Every published number one command away: each README result row compiled fresh and evaluated.

A row is a spec (dataset, split, sample seed and size, compile questions); `ROW` compiles the one
program with `bootstrap` on that row's training questions at the current commit, evaluates its fixed
samples with the LM, and keeps in `bench/results/ROW/`:

- `manifest.json`: the spec, the commit (and whether the tree was clean), the stamp (a hash of the
  program files, a hash of the code that answers), the compile seconds, each run's wall time and
  engine speed (`kgqa doctor`'s smoke test, measured before the run);
- `program/`: the compiled program (`kgqa ask --program bench/results/ROW/program ...` loads it);
  git keeps its large JSON files gzipped (`PACKED`: `program.json.gz`, ...) and not the scorer's
  weights, so a clone's row command unpacks the one and fits the other again before it loads it;
- `records/SAMPLE.jsonl.gz`: one record per question, each carrying the stamp; a CWQ-mini row also
  asks each sample of the path scorer alone (`SAMPLE-scorer-alone`: the compiled scorer's first
  candidate on the walk with no LLM, so the LLM's share of the answer shows), and a row may ask it
  again with a switch off (`SAMPLE-no-STEP`, `Row.off`: the same program and questions, paired);
- `table.md`: the row's lines as the README shows them, and where the gold answer stood among the
  candidates shown to extraction (first, second or third, ...) with the share answered right there.

Resumable across sessions: a record is reused only when its stamp is the current one (the same
program file, the same code); any other is asked again. The program is reused while the code hash
is unchanged, and compiled again otherwise (compiling is deterministic: the same code compiles the
same program, so records survive a fresh compile of unchanged code).

    .venv/bin/python -m bench.reproduce cwq-test-seed0          # one row (resumes)
    .venv/bin/python -m bench.reproduce --all                   # every row, one after the other
    .venv/bin/python -m bench.reproduce cwq-answers-seed0 --samples test-scorer-alone  # one sample now, the rest later
    .venv/bin/python -m bench.reproduce --check                 # no LLM, seconds: README == records
    .venv/bin/python -m bench.reproduce --index                 # rewrite bench/results/README.md
    .venv/bin/python -m bench.reproduce --report                # each row's table.md and the index, from the records

`--check` recomputes every README line that cites a row (`| [ROW](bench/results/ROW/) | ...`) from
the records of that row's folder and fails on any difference, checks that the index is current,
and lists each row whose stamp no longer matches the current code or program ("stale: re-run").
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from kgqa.env import stay_offline
from kgqa.programs.scorer import SETTINGS_FILE, WEIGHTS_FILE, weights_digest

stay_offline()

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
README = ROOT / "README.md"
INDEX = RESULTS / "README.md"
SYSTEM = "bootstrap"
# The code that answers a question: the packages a walk, its compile and its scoring run, and the
# bench's samples. The command line, the server and this harness are not in it.
CODE = ("kg", "data", "signatures", "programs", "optimizers", "evaluate", "kgqa/lm", "kgqa/specs.py", "kgqa/env.py",
        "kgqa/errors.py", "bench/accuracy.py")
UNTIMED = ("compile_minutes", "compile_seconds")  # config.json keys that time the compile, not part of the program


@dataclass(frozen=True)
class Row:
    """One published row: which questions, which training questions, compiled how."""

    dataset: str  # "metaqa" or "cwq-mini"
    seed: int  # the sample seed (and the compile sample's)
    per_hop: int  # questions per hop (MetaQA) or in all (CWQ-mini)
    train: int  # compile questions, disjoint from the sample
    split: str = "test"  # CWQ-mini: test questions, or dev questions outside the compile sample
    types: tuple[str, ...] = ()  # CWQ-mini: only these compositionality types
    alone: bool = False  # also ask each sample with the path scorer alone (no LLM; sample "NAME-scorer-alone")
    off: tuple[str, ...] = ()  # also ask each sample with each of these switched off (sample "NAME-no-STEP"): paired
    answers_alone: bool = False  # compiled without the gold paths the data gives (found in the graph from the answers)
    # Transfer: compiled on training questions of these hops only, asked the sample's questions of those hops only
    # (MetaQA: the question's hop count; CWQ-mini: the relations of its first gold path found from its answers)
    train_hops: tuple[int, ...] = ()
    ask_hops: tuple[int, ...] = ()
    about: str = ""

    def spec(self) -> dict:
        spec = {"system": SYSTEM, **asdict(self), "types": list(self.types), "off": list(self.off),
                "train_hops": list(self.train_hops), "ask_hops": list(self.ask_hops)}
        for later in ("off", "answers_alone", "train_hops", "ask_hops"):  # a row without them has the spec rows had before
            if not spec[later]:
                del spec[later]
        return spec

    def command(self, name: str) -> str:
        return f".venv/bin/python -m bench.reproduce {name}"


ROWS: dict[str, Row] = {
    "metaqa-seed0": Row("metaqa", seed=0, per_hop=30, train=1500, about="MetaQA dev, 30 questions per hop"),
    "metaqa-seed1": Row("metaqa", seed=1, per_hop=30, train=1500, about="MetaQA dev, 30 questions per hop"),
    "cwq-test-seed0": Row("cwq-mini", seed=0, per_hop=100, train=1500, alone=True, about="CWQ-mini test, 100 questions"),
    "cwq-test-seed1": Row("cwq-mini", seed=1, per_hop=100, train=1500, alone=True, about="CWQ-mini test, 100 questions"),
    "cwq-test-seed2": Row("cwq-mini", seed=2, per_hop=100, train=1500, alone=True, about="CWQ-mini test, 100 questions"),
    "cwq-answers-seed0": Row("cwq-mini", seed=0, per_hop=100, train=1500, alone=True, answers_alone=True,
                             about="CWQ-mini test, 100 questions; compiled from answers alone (ground_paths removed)"),
    "cwq-answers-seed1": Row("cwq-mini", seed=1, per_hop=100, train=1500, alone=True, answers_alone=True,
                             about="CWQ-mini test, 100 questions; compiled from answers alone (ground_paths removed)"),
    "cwq-answers-seed2": Row("cwq-mini", seed=2, per_hop=100, train=1500, alone=True, answers_alone=True,
                             about="CWQ-mini test, 100 questions; compiled from answers alone (ground_paths removed)"),
    "metaqa-answers-seed0": Row("metaqa", seed=0, per_hop=30, train=1500, answers_alone=True,
                                about="MetaQA dev, 30 questions per hop; compiled from answers alone (qtype removed)"),
    "metaqa-answers-seed1": Row("metaqa", seed=1, per_hop=30, train=1500, answers_alone=True,
                                about="MetaQA dev, 30 questions per hop; compiled from answers alone (qtype removed)"),
    "metaqa-transfer": Row("metaqa", seed=0, per_hop=30, train=1500, answers_alone=True, train_hops=(2, 3), ask_hops=(1,),
                           about="MetaQA 1-hop, compiled from answers alone on 2- and 3-hop questions only"),
    "cwq-transfer": Row("cwq-mini", seed=0, per_hop=100, train=1500, alone=True, answers_alone=True, train_hops=(2, 3),
                        ask_hops=(1,), about="CWQ-mini test questions one relation answers, compiled from answers alone "
                                             "on questions of 2- and 3-relation chains only"),
    "cwq-dev": Row("cwq-mini", seed=0, per_hop=100, train=1500, split="dev", alone=True, off=("path_scorer",),
                   about="CWQ-mini dev outside the compile sample, 100 questions: where changes are tuned"),
    "cwq-comp-sup": Row("cwq-mini", seed=0, per_hop=200, train=1500, types=("comparative", "superlative"),
                        about="every comparative and superlative CWQ-mini test question"),
}


# -- hashes ------------------------------------------------------------------------------------


def _digest(files: Iterable[tuple[str, bytes]]) -> str:
    sha = hashlib.sha256()
    for name, data in sorted(files):
        sha.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return sha.hexdigest()[:16]


def code_hash(root: Path = ROOT, *, parts: Sequence[str] = CODE) -> str:
    """A hash of the code that answers (`CODE`, every .py file in it), or of the files under `parts`."""
    files = []
    for part in parts:
        path = root / part
        found = [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
        files += [(p.relative_to(root).as_posix(), p.read_bytes()) for p in found if "__pycache__" not in p.parts]
    return _digest(files)


def program_hash(directory: Path) -> str:
    """A hash of a compiled program's files, its compile time (and the path scorer's fit time) left out.
    A packed file (`NAME.gz`) counts as the file it unpacks to, so packing changes no hash. The
    scorer's weights, kept out of git, are covered by the sha256 `path_scorer.json` holds of them,
    so a clone without them hashes the same (and loading the program there says they are missing)."""
    files = []
    for name, data in program_files(directory):
        if name == "config.json":
            config = json.loads(data)
            data = json.dumps({k: v for k, v in config.items() if k not in UNTIMED}, sort_keys=True).encode()
        elif name == SETTINGS_FILE:  # the scorer's fit time is no part of it
            scorer = json.loads(data)
            scorer["report"] = {k: v for k, v in scorer.get("report", {}).items() if k != "seconds"}
            data = json.dumps(scorer, sort_keys=True).encode()
        files.append((name, data))
    return _digest(files)


def _saved_digest(directory: Path) -> str | None:
    """The sha256 of its weights that a program's `path_scorer.json` keeps (None: none kept)."""
    try:
        return json.loads((directory / SETTINGS_FILE).read_text()).get("weights_sha256")
    except (OSError, ValueError):
        return None


def weights_trouble(directory: Path) -> str | None:
    """What is wrong with a saved program's scorer weights (missing, or not the ones it was saved with), or None."""
    saved = _saved_digest(directory)
    if saved is None:  # no scorer, or one saved before its settings kept the weights' hash: nothing to check
        return None
    if not (directory / WEIGHTS_FILE).exists():
        return f"its {WEIGHTS_FILE} is missing"
    if weights_digest(directory) != saved:
        return f"its {WEIGHTS_FILE} is not the one its {SETTINGS_FILE} was saved with"
    return None


# -- a row's program on disk -------------------------------------------------------------------

# The program's large JSON files, which git keeps gzipped (NAME.gz) beside the ignored NAME: together
# 1.5 to 2.5 MB a row, a fifth of that packed.
PACKED = ("program.json", "linking.json", "chains.json")


def program_files(directory: Path) -> list[tuple[str, bytes]]:
    """A saved program's files as (name, bytes), a packed one as the file it unpacks to (the packed
    one wins over a live copy: it is what git keeps), the scorer's weights left out."""
    files: dict[str, bytes] = {}
    for path in sorted(directory.iterdir()) if directory.is_dir() else []:
        if path.name == WEIGHTS_FILE:
            continue
        if path.suffix == ".gz" and path.stem in PACKED:
            files[path.stem] = gzip.decompress(path.read_bytes())
        elif path.name not in files:
            files[path.name] = path.read_bytes()
    return sorted(files.items())


def has_program(directory: Path) -> bool:
    return any((directory / name).exists() for name in (PACKED[0], PACKED[0] + ".gz"))


def pack_program(directory: Path) -> None:
    """Write `NAME.gz` of each live large file (`_gzipped`); the live files stay, for loading."""
    for name in PACKED:
        live = directory / name
        if live.exists():
            (directory / f"{name}.gz").write_bytes(_gzipped(live.read_bytes()))


def unpack_program(directory: Path) -> None:
    """Write each packed file out where its live copy is missing or differs (a clone has only the packed ones)."""
    for name in PACKED:
        packed, live = directory / f"{name}.gz", directory / name
        if packed.exists():
            data = gzip.decompress(packed.read_bytes())
            if not live.exists() or live.read_bytes() != data:
                live.write_bytes(data)


def git_state(root: Path = ROOT) -> dict:
    """The commit; `clean`: the code that answers (`CODE`) is the commit's, so the commit reproduces
    the run; `changed`: any other file changed since the commit, outside bench/results (a few named)."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True,
                                check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--", ".", ":!bench/results"], cwd=root,
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "clean": None, "changed": []}
    changed = [line[3:] for line in status.splitlines()]
    code = [p for p in changed if any(p == part or p.startswith(part.rstrip("/") + "/") for part in CODE)]
    return {"commit": commit, "clean": not code, "changed": changed[:10]}


# -- records on disk ---------------------------------------------------------------------------


def live_records(folder: Path, sample: str) -> Path:
    """Where a run appends a sample's records (uncompressed while it runs)."""
    return folder / "records" / f"{sample}.jsonl"


def packed_records(folder: Path, sample: str) -> Path:
    return folder / "records" / f"{sample}.jsonl.gz"


def unpack(folder: Path, sample: str) -> Path:
    """The live file to resume, from the packed records where no live file is left."""
    live, packed = live_records(folder, sample), packed_records(folder, sample)
    if packed.exists() and not live.exists():
        live.parent.mkdir(parents=True, exist_ok=True)
        live.write_bytes(gzip.decompress(packed.read_bytes()))
    return live


def pack(folder: Path, sample: str) -> Path:
    """Compress the live records (`_gzipped`) and remove them."""
    live, packed = live_records(folder, sample), packed_records(folder, sample)
    packed.write_bytes(_gzipped(live.read_bytes()))
    live.unlink()
    return packed


def _gzipped(data: bytes) -> bytes:
    """`data` gzipped byte for byte reproducibly (no name, no time in the header): git sees a change only where one is."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def read_packed(folder: Path, sample: str) -> list[dict]:
    path = packed_records(folder, sample)
    return read_gzipped(path) if path.exists() else []


def read_gzipped(path: Path) -> list[dict]:
    """The records of a gzipped JSONL file, in order."""
    return [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines() if line.strip()]


def read_manifest(folder: Path) -> dict | None:
    path = folder / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else None


def write_manifest(folder: Path, manifest: dict) -> None:
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")


# -- one row -----------------------------------------------------------------------------------


@dataclass
class Sample:
    name: str
    examples: list
    answerable: list[str] = field(default_factory=list)  # ids of the questions some walk of its graph can answer
    base: str = ""  # the sample this one asks again another way ("" for the program as compiled)
    variant: str = ""  # how: ALONE (the path scorer alone), or the switch turned off


def load_bench(row: Row, *, metaqa: Path | None = None, cwq: Path | None = None):
    """The row's bench: its KG, its fixed samples and its training questions, as `bench.accuracy` draws them."""
    from bench import accuracy

    if row.dataset == "metaqa":
        return accuracy.metaqa_bench(row.per_hop, row.train, row.seed, metaqa or accuracy.METAQA)
    return accuracy.cwq_bench(row.per_hop, row.train, row.seed, cwq or accuracy.CWQ_MINI, split=row.split, types=row.types)


def narrowed(row: Row, bench):
    """The bench kept to the row's `train_hops` (its training questions) and `ask_hops` (its samples'
    questions); as it is for a row without them."""
    from bench.accuracy import Bench

    if not (row.train_hops or row.ask_hops):
        return bench

    def keep(examples, hops):
        return [ex for ex in examples if not hops or hops_of(ex, bench) in hops]

    test = {name: keep(examples, row.ask_hops) for name, examples in bench.test.items()}
    return Bench(bench.dataset, bench.kg, {name: examples for name, examples in test.items() if examples},
                 keep(bench.train, row.train_hops))


def hops_of(example, bench) -> int:
    """A question's hops: MetaQA's own count; elsewhere the relations of its first gold path found in
    the bench's graph from its answers alone (0: none found)."""
    from bench.accuracy import answers_alone
    from kgqa.optimizers.paths import label_paths

    if bench.dataset == "metaqa":
        return int(example.hop)
    label = label_paths(answers_alone([example])[0], bench.kg)
    return len(label.paths[0]) if label.paths else 0


ALONE = "-scorer-alone"  # the suffix of a sample asked with the path scorer alone


def samples_of(bench, *, alone: bool = False, off: Sequence[str] = ()) -> list[Sample]:
    """The bench's samples; after them all, each again as asked with each switch in `off` turned off
    (paired: the same program and questions), then, with `alone`, of the path scorer alone."""
    from bench import accuracy

    found = []
    for name, examples in bench.test.items():
        reachable = [ex.id for ex in examples if accuracy.answerable(ex)] if bench.dataset == "cwq-mini" else []
        found.append(Sample(name, examples, reachable))
    again = [Sample(f"{s.name}-no-{step.replace('_', '-')}", s.examples, s.answerable, s.name, step) for step in off for s in found]
    lone = [Sample(s.name + ALONE, s.examples, s.answerable, s.name, ALONE) for s in found] if alone else []
    return found + again + lone


def asker(sample: Sample, program, bench):
    """What asks a sample's questions: the program as compiled, with one switch off, or its path scorer alone."""
    from bench import accuracy

    if sample.variant == ALONE:
        return accuracy.scorer_alone(program, depth=bench.floor_depth(sample.base))
    if sample.variant:
        return accuracy.switched_off(program, sample.variant)
    return program


def compile_fresh(row: Row, bench, directory: Path) -> float:
    """Compile the row's program into `directory` (replacing what is there); the seconds it took."""
    from bench import accuracy
    from kgqa.optimizers.gold_paths import compile_program
    from kgqa.programs import KGQA, WalkConfig
    from kgqa.programs.saving import save_program
    from kgqa.progress import Progress

    if directory.exists():
        shutil.rmtree(directory)
    start = time.perf_counter()
    program = KGQA(bench.kg, config=bench.walk(WalkConfig()))
    trainset = accuracy.answers_alone(bench.train) if row.answers_alone else bench.train
    compiled = compile_program(program, SYSTEM, trainset=trainset, budget=accuracy.BUDGETS[SYSTEM], progress=Progress(sys.stderr))
    seconds = time.perf_counter() - start
    save_program(compiled, directory, settings={"kg": bench.dataset, "optimizer": SYSTEM, "train": len(bench.train),
                                                "path_labels": compiled.path_labels})
    return seconds


def engine_speed(lm_spec: str) -> dict | None:
    """The local engine's speed now (`kgqa doctor`'s smoke test), or None for another LM."""
    if lm_spec != "local":
        return None
    from kgqa.lm import smoke

    result = smoke.run()
    if not result.engine_ok:
        return None
    return {"prompt_tok_s": round(result.prompt_tokens_per_s, 1), "generated_tok_s": round(result.generated_tokens_per_s, 1)}


def run_row(name: str, row: Row, *, folder: Path, lm, lm_spec: str, fresh: bool = False, bench=None,
            progress: bool = True, only: Sequence[str] = ()) -> dict:
    """Compile (unless the program of this code is there) and evaluate every sample (with `only`,
    those samples alone: the others' records stay as they are, for a later run); the manifest."""
    import dspy

    from kgqa import tracking
    from kgqa.evaluate.runner import evaluate
    from kgqa.lm.adapter import ConstrainedJSONAdapter
    from kgqa.programs.saving import load_program

    started, clock, tree = datetime.now(timezone.utc), time.perf_counter(), git_state()
    folder.mkdir(parents=True, exist_ok=True)
    bench = narrowed(row, bench or load_bench(row))
    samples = samples_of(bench, alone=row.alone, off=row.off)
    code, previous = code_hash(), read_manifest(folder) or {}
    directory = folder / "program"
    same = (previous.get("spec") == row.spec() and previous.get("stamp", {}).get("code") == code and has_program(directory)
            and program_hash(directory) == previous["stamp"].get("program") and not weights_trouble(directory))
    if fresh or not same:  # a clone's program lacks its weights: compiled again, it is the same program where the fit is
        compile_seconds = compile_fresh(row, bench, directory)
        print(f"{name}: compiled on {len(bench.train)} questions in {compile_seconds:.0f} s", flush=True)
        pack_program(directory)
    else:
        compile_seconds = previous["compile_seconds"]
        unpack_program(directory)
    stamp = {"program": program_hash(directory), "code": code}
    program = load_program(directory, bench.kg)
    runs = previous.get("runs", []) if previous.get("stamp") == stamp else []
    if previous.get("running") and previous.get("stamp") == stamp:  # a run cut short (its records are kept)
        runs.append({**previous["running"], "cut_short": True, "questions_asked": None, "wall_seconds": None})
    unknown = sorted(set(only) - {s.name for s in samples})
    if unknown:
        raise ValueError(f"{name} has no sample {', '.join(unknown)}; its samples: {', '.join(s.name for s in samples)}")
    asking = [s for s in samples if not only or s.name in only]
    run = {"started": started.isoformat(timespec="seconds"), **tree, "lm": lm_spec, "engine": engine_speed(lm_spec),
           **({"samples": [s.name for s in asking]} if only else {})}
    manifest = {
        "row": name,
        "command": row.command(name),
        "spec": row.spec(),
        "stamp": stamp,
        "compile_seconds": round(compile_seconds, 1),
        "samples": {s.name: {"questions": len(s.examples), "answerable": s.answerable} for s in samples},
        "runs": runs,
        "running": run,  # what is running now: a run cut short leaves it, and its records, for the next
    }
    write_manifest(folder, manifest)
    asked = 0
    params = {"row": name, "lm": lm_spec, **row.spec(), **stamp, "compile_seconds": round(compile_seconds, 1)}
    with tracking.mlflow_run(f"bench reproduce {name}", params=params), dspy.context(lm=lm, adapter=ConstrainedJSONAdapter()):
        for sample in asking:
            live = unpack(folder, sample.name)
            before = _stamped(live, stamp)
            summary = evaluate(asker(sample, program, bench), sample.examples, out=live, stamp=stamp, progress=progress)
            tracking.log_metrics(f"{sample.name}.", summary.as_dict())
            asked += len(sample.examples) - before
            pack(folder, sample.name)
    del manifest["running"]
    runs.append({**run, "questions_asked": asked, "wall_seconds": round(time.perf_counter() - clock, 1)})
    manifest["wall_seconds"] = round(sum(r["wall_seconds"] or 0 for r in runs), 1)
    write_manifest(folder, manifest)
    write_table(name, folder)
    return manifest


def write_table(name: str, folder: Path) -> Path:
    """`table.md`: the row's README lines, and where the gold answer stood in each sample."""
    manifest = read_manifest(folder) or {"samples": {}}
    ranks = "\n\n".join(f"{sample}:\n\n{rank_table(read_packed(folder, sample))}" for sample in manifest["samples"])
    path = folder / "table.md"
    path.write_text(TABLE_HEAD + "\n" + "\n".join(row_lines(name, folder)) + "\n\nWhere the gold answer stood among "
                    "the candidates shown to extraction, and the share answered right there:\n\n" + ranks + "\n")
    return path


RANKS = (("first", 1, 1), ("second or third", 2, 3), ("fourth to tenth", 4, 10), ("later", 11, None))


def gold_rank(record: dict) -> int | None:
    """The place (1 = first) of the first candidate shown that is a gold answer, or None."""
    from kgqa.evaluate.metrics import same_answer

    gold = (record.get("gold") or {}).get("answers") or []
    for place, shown in enumerate(record.get("trace", {}).get("candidates") or [], 1):
        if any(same_answer(shown, answer) for answer in gold):
            return place
    return None


def rank_table(records: Sequence[dict]) -> str:
    """The share of questions by where the gold answer stood among the candidates, and Hits@1 there."""
    lines = ["| gold answer among the candidates | share of questions | answered right |", "|---|---|---|"]
    places = [(gold_rank(r), r["scores"]["hits1"]) for r in records]
    for label, low, high in (*RANKS, ("not among them", None, None)):
        hits = [h for place, h in places if (place is None if low is None else place is not None and low <= place
                                                 and (high is None or place <= high))]
        share = len(hits) / len(places) if places else 0.0
        right = f"{sum(hits) / len(hits):.2f}" if hits else "-"
        lines.append(f"| {label} | {share:.2f} ({len(hits)}) | {right} |")
    return "\n".join(lines)


def _stamped(path: Path, stamp: dict) -> int:
    from kgqa.evaluate.runner import read_records, unfinished

    return sum(1 for r in read_records(path).values() if r.get("stamp") == stamp and not unfinished(r))


# -- the README's lines ------------------------------------------------------------------------

TABLE_HEAD = ("| row | sample | questions | Hits@1 | F1 | candidate recall | answerable@3 | LLM calls | input tokens "
              "| median s | engine tok/s |\n|---|---|---|---|---|---|---|---|---|---|---|")
_ROW_LINK = re.compile(r"^\| \[([a-z0-9-]+)\]\(bench/results/\1/\) \| ([^|]+?) \|")


def row_lines(name: str, folder: Path) -> list[str]:
    """The README's lines for a row, one per sample, computed from its records and manifest."""
    from kgqa.evaluate.runner import summarize

    manifest = read_manifest(folder)
    if manifest is None:
        return []
    lines = []
    for sample, facts in manifest["samples"].items():
        records = read_packed(folder, sample)
        if not records:
            continue
        s = summarize(records)
        ceiling = f"{len(facts['answerable']) / facts['questions']:.3f}" if facts["answerable"] else "-"
        engines = dict.fromkeys(f"{e['prompt_tok_s']:.0f} / {e['generated_tok_s']:.1f}" for r in manifest["runs"]
                                if (e := r.get("engine")))
        lines.append(f"| [{name}](bench/results/{name}/) | {sample} | {s.questions} | {s.hits1:.3f} | {s.f1:.3f} "
                     f"| {s.candidate_recall:.3f} | {ceiling} | {s.llm_calls:.2f} | {s.input_tokens:,.0f} "
                     f"| {s.seconds_median:.1f} | {', '.join(engines) or '-'} |")
    return lines


def cited_lines(text: str) -> list[tuple[str, str, str]]:
    """(row, sample, line) for each line of `text` that cites a row's folder as its first cell."""
    found = []
    for line in text.splitlines():
        match = _ROW_LINK.match(line.strip())
        if match:
            found.append((match.group(1), match.group(2).strip(), line.strip()))
    return found


def check(readme: Path = README, results: Path = RESULTS, *, index: Path | None = INDEX) -> tuple[list[str], list[str]]:
    """(differences, stale rows): every README line citing a row against the line its records give;
    the index against the one its manifests give; each row whose stamp is not the current code's."""
    problems, stale = [], []
    cited = cited_lines(readme.read_text())
    for name, sample, line in cited:
        folder = results / name
        if name not in ROWS:
            problems.append(f"{readme.name}: {name!r} is not a row of bench.reproduce (ROWS)")
            continue
        expected = {given.split(" | ")[1]: given for given in row_lines(name, folder)}
        if sample not in expected:
            problems.append(f"{readme.name}: {name} {sample}: no records in {folder}")
        elif expected[sample] != line:
            problems.append(f"{readme.name}: {name} {sample} differs from its records:\n  README:  {line}\n  records: {expected[sample]}")
    if index is not None and (not index.exists() or index.read_text() != index_text(results)):
        problems.append(f"{index.relative_to(index.parents[2])} is not what its manifests give: run python -m bench.reproduce --index")
    code = code_hash()
    for name in dict.fromkeys(n for n, _, _ in cited):
        manifest = read_manifest(results / name)
        if manifest is None:
            continue
        why = row_staleness(results / name, manifest, code)
        if why:
            stale.append(f"{name}: {why}: stale, re-run with {manifest['command']}")
    return problems, stale


def row_staleness(folder: Path, manifest: dict, code: str) -> str | None:
    """Why a row's records are not of the current code and program, or None."""
    stamp = manifest["stamp"]
    if stamp["code"] != code:
        return f"the code that answers changed (records {stamp['code']}, now {code})"
    program = folder / "program"
    if not has_program(program) or program_hash(program) != stamp["program"]:
        return "the program files are not the ones its records were answered by"
    trouble = weights_trouble(program)
    if trouble and (program / WEIGHTS_FILE).exists():  # a clone lacks the weights (kept out of git): not stale for that
        return trouble
    for sample in manifest["samples"]:
        if any(r.get("stamp") != stamp for r in read_packed(folder, sample)):
            return f"some {sample} records carry another stamp"
    if manifest.get("spec") != ROWS[manifest["row"]].spec():
        return "its spec changed"
    return None


# -- the index ---------------------------------------------------------------------------------

INDEX_HEAD = """# bench/results

What the README and `docs/` cite, and nothing else: earlier runs are in git history.
Each row below is rebuilt by its one command from a fresh compile at the current commit
(`bench/reproduce.py`); `python -m bench.reproduce --check` (no LLM, seconds) recomputes the
README's lines from these records and lists rows whose code or program changed since.
A row's fitted scorer weights (`program/path_scorer.safetensors`, 14 MB) are not in git: the
program hash covers them through the sha256 `path_scorer.json` keeps of them, and the row's command
compiles them again where they are missing (a program without them says so when it is loaded).
Git keeps the program's large JSON files gzipped (`program.json.gz`, `linking.json.gz`,
`chains.json.gz`, each hashed as the file it unpacks to); the row's command unpacks them.

| row | about | folder | command | commit | clean tree | compile s | wall s | engine tok/s (prompt / generated) |
|---|---|---|---|---|---|---|---|---|
"""

def index_text(results: Path = RESULTS) -> str:
    lines = []
    for name, row in ROWS.items():
        manifest = read_manifest(results / name)
        if manifest is None:
            lines.append(f"| {name} | {row.about} | not run yet | `{row.command(name)}` | | | | | |")
            continue
        runs = manifest["runs"] + ([manifest["running"]] if manifest.get("running") else [])
        commits = ", ".join(dict.fromkeys(f"`{r['commit']}`" for r in runs if r.get("commit")))
        clean = "yes" if all(r.get("clean") for r in runs) else "no"
        engines = ", ".join(dict.fromkeys(f"{e['prompt_tok_s']:.0f} / {e['generated_tok_s']:.1f}" for r in runs if (e := r.get("engine"))))
        wall = f"{manifest['wall_seconds']:.0f}" if "wall_seconds" in manifest else "in progress"
        cut = sum(bool(r.get("cut_short")) for r in runs)
        wall += f" (+{cut} run{'s' * (cut > 1)} cut short)" if cut else ""
        lines.append(f"| {name} | {row.about} | [{name}/]({name}/) | `{manifest['command']}` | {commits} | {clean} "
                     f"| {manifest['compile_seconds']:.0f} | {wall} | {engines or '-'} |")
    others = ["", "Other results the docs cite, made by their own benches (no compiled program of the README's rows);",
              "each folder's `manifest.json` and README say how:", "",
              "| folder | what | command | commit | engine tok/s |", "|---|---|---|---|---|"]
    for folder in sorted(p.parent for p in results.glob("*/manifest.json")):
        if folder.name in ROWS:
            continue
        facts = json.loads((folder / "manifest.json").read_text())
        engine = facts.get("engine") or {}
        speed = f"{engine['prompt_tok_s']:.0f} / {engine['generated_tok_s']:.1f}" if engine else "-"
        others.append(f"| [{folder.name}/]({folder.name}/) | {facts['data']} | `{facts['command']}` | `{facts['commit']}` | {speed} |")
    return INDEX_HEAD + "\n".join(lines) + "\n" + "\n".join(others) + "\n"


# -- the command -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="*", help=f"rows to rebuild, of {', '.join(ROWS)}")
    parser.add_argument("--all", action="store_true", help="rebuild every row, one after the other")
    parser.add_argument("--check", action="store_true", help="no LLM: the README's lines against the records they cite")
    parser.add_argument("--index", action="store_true", help="rewrite bench/results/README.md from the manifests")
    parser.add_argument("--report", action="store_true", help="rewrite each row's table.md and the index from the records; run nothing")
    parser.add_argument("--fresh", action="store_true", help="compile again even where the code is unchanged")
    parser.add_argument("--samples", default="", help="comma-separated: ask these samples of the row only (test-scorer-alone: "
                        "no LLM), the others later")
    parser.add_argument("--lm", default="local")
    args = parser.parse_args(argv)
    if args.check:
        problems, stale = check()
        for line in stale:
            print(f"stale: {line}")
        for line in problems:
            print(f"differs: {line}")
        print(f"bench.reproduce --check: {len(cited_lines(README.read_text()))} README lines checked, "
              f"{len(problems)} differ, {len(stale)} rows stale")
        return 1 if problems else 0
    if args.report:
        for name in ROWS:
            if read_manifest(RESULTS / name):
                print(write_table(name, RESULTS / name).read_text())
    if args.index or args.report:
        INDEX.write_text(index_text())
        print(f"wrote {INDEX.relative_to(ROOT)}")
        return 0
    names = list(ROWS) if args.all else args.rows
    unknown = [n for n in names if n not in ROWS]
    if unknown or not names:
        parser.error(f"name rows of {', '.join(ROWS)} (or --all, --check, --index); unknown: {unknown}")
    from kgqa.specs import make_lm

    lm = make_lm(args.lm)
    for name in names:
        manifest = run_row(name, ROWS[name], folder=RESULTS / name, lm=lm, lm_spec=args.lm, fresh=args.fresh,
                           only=[s for s in args.samples.split(",") if s])
        print("\n".join(row_lines(name, RESULTS / name)))
        print(f"{name}: {manifest['wall_seconds']:.0f} s in all runs; stamp {manifest['stamp']}", flush=True)
    INDEX.write_text(index_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
