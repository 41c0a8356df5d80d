"""How kgqa's cost grows with the graph: the same 200 CWQ-mini dev questions over graphs of 10^5 to
5 x 10^7 triples, in the embedded store and in Virtuoso.

Each graph holds the questions' own graphs (their union) grown with seeded triples of Freebase's
shape around them (`grow`): entities with power-law degrees and names, nameless CVT nodes joining
two of them, values, relation names drawn from the real ones as often as they occur, and hubs:
the base graph's most linked entities that are no question's topic or answer, each given up to
10^6 more edges through relations it already has. As in Freebase, a grown fact of a relation the
base graph states both ways round (its inverse pairs, found as the `rog` profile finds them) is
stated both ways round too. Nothing new touches a topic entity or an answer,
so an answer can change only where a walk passes a hub and meets its cap (`max_neighbours`).

Per size and backend: the load (`kgqa kg load` into the embedded store, Virtuoso's bulk loader),
its seconds, triples a second, disk and peak memory; then each question walked, in a process of
its own whose peak memory is measured, by each system: `similarity` (no LM, no compiled part: the
hand-set order), and with `--program` the compiled program's `scorer-alone` walk and the whole
`program` under a fake LM that answers each call from a hash of its inputs (`bench.same_walk`): per
question the walk's KG seconds, queries, rows and slowest query, and whether its answers are those
of the smallest size. And `linking`: each question's topic entities found from its words alone by
the program's compiled linker (an uncompiled one without `--program`), over the names as the
program finds them at that size (in memory, with sentence vectors while there are few enough, or
the graph's text index past `max_index_names`): the names' set-up, the seconds to link a question,
and how many are linked to exactly their topic entities.

    .venv/bin/python -m bench.kg_scale --sizes 1e5,1e6 --program bench/results/cwq-answers-seed0/program
    .venv/bin/python -m bench.kg_scale --sizes 1e5 --questions 20 --systems similarity   # minutes

Graphs and stores go under `--work` (large; `runs/` is not in git); the records, `table.md` and the
plot under `--out`. A run stopped part way resumes where it stopped: a size and backend already in
`--out`'s manifest, asked the same way, is not walked again; a graph whose stamp beside it says it was
written from the same questions, seed and code is not written again, nor a store loaded from it by
the same `kg` code loaded again (its load's figures are the stamped ones, and what a client keeps
beside it, the mirrored pairs and the names table, is removed so the set-up is paid as by a fresh one).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import itertools
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kgqa.env import stay_offline

stay_offline()

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("similarity", "scorer-alone", "program", "linking")
NEEDS_PROGRAM = ("scorer-alone", "program")
BACKENDS = ("embedded", "virtuoso")
MAX_HUB = 1_000_000  # edges a hub gains at most
HUBS = 4  # entities grown into hubs, largest first (each half the one before)
CVT_SHARE, VALUE_SHARE = 0.1, 0.1  # of the grown facts: through a nameless node, to a value
TRAIN = 1_500  # the compile sample the questions stay outside of (`bench.accuracy.compile_sample`)


# -- the graphs ------------------------------------------------------------------------------------


def questions(size: int, *, train: int = TRAIN, seed: int = 0) -> list:
    """`size` seeded CWQ-mini dev questions outside the compile sample (`bench.accuracy.cwq_bench`'s dev split)."""
    from bench.accuracy import CWQ_MINI, compile_sample
    from kgqa.data.rog import load_rog

    dev = list(load_rog(CWQ_MINI / "cwq_mini_dev.jsonl.gz"))
    taken = {ex.id for ex in compile_sample(dev, train, seed)}
    return random.Random(seed).sample([ex for ex in dev if ex.id not in taken], size)


def base_graph(examples: Sequence) -> list[tuple[str, str, str]]:
    """The union of the questions' own graphs (name triples, first-seen order)."""
    return list(dict.fromkeys(tuple(t) for ex in examples for t in ex.graph))


def near_hubs(examples: Sequence, base: Sequence[tuple[str, str, str]], hubs: Iterable[str], *, hops: int = 3) -> set[str]:
    """The questions with a hub within `hops` of a topic entity in the base graph: where a walk may
    meet a hub's cap, and so where an answer may change as the graph grows."""
    around: dict[str, set[str]] = {}
    for head, _, tail in base:
        around.setdefault(head, set()).add(tail)
        around.setdefault(tail, set()).add(head)
    hubs, near = set(hubs), set()
    for ex in examples:
        seen = frontier = set(ex.topic_entities)
        for _ in range(hops):
            frontier = {n for e in frontier for n in around.get(e, ())} - seen
            seen = seen | frontier
        if seen & hubs:
            near.add(ex.id)
    return near


def protected(examples: Sequence) -> set[str]:
    """What grown facts never touch: every topic entity and gold answer."""
    return {name for ex in examples for name in [*ex.topic_entities, *ex.answers]}


@dataclass(frozen=True)
class Growth:
    """What `grow` added, for the table."""

    base: int  # facts of the questions' own graphs
    hubs: dict[str, int]  # hub entity -> edges it gains (where the size leaves room)
    inverses: int  # the base graph's inverse relation pairs, whose grown facts are stated both ways round


def grow(base: Sequence[tuple[str, str, str]], keep: set[str], size: int, *, seed: int = 0) -> tuple[Iterator[tuple[str, str, str]], Growth]:
    """`base` and then seeded name triples of Freebase's shape, without end: `write_graph` cuts
    them at `size` RDF triples, labels counted (`data.rog.graph_triples` adds one a named entity)."""
    rng = random.Random(seed)
    relations = Counter(r for _, r, _ in base)
    names, weights = list(relations), list(relations.values())
    into = Counter((t, r) for _, r, t in base if t not in keep)
    degree = Counter(t for t, _ in into.elements())
    hubs = [e for e, _ in degree.most_common() if e not in keep][:HUBS]
    room = max(0, size - 2 * len(base))  # about one label a fact
    hub_edges = {h: min(MAX_HUB, room // (8 * 2**i)) for i, h in enumerate(hubs)}
    hub_relations = {h: [r for (t, r) in into if t == h] for h in hubs}
    entities = max(10, room // 6)  # about six facts an entity, as in Freebase's topical part

    taken = {name for fact in base for name in (fact[0], fact[2])}
    mirror = inverse_pairs(base)
    one_way = ([r for r in names if r not in mirror], [relations[r] for r in names if r not in mirror])

    def index(skew: float) -> int:
        return int(entities * rng.random() ** skew)

    def both_ways(head: str, relation: str, tail: str) -> Iterator[tuple[str, str, str]]:
        yield head, relation, tail
        if relation in mirror:
            yield tail, mirror[relation], head

    def facts() -> Iterator[tuple[str, str, str]]:
        yield from base
        for hub, edges in hub_edges.items():
            for _ in range(edges):
                yield from both_ways(f"grown {index(1.0)}", rng.choice(hub_relations[hub]), hub)
        cvts = 0
        while True:
            # two grown entities are only ever joined lower to higher, so grown facts state a pair
            # both ways round only by the base's own inverse pairs (the `rog` profile reads any
            # other two relations joining a pair both ways as inverses)
            first, second_end = sorted((index(2.0), index(3.0)))
            head, tail = f"grown {first}", f"grown {second_end}"
            relation, second = rng.choices(names, weights, k=2)
            draw = rng.random()
            if draw < CVT_SHARE:
                cvt = f"m.0grown{cvts:x}"
                cvts += 1
                yield from both_ways(head, relation, cvt)
                yield from both_ways(cvt, second, tail)
            elif draw < CVT_SHARE + VALUE_SHARE:
                value = f"{rng.randint(1, 10**9):,}"  # the rog profile names every node: a value no base node is named
                relation = rng.choices(*one_way)[0] if one_way[0] else relation  # a value by a relation with no inverse
                if value not in taken:
                    yield head, relation, value
            elif first != second_end:
                yield from both_ways(head, relation, tail)

    return facts(), Growth(base=len(base), hubs=hub_edges, inverses=len(mirror) // 2)


def inverse_pairs(base: Sequence[tuple[str, str, str]]) -> dict[str, str]:
    """The base graph's inverse relations, each mapped to its pair's other: the relations that state
    the same facts both ways round, paired as the `rog` profile's `inverses="mirrored"` pairs them
    (`KnowledgeGraph.inverse_relations`), here over the whole base graph."""
    from kgqa.kg.graph import MIN_MIRRORED_FACTS, _mutual_mirrors

    by_pair: dict[tuple[str, str], set[str]] = {}
    for head, relation, tail in base:
        by_pair.setdefault((head, tail), set()).add(relation)
    counts = Counter((relation, back) for head, relation, tail in base
                     for back in by_pair.get((tail, head), ()) if back != relation)
    mirror = {}
    for p, q in _mutual_mirrors(counts, MIN_MIRRORED_FACTS):
        mirror[p], mirror[q] = q, p
    return mirror


def write_graph(path: Path, facts: Iterable[tuple[str, str, str]], size: int) -> int:
    """The first `size` RDF triples of the facts (entities labelled, `rog` profile) as gzipped
    N-Triples; how many were written (fewer only if the facts end first)."""
    from kgqa.data.rog import graph_triples

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    lines = 0
    with gzip.open(partial, "wt", encoding="utf-8", compresslevel=1) as out:
        for triple in itertools.islice(graph_triples(facts), size):
            out.write(f"{triple} .\n")
            lines += 1
    partial.replace(path)
    return lines


def digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def stamp_file(path: Path) -> Path:
    """Where what made `path` (a graph file, a store folder) is stamped: beside it, `NAME.json`."""
    return path.with_name(path.name + ".json")


def stamped(path: Path, key: str) -> dict | None:
    """What was stamped beside `path` when it was made with `key`; None if it was not, or is gone."""
    try:
        stamp = json.loads(stamp_file(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp.get("made") if isinstance(stamp, dict) and stamp.get("key") == key and path.exists() else None


def stamp(path: Path, key: str, made: dict) -> None:
    target = stamp_file(path)
    partial = target.with_suffix(".partial")
    partial.write_text(json.dumps({"key": key, "made": made}), encoding="utf-8")
    partial.replace(target)


# -- loading ---------------------------------------------------------------------------------------


@dataclass
class Load:
    backend: str
    triples: int
    seconds: float
    disk_mb: float
    peak_mb: float
    distinct: int | None = None  # triples the store holds (a grown fact is now and then drawn twice)
    bare_seconds: float | None = None  # pyoxigraph's own bulk loader on the same file (embedded only)

    @property
    def per_second(self) -> float:
        return self.triples / self.seconds if self.seconds else 0.0


def disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def load_embedded(graph: Path, store: Path, triples: int) -> Load:
    """`kgqa kg load` in a process of its own: its seconds and peak memory."""
    shutil.rmtree(store, ignore_errors=True)
    kgqa = Path(sys.executable).with_name("kgqa")
    start = time.perf_counter()
    log = store.with_suffix(".log")
    with log.open("wb") as output:
        process = subprocess.Popen([str(kgqa), "kg", "load", "--store", str(store), "--format", "ntriples", "--profile", "rog",
                                    str(graph)], stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"kgqa kg load failed on {graph}: {log.read_text()[-2000:]}")
    stored = re.search(r"store .*: ([\d,]+) triples", log.read_text())
    return Load("embedded", triples, seconds, disk_mb(store), usage.ru_maxrss / 1024,
                int(stored.group(1).replace(",", "")) if stored else None)


_BARE_LOAD = """
import gzip, sys
import pyoxigraph as ox
with gzip.open(sys.argv[1], "rb") as source:
    ox.Store(sys.argv[2]).bulk_load(input=source, format=ox.RdfFormat.N_TRIPLES)
"""


def bare_load_seconds(graph: Path, store: Path) -> float:
    """pyoxigraph's own bulk loader on the same file, in a process of its own (what `kgqa kg load`
    adds to it: the relation index, the store's metadata, the progress bar)."""
    shutil.rmtree(store, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _BARE_LOAD, str(graph), str(store)], check=True)
    seconds = time.perf_counter() - start
    shutil.rmtree(store, ignore_errors=True)
    return seconds


def virtuoso_buffers(triples: int) -> int:
    """Virtuoso's pages in memory for a graph: its default up to 8.5 x 10^6 triples, then a page (8 KB)
    for every 50 triples (four fifths of its database, about 200 bytes a triple), at most 10^6 (7.6 GB)."""
    from kgqa.kg.virtuoso import BUFFERS

    return min(max(BUFFERS, triples // 50), 1_000_000)


def start_virtuoso(graph: Path, workdir: Path, triples: int):
    """Virtuoso bulk-loaded with the graph: the server and its `Load` (peak memory: the server's)."""
    from kgqa.kg import virtuoso

    shutil.rmtree(workdir, ignore_errors=True)
    start = time.perf_counter()
    server = virtuoso.LocalVirtuoso.start(workdir, [graph], timeout=7200, buffers=virtuoso_buffers(triples))
    seconds = time.perf_counter() - start
    return server, Load("virtuoso", triples, seconds, disk_mb(workdir), _peak_mb(server.process.pid))


def _peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- walking ---------------------------------------------------------------------------------------


class TimedBackend:
    """A backend that keeps each query's seconds and rows (the slowest query is about the slowest
    hop: a walk asks one query a frontier)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.reset()

    def reset(self) -> None:
        self.seconds, self.rows, self.slowest = [], 0, ""

    def select(self, query: str):
        return self.timed(query, lambda: self.backend.select(query))

    def timed(self, query: str, ask: Callable[[], list]) -> list:
        start = time.perf_counter()
        try:
            rows = ask()
        finally:
            self.seconds.append(time.perf_counter() - start)
        if self.seconds[-1] >= max(self.seconds):
            self.slowest = query[:300]
        self.rows += len(rows)
        return rows

    def __len__(self) -> int:  # what the files kept beside a store are stamped with (`KnowledgeGraph._stamp`)
        return len(self.backend)

    def __getattr__(self, name: str):
        found = getattr(self.backend, name)
        if name == "search_names":  # the embedded store's own table of names: a query, timed as one
            return lambda words, **options: self.timed(f"search_names {' '.join(words)}", lambda: found(words, **options))
        if name == "relation_table" and found is not None:  # the relation index beside the store: each lookup timed as one
            return TimedTable(found, self)
        return found


class TimedTable:
    """The relation index beside an embedded store, each lookup timed by the `TimedBackend` as a query."""

    def __init__(self, table, timer: TimedBackend) -> None:
        self.table, self.timer = table, timer

    def relations(self, terms):
        return self.timer.timed(f"relation_table {len(terms)} entities", lambda: self.table.relations(terms))

    def edge_relations(self):
        return self.timer.timed("relation_table edge relations", self.table.edge_relations)


def walk_records(kg_spec: str, systems: Sequence[str], examples: Sequence, program_dir: Path | None) -> Iterator[dict]:
    """Each question asked by each system over the graph `kg_spec` (`embedded:DIR` or a URL)."""
    import dspy

    from bench.accuracy import CWQ_FLOOR_DEPTH, scorer_alone
    from bench.same_walk import hashed_lm
    from kgqa.kg import EmbeddedStore, KnowledgeGraph, SparqlEndpoint
    from kgqa.lm.adapter import ConstrainedJSONAdapter
    from kgqa.programs.baselines import SimilarityWalk
    from kgqa.programs.config import WalkConfig
    from kgqa.programs.saving import load_program, read_settings

    where = kg_spec.removeprefix("embedded:")
    backend = TimedBackend(EmbeddedStore.open(where, read_only=True) if kg_spec.startswith("embedded:")
                           else SparqlEndpoint(kg_spec, timeout=120))
    kg = KnowledgeGraph(backend, profile="rog")
    compiled = load_program(program_dir, kg, settings=read_settings(program_dir)) if program_dir else None
    walkers = {
        "similarity": lambda: SimilarityWalk(kg, config=WalkConfig(depth=CWQ_FLOOR_DEPTH)),
        "scorer-alone": lambda: scorer_alone(compiled, depth=CWQ_FLOOR_DEPTH),
        "program": lambda: compiled,
    }
    start = time.perf_counter()
    inverses = kg.inverse_relations()  # once a client, before the first question: set-up, not a question's cost
    kg.name_index()  # the names a topic name the store's spellings miss is found among (past `max_index_names`, the text index)
    yield {"setup": True, "seconds": round(time.perf_counter() - start, 3), "inverse_pairs": len(inverses) // 2,
           "query": backend.slowest}
    for system in systems:
        if system == "linking":
            yield from link_records(kg, backend, examples, compiled)
            continue
        program = walkers[system]()
        with dspy.context(lm=hashed_lm(), adapter=ConstrainedJSONAdapter()):
            for ex in examples:
                backend.reset()
                prediction = program(question=ex.question, topic_entities=list(ex.topic_entities) or None)
                trace = prediction.trace
                yield {"system": system, "id": ex.id, "answers": sorted(prediction.answers),
                       "kg_seconds": round(trace.kg_seconds, 4), "queries": trace.sparql_queries,
                       "rows": backend.rows, "slowest_query": round(max(backend.seconds, default=0.0), 4), "slowest_text": backend.slowest,
                       "error": trace.error}


def link_records(kg, backend: TimedBackend, examples: Sequence, compiled) -> Iterator[dict]:
    """Each question's topic entities found from its words alone: the compiled program's linker over
    the names as it finds them (`names`: an index in memory, with sentence vectors up to
    `MAX_VECTOR_NAMES`, or the graph's text index past `max_index_names`), else an uncompiled linker
    (match quality alone). First the set-up a client pays once (the names indexed), then per question
    the seconds to link, its queries, and whether it linked exactly the row's topic entities."""
    from bench.linking import as_named
    from kgqa.kg.errors import KGError
    from kgqa.programs.linking import Linker

    linker = compiled.linker if compiled is not None else Linker()
    backend.reset()
    start = time.perf_counter()
    names = compiled.names(kg) if compiled is not None else kg.name_index()
    yield {"setup": "linking", "seconds": round(time.perf_counter() - start, 3), "names": type(names).__name__,
           "queries": len(backend.seconds)}
    for ex in examples:
        backend.reset()
        start, linked, error = time.perf_counter(), [], None
        try:
            linked = as_named(linker.link(ex.question, names, graph=kg).linked, list(ex.topic_entities))
        except KGError as exc:
            error = str(exc)
        yield {"system": "linking", "id": ex.id, "answers": sorted(linked), "kg_seconds": round(time.perf_counter() - start, 4),
               "queries": len(backend.seconds), "rows": backend.rows, "slowest_query": round(max(backend.seconds, default=0.0), 4),
               "slowest_text": backend.slowest, "exact": set(linked) == set(ex.topic_entities), "error": error}


def walk(kg_spec: str, systems: Sequence[str], examples: Sequence, program_dir: Path | None, out: Path) -> float:
    """`walk_records` in a process of its own, written to `out`; that process's peak memory in MB."""
    args = [sys.executable, "-m", "bench.kg_scale", "--walk", kg_spec, "--systems", ",".join(systems),
            "--questions", str(len(examples)), "--records", str(out)]
    if program_dir:
        args += ["--program", str(program_dir)]
    process = subprocess.Popen(args, cwd=ROOT, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the walk over {kg_spec} failed: {process.stderr.read().decode()[-3000:]}")
    return usage.ru_maxrss / 1024


# -- the table -------------------------------------------------------------------------------------


@dataclass
class Line:
    """One (size, backend, system): its load and its walks, summed up."""

    size: int
    backend: str
    system: str
    load: dict
    setup_seconds: float  # once a client: the inverse relations read from the graph, its names readied
    walk_peak_mb: float
    questions: int
    kg_seconds: float  # per question, mean
    kg_seconds_p90: float
    queries: float
    rows: float
    slowest_query: float  # the slowest single query of any question
    same: int  # questions answered as at the smallest size (this backend)
    changed_near_hub: int  # of the others: a hub within three hops of a topic entity (its cap may explain it)
    errors: int
    exact: int | None = None  # linking: questions linked to exactly their topic entities


def summarize(size: int, backend: str, system: str, load: Load, setup: float, peak: float, records: list[dict],
              smallest: dict[str, list], near: set[str]) -> Line:
    seconds = sorted(r["kg_seconds"] for r in records)
    changed = {r["id"] for r in records if r["answers"] != smallest.get(r["id"])}
    return Line(size, backend, system, {**asdict(load), "per_second": round(load.per_second)}, setup, round(peak), len(records),
                round(statistics.fmean(seconds), 3), round(seconds[int(0.9 * (len(seconds) - 1))], 3),
                round(statistics.fmean(r["queries"] for r in records), 1), round(statistics.fmean(r["rows"] for r in records)),
                round(max(r["slowest_query"] for r in records), 3), len(records) - len(changed), len(changed & near),
                sum(bool(r["error"]) for r in records), sum(r["exact"] for r in records) if system == "linking" else None)


def table(lines: Sequence[Line]) -> str:
    head = ("| triples | backend | load s (pyoxigraph's own) | triples/s | disk MB | load peak MB | set-up s | system "
            "| KG s/question (mean, p90; linking: s to link) | queries | rows | slowest query s | walk peak MB "
            "| answers as at the smallest | changed near a hub | linked exactly |")
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for line in lines:
        load = line.load
        bare = f" ({load['bare_seconds']:.0f})" if load.get("bare_seconds") is not None else ""
        out.append(f"| {line.size:,} | {line.backend} | {load['seconds']:.0f}{bare} | {load['per_second']:,} | {load['disk_mb']:.0f} "
                   f"| {load['peak_mb']:.0f} | {line.setup_seconds:.2f} | {line.system} | {line.kg_seconds:.3f}, {line.kg_seconds_p90:.3f} | {line.queries} "
                   f"| {line.rows:,} | {line.slowest_query:.3f} | {line.walk_peak_mb:,.0f} | {line.same} / {line.questions} "
                   f"| {line.changed_near_hub} of {line.questions - line.same} "
                   f"| {'-' if line.exact is None else f'{line.exact} / {line.questions}'} |")
    return "\n".join(out) + "\n"


def plot(lines: Sequence[Line], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for ax, (what, value) in zip(axes, (("mean", lambda line: line.kg_seconds), ("p90", lambda line: line.kg_seconds_p90))):
        for backend, system in dict.fromkeys((line.backend, line.system) for line in lines):
            points = sorted((line.size, value(line)) for line in lines if (line.backend, line.system) == (backend, system))
            ax.plot(*zip(*points), marker="o", label=f"{backend}, {system}")
        ax.set_xscale("log")
        ax.set_xlabel("triples in the graph")
        ax.set_ylabel(f"KG seconds a question, {what} (linking: to link)")
    axes[1].legend(fontsize=7)
    questions = max((line.questions for line in lines), default=0)
    fig.suptitle(f"kgqa's KG cost against graph size ({questions} CWQ-mini dev questions)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# -- the command -----------------------------------------------------------------------------------


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(float(part)) for part in text.split(",") if part.strip()})
    except ValueError:
        raise SystemExit(f"--sizes takes numbers such as 1e5,1e6, not {text!r}") from None
    if not sizes or sizes[0] < 1:
        raise SystemExit(f"--sizes takes positive numbers, not {text!r}")
    return sizes


def parse_choice(text: str, allowed: Sequence[str], option: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [c for c in chosen if c not in allowed]
    if unknown or not chosen:
        raise SystemExit(f"{option} takes some of {', '.join(allowed)}, not {text!r}")
    return chosen


def commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return found.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1e5", help="graph sizes in triples, comma-separated (default 1e5)")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="embedded, virtuoso or both")
    parser.add_argument("--systems", default=None, help=f"some of {', '.join(SYSTEMS)} (default: all that --program allows)")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--program", type=Path, default=None, help="a compiled CWQ-mini program (its scorer and its steps)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "kg-scale", help="graphs and stores (large)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "kg-scale")
    parser.add_argument("--walk", default=None, help=argparse.SUPPRESS)  # the walking child: embedded:DIR or a URL
    parser.add_argument("--records", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    usable = [s for s in SYSTEMS if args.program or s not in NEEDS_PROGRAM]
    systems = parse_choice(args.systems or ",".join(usable), SYSTEMS, "--systems")
    if not args.program and set(systems) & set(NEEDS_PROGRAM):
        raise SystemExit("scorer-alone and program need --program DIR (a compiled CWQ-mini program)")
    sizes, backends = parse_sizes(args.sizes), parse_choice(args.backends, BACKENDS, "--backends")  # before any data is read
    examples = questions(args.questions, seed=args.seed)
    if args.walk:  # the child: walk, write, exit
        with args.records.open("w", encoding="utf-8") as out:
            for record in walk_records(args.walk, systems, examples, args.program):
                out.write(json.dumps(record) + "\n")
        return 0

    base, keep = base_graph(examples), protected(examples)
    if sizes[0] < len(base):
        raise SystemExit(f"the {len(examples)} questions' own graphs hold {len(base):,} triples: sizes start there")
    (args.out / "records").mkdir(parents=True, exist_ok=True)
    lines: list[Line] = []
    growths: dict[int, dict] = {}
    smallest: dict[tuple[str, str], dict[str, list]] = {}
    asked = digest(len(examples), args.seed, systems, str(args.program))  # the walks a manifest's lines answer
    done: dict[tuple[int, str], list[dict]] = defaultdict(list)
    for line in _finished(args.out, asked):
        done[line["size"], line["backend"]].append(line)
    from bench.reproduce import code_hash

    graph_code = code_hash(parts=("bench/kg_scale.py", "data/rog.py"))
    kg_code = code_hash(parts=("kg", "data/kb.py"))  # what makes a store: `kgqa kg load`
    for size in sizes:
        graph = args.work / f"graph-{size}.nt.gz"
        facts, growth = grow(base, keep, size, seed=args.seed)
        graph_key = digest(size, args.seed, base, graph_code)
        walked = {b: records for b in backends
                  if (size, b) in done and (records := args.out / "records" / f"{size}-{b}.jsonl.gz").exists()}
        written = stamped(graph, graph_key)
        if written is None and len(walked) < len(backends):
            written = {"triples": write_graph(graph, facts, size)}
            stamp(graph, graph_key, written)
        triples = written["triples"] if written else done[size, backends[0]][0]["load"]["triples"]
        growths[size] = {**asdict(growth), "written": triples}
        near = near_hubs(examples, base, growth.hubs)
        print(f"{size:,}: {triples:,} triples written (hubs {list(growth.hubs.values())})", file=sys.stderr)
        for backend in backends:
            records_file = args.out / "records" / f"{size}-{backend}.jsonl"
            if backend in walked:
                lines += _resumed(walked[backend], done[size, backend], smallest)
                print(f"{size:,} {backend}: walked before, kept", file=sys.stderr)
                continue
            server = None
            if backend == "embedded":
                store = args.work / f"store-{size}"
                store_key = digest(graph_key, kg_code)
                loaded = stamped(store, store_key)
                if loaded is None:
                    stamp_file(store).unlink(missing_ok=True)  # no stamp on a half-loaded store
                    load = load_embedded(graph, store, triples)
                    load.bare_seconds = round(bare_load_seconds(graph, args.work / f"bare-{size}"), 1)
                    stamp(store, store_key, asdict(load))
                else:
                    from kgqa.kg.graph import MIRRORS_FILE
                    from kgqa.kg.name_table import TABLE_FILE

                    load = Load(**loaded)
                    for kept in (MIRRORS_FILE, TABLE_FILE):  # a fresh client's set-up, not one paid before
                        (store / kept).unlink(missing_ok=True)
                spec = f"embedded:{store}"
            else:
                server, load = start_virtuoso(graph, args.work / f"virtuoso-{size}", triples)
                spec = server.url
            try:
                peak = walk(spec, systems, examples, args.program, records_file)
            finally:
                if server is not None:
                    server.stop()
            records = [json.loads(line) for line in records_file.read_text().splitlines()]
            setups = {r["setup"]: r for r in records if r.get("setup")}  # the client's (True), the linker's names
            records = [r for r in records if not r.get("setup")]
            with gzip.open(records_file.with_suffix(".jsonl.gz"), "wt", encoding="utf-8") as out:
                out.writelines(json.dumps(r) + "\n" for r in [*setups.values(), *records])
            records_file.unlink()
            for system in systems:
                mine = [r for r in records if r["system"] == system]
                first = smallest.setdefault((backend, system), {r["id"]: r["answers"] for r in mine})
                setup = setups["linking" if system == "linking" else True]["seconds"]
                lines.append(summarize(size, backend, system, load, setup, peak, mine, first, near))
                print(table(lines[-1:]).splitlines()[-1], file=sys.stderr)
            write_outputs(args.out, lines, growths, examples=len(examples), sizes=sizes, argv=argv, done=False, asked=asked)
        if size != sizes[0]:
            graph.unlink(missing_ok=True)  # the largest are gigabytes; the smallest stays for a look
            stamp_file(graph).unlink(missing_ok=True)
    write_outputs(args.out, lines, growths, examples=len(examples), sizes=sizes, argv=argv, done=True, asked=asked)
    print(table(lines))
    return 0


def _finished(out: Path, asked: str) -> list[dict]:
    """The lines of `out`'s manifest, where it answers the same walks (`asked`)."""
    try:
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return manifest.get("lines", []) if manifest.get("asked") == asked else []


def _resumed(records: Path, walked_lines: list[dict], smallest: dict) -> list[Line]:
    """A size and backend walked before: its lines as the manifest has them, and its answers the
    smallest size's where it came first."""
    with gzip.open(records, "rt", encoding="utf-8") as rows:
        walked = [record for row in rows if not (record := json.loads(row)).get("setup")]
    for line in walked_lines:
        smallest.setdefault((line["backend"], line["system"]), {r["id"]: r["answers"] for r in walked if r["system"] == line["system"]})
    return [Line(**line) for line in walked_lines]


def write_outputs(out: Path, lines: Sequence[Line], growths: dict, *, examples: int, sizes: Sequence[int],
                  argv: list[str] | None, done: bool, asked: str) -> None:
    """`table.md`, `cost.png` and `manifest.json` as they stand: after each size and backend, so a
    run stopped on a large size keeps what the smaller ones measured (`complete` says which)."""
    (out / "table.md").write_text(table(lines), encoding="utf-8")
    plot(lines, out / "cost.png")
    manifest = {
        "data": f"{examples} CWQ-mini dev questions over graphs of {', '.join(f'{s:,}' for s in sizes)} triples",
        "command": "python -m bench.kg_scale " + " ".join(argv if argv is not None else sys.argv[1:]),
        "commit": commit(), "machine": f"{os.cpu_count()} cores", "complete": done, "asked": asked, "growth": growths,
        "lines": [asdict(line) for line in lines],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
