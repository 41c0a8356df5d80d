"""Accuracy and cost, side by side, on one LM and one KG: MetaQA or CWQ-mini (`--dataset`).

MetaQA (`--dataset metaqa`, the default): a seeded sample of 1-, 2- and 3-hop dev questions
(`kb_exact` rows) per hop, over the MetaQA KB. CWQ-mini (`--dataset cwq-mini`): a seeded sample of
`cwq_mini_test` questions (ComplexWebQuestions in RoG's row format, `../shared/data/cwq_mini/`),
over one store holding the graphs of every sampled row (they are cut from one union graph), with
the ceiling `answerable@3` (some answer within 3 undirected hops of a topic entity in the row's own
graph) and Hits@1 per `compositionality_type`; `--split dev` asks `cwq_mini_dev` questions outside
the compile sample instead (sample "dev"): what a change of the walk is tuned on. Answered by:
- llm-only: the LM from its own knowledge (no KG);
- floor: no LM, every choice by embedding similarity, walked to the question's hop count on
  MetaQA (a floor told the depth), 2 hops on CWQ-mini;
- scorer-alone: the floor's walk with the compiled `bootstrap` program's parts (linker, chain
  prior, path scorer): the path scorer's first candidate answers, no LLM call (the LLM's share of
  the answer is what `bootstrap` adds to it);
- uncompiled: the program as written (`KGQA`, every step on);
- bootstrap, bootstrap-rs, mipro, mipro-light: the program compiled on a disjoint seeded sample
  of dev questions (`--train`, default 1,500 on MetaQA, a third per hop, 1,500 `cwq_mini_dev` rows on
  CWQ-mini) with intermediate labels: the gold relation paths (MetaQA's question types, CWQ's
  RoG `ground_paths`, never shown at answer time) drive the teacher that writes the demos and the
  plan step's pool of gold plans, the gold answers label facts, memory, sufficiency and
  extraction (whose demos are a pool of gold choices among the candidates the teacher's walk
  shows), and `walk_metric` scores answers, paths and depths. `bootstrap-rs` holds out 15 of
  them to score 5 candidate programs.
- bootstrap-no-STEP (STEP one of `kgqa.programs.SWITCHES`: the LLM steps, `chain-prior` and `path-scorer`): the
  compiled `bootstrap` program with that step switched off: the ablation. For a step in `SKIPPED_IS_OFF`, a question whose `bootstrap`
  record says the step skipped every time walks the same with it off
  (`test_a_step_skipped_walks_as_it_does_switched_off`): its record is copied, marked
  `"reused": "bootstrap"`, and only the questions where the step ran or fell back are asked again.
Per system and sample: Hits@1, Hit@any, F1, candidate recall (the gold answer among the
candidates shown to extraction or in the facts kept), LLM calls, input and output tokens, SPARQL
queries, mean and median seconds per question, and how many wrong answers stopped before, at and
past the gold depth. Writes `table.md`, `accuracy_vs_tokens.png`, the compiled programs (their
`config.json` gives the compile time) and per-run JSONL records (rerunning resumes them) to the
results directory, and logs it all to one MLflow run. Seconds depend on the engine: quote them
with the engine speed `kgqa doctor` reports. Results go to `runs/` (not tracked) unless `--out` says
otherwise: this is the bench to try a change on; the published rows are `bench.reproduce`'s.

    .venv/bin/python -m bench.accuracy --per-hop 30 [--seed 1] [--systems floor,uncompiled,bootstrap] [--lm local]
    .venv/bin/python -m bench.accuracy --dataset cwq-mini --per-hop 100 --systems llm-only,floor,uncompiled,bootstrap
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from kgqa.env import stay_offline  # noqa: E402

stay_offline()

import dspy  # noqa: E402

from kgqa import tracking  # noqa: E402
from kgqa.data.jsonl import load_jsonl  # noqa: E402
from kgqa.data.metaqa import kb_triples  # noqa: E402
from kgqa.data.rog import graph_triples, load_rog  # noqa: E402
from kgqa.evaluate.metrics import gold_relation_paths, same_answer  # noqa: E402
from kgqa.evaluate.runner import Summary, candidate_recalled, evaluate, read_records, summarize  # noqa: E402
from kgqa.kg import EmbeddedStore, KnowledgeGraph  # noqa: E402
from kgqa.kg.profiles import ROG  # noqa: E402
from kgqa.optimizers.gold_paths import compile_program  # noqa: E402
from kgqa.optimizers.labels import hops_from  # noqa: E402
from kgqa.optimizers.teleprompters import Budget  # noqa: E402
from kgqa.programs import KGQA, SKIPPED_IS_OFF, SWITCHES, WalkConfig  # noqa: E402
from kgqa.programs.baselines import LLMOnly, SimilarityWalk  # noqa: E402
from kgqa.programs.saving import ProgramFileError, load_program, read_settings, save_program  # noqa: E402
from kgqa.programs.trace import Trace  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
METAQA = SHARED / "metaqa"
CWQ_MINI = SHARED / "cwq_mini"
DATASETS = ("metaqa", "cwq-mini")
CWQ_TYPES = ("comparative", "superlative", "conjunction", "composition")  # CWQ's compositionality_type
ABLATIONS = tuple(f"bootstrap-no-{step.replace('_', '-')}" for step in SWITCHES)
SYSTEMS = ("llm-only", "floor", "scorer-alone", "uncompiled", "bootstrap", "bootstrap-pools", "bootstrap-rs", "mipro", "mipro-light", *ABLATIONS)
DEFAULT_SYSTEMS = ("llm-only", "floor", "uncompiled", "bootstrap")
BUDGETS = {
    "bootstrap": Budget(demos=3, plan_demos=500),
    "bootstrap-pools": Budget(demos=3, plan_demos=500, step_demos=500),  # every intermediate step a pool of labeled demos too
    "bootstrap-rs": Budget(demos=3, plan_demos=500, candidates=2),  # 5 programs scored: zero-shot, labeled, unshuffled, 2 shuffles
    "mipro": Budget(demos=2, candidates=3, trials=5),
    "mipro-light": Budget(demos=2),
}
VALIDATION = {"bootstrap-rs": 15, "mipro": 4, "mipro-light": 4}  # compile questions held out to score candidates
TRAIN = {"metaqa": 1500, "cwq-mini": 1500}  # compile questions: the plan step's pool of gold plans grows with them
HOPS = (1, 2, 3)
CWQ_FLOOR_DEPTH = 2  # CWQ chains a WebQSP relation (often through a CVT node) with one constraint


@dataclass
class Bench:
    """One dataset's side of the bench: the KG, the test samples by name, the compile questions."""

    dataset: str
    kg: KnowledgeGraph
    test: dict[str, list[dspy.Example]]  # "1hop", "2hop", "3hop" on MetaQA; "test" on CWQ-mini
    train: list[dspy.Example]

    def floor_depth(self, sample: str) -> int:
        return int(sample.removesuffix("hop")) if sample.endswith("hop") else CWQ_FLOOR_DEPTH

    def walk(self, walk: WalkConfig) -> WalkConfig:
        """The walk here: on CWQ-mini 2 demos shown per call (its candidate paths are long)."""
        return WalkConfig(**{**walk.to_dict(), "demos_per_call": 2}) if self.dataset == "cwq-mini" else walk


def metaqa_samples(per_hop: int, train: int, seed: int, metaqa: Path):
    """Disjoint seeded samples: `per_hop` test questions per hop, and `train` compile questions
    (a third per hop) from the rest. The test questions are drawn as the first reference run drew
    them (with 12 more per hop), so tables with the same seed compare the same questions."""
    rng, draw = random.Random(seed), random.Random(f"compile-{seed}")
    test, pool = {}, []
    for hop in HOPS:
        rows = [ex for ex in load_jsonl(metaqa / "qa" / f"metaqa_{hop}hop_dev.jsonl") if ex.kb_exact]
        test[f"{hop}hop"] = rng.sample(rows, per_hop + 12)[:per_hop]
        taken = {ex.id for ex in test[f"{hop}hop"]}
        share = train // len(HOPS) + (hop <= train % len(HOPS))
        pool += draw.sample([ex for ex in rows if ex.id not in taken], share)
    return test, draw.sample(pool, len(pool))


def metaqa_bench(per_hop: int, train: int, seed: int, metaqa: Path) -> Bench:
    test, trainset = metaqa_samples(per_hop, train, seed, metaqa)
    store = EmbeddedStore()
    store.add_triples(kb_triples(metaqa / "kb.txt"))
    return Bench("metaqa", KnowledgeGraph(store, profile="metaqa"), test, trainset)


def cwq_bench(size: int, train: int, seed: int, cwq: Path, *, split: str = "test", types: Sequence[str] = (),
              more: int = 0) -> Bench:
    """`size` seeded `cwq_mini_test` questions and `train` seeded `cwq_mini_dev` questions, over
    one store built from all their graphs (each row's graph is cut from the same union graph).
    `split="dev"`: the `size` questions are `cwq_mini_dev` rows outside the compile sample instead
    (sample "dev"), what a change of the walk is tuned on before it meets the test questions.
    `types`: the sample is drawn from the questions of these `compositionality_type`s only; a `size`
    above their number takes them all. `more`: also that many seeded `cwq_mini_dev` rows outside
    the compile sample and the other sample (sample "more": more training questions, for a
    learning curve), the same samples as without them."""
    dev = list(load_rog(cwq / "cwq_mini_dev.jsonl.gz"))
    trainset = compile_sample(dev, train, seed)
    taken = {ex.id for ex in trainset}
    rows = [ex for ex in dev if ex.id not in taken] if split == "dev" else list(load_rog(cwq / "cwq_mini_test.jsonl.gz"))
    if types:
        rows = [ex for ex in rows if getattr(ex, "compositionality_type", None) in types]
    test = {split: random.Random(seed).sample(rows, min(size, len(rows)))}
    if more:
        taken |= {ex.id for ex in test[split]}
        rest = [ex for ex in dev if ex.id not in taken]
        test["more"] = random.Random(f"more-{seed}").sample(rest, min(more, len(rest)))
    return Bench("cwq-mini", union_graph([ex for samples in test.values() for ex in samples] + trainset), test, trainset)


def union_graph(rows: Sequence[dspy.Example]) -> KnowledgeGraph:
    """One store of every triple of the RoG rows' own graphs (each cut from the same union graph)."""
    store = EmbeddedStore()
    store.add_triples(graph_triples(dict.fromkeys(tuple(t) for ex in rows for t in ex.graph)))
    return KnowledgeGraph(store, profile=ROG)


GIVEN_PATHS = ("path", "qtype", "ground_paths")  # the fields a dataset's gold relation paths come in


def answers_alone(examples: Sequence[dspy.Example]) -> list[dspy.Example]:
    """The examples without the gold paths their data gives: questions, answers and topic entities,
    what a user brings; compiling finds their paths in the graph (`optimizers.paths`)."""
    return [ex.copy(**dict.fromkeys(GIVEN_PATHS)) for ex in examples]


def compile_sample(dev: Sequence[dspy.Example], train: int, seed: int) -> list[dspy.Example]:
    """The `train` seeded `cwq_mini_dev` rows a CWQ-mini program is compiled on (the same for any sample size or split)."""
    return random.Random(f"compile-{seed}").sample(list(dev), train)


def answerable(example: dspy.Example, hops: int = 3, *, topics: bool = True) -> bool:
    """Some gold answer is within `hops` undirected hops of a topic entity in the row's own graph
    (relations the rog profile hides left out): the ceiling of a walk over that graph. Without
    `topics`, a topic entity that is its own answer does not count: no chain from it ends there."""
    reached = hops_from(example, skips=ROG.skips, longest=hops)
    return any((topics or hops_away) and same_answer(node, gold)
               for nodes in reached.values() for node, hops_away in nodes.items() for gold in example.answers)


class ProgramMismatch(ValueError):
    """A program already in the results folder was compiled on other questions than the run asks for."""


def build(system: str, bench: Bench, out: Path, walk: WalkConfig, sample: str):
    if system == "llm-only":
        return LLMOnly()
    if system == "floor":
        return SimilarityWalk(bench.kg, config=WalkConfig(**{**walk.to_dict(), "depth": bench.floor_depth(sample)}))
    if system == "scorer-alone":
        return scorer_alone(build("bootstrap", bench, out, walk, sample), depth=bench.floor_depth(sample))
    walk = bench.walk(walk)
    if system == "uncompiled":
        return KGQA(bench.kg, config=walk)
    if system in ABLATIONS:  # the compiled program, one step off
        return switched_off(build("bootstrap", bench, out, walk, sample), ablated_step(system))
    program, optimizer = KGQA(bench.kg, config=walk), system
    directory = out / f"program-{system}"
    held = VALIDATION.get(system, 0)
    train, val = (bench.train[:-held], bench.train[-held:]) if held else (bench.train, None)
    if not (directory / "program.json").exists():  # compiled once, reused across samples and reruns: on the same questions
        start = time.perf_counter()
        compiled = compile_program(program, optimizer, trainset=train, valset=val, budget=BUDGETS[system])
        minutes = (time.perf_counter() - start) / 60
        save_program(compiled, directory, settings={"kg": bench.dataset, "optimizer": system, "train": len(train),
                                                     "valset": len(val or []), "compile_minutes": round(minutes, 1)})
        print(f"compiled {system} on {len(train)} questions (+{len(val or [])} validation) in {minutes:.1f} min", flush=True)
    settings = read_settings(directory)
    compiled_on = settings.get("train")
    if compiled_on is not None and compiled_on != len(train):
        raise ProgramMismatch(f"{directory} was compiled on {compiled_on} questions, not {len(train)}: "
                              "give the --train it was compiled with, or another --out")
    return load_program(directory, bench.kg, settings=settings)


def scorer_alone(compiled: KGQA, *, depth: int) -> SimilarityWalk:
    """The compiled program's linker, chain prior and path scorer on the walk with no LM (`depth`
    hops, every choice by similarity): the scorer's first candidate, and the other ends of its
    chain, answer."""
    return SimilarityWalk(compiled.kg, config=replace(compiled.config, depth=depth), embedder=compiled.embedder,
                          linker=compiled.linker, chain_prior=compiled.chain_prior, path_scorer=compiled.path_scorer)


def switched_off(program: KGQA, step: str) -> KGQA:
    """A copy of `program` with `step` switched off (`WalkConfig.without`); the program itself is left as it is."""
    copy = program.deepcopy()
    copy.config = program.config.without(step)
    return copy


def stopped(records: list[dict], examples: dict) -> tuple[int, int, int]:
    """Wrong answers (Hits@1 = 0) that stopped before, at and past the gold depth (relations walked)."""
    early = at = past = 0
    for record in records:
        example = examples.get(record["id"])
        gold = gold_relation_paths(example) if example is not None else []
        if record["scores"]["hits1"] or not gold:
            continue
        walked = len(Trace.from_dict(record["trace"]).relation_path)
        depth = min(len(g) for g in gold)
        early, at, past = early + (walked < depth), at + (walked == depth), past + (walked > depth)
    return early, at, past


def table(results: dict[tuple[str, str], Summary], stops: dict[tuple[str, str], tuple[int, int, int]] | None = None) -> str:
    head = ("| system | sample | n | Hits@1 | Hit@any | F1 | candidate recall | LLM calls | in tokens | out tokens | SPARQL | s/q mean "
            "| s/q median | wrong: early / at / past gold depth |")
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for (system, sample), s in results.items():
        early, at, past = (stops or {}).get((system, sample), ("-", "-", "-"))
        lines.append(
            f"| {system} | {sample} | {s.questions} | {s.hits1:.3f} | {s.hit_any:.3f} | {s.f1:.3f} | {s.candidate_recall:.3f} | {s.llm_calls:.1f} | "
            f"{s.input_tokens:.0f} | {s.output_tokens:.0f} | {s.sparql_queries:.1f} | {s.seconds:.1f} | {s.seconds_median:.1f} "
            f"| {early} / {at} / {past} |"
        )
    return "\n".join(lines)


def by_type(records: dict[str, dict[str, dict]], examples: list[dspy.Example]) -> str:
    """Hits@1 per `compositionality_type` for each system, with the ceiling (`answerable@3`) beside it,
    then each system's candidate recall over the answerable questions alone (a question no walk of
    its graph can answer has no gold answer to show)."""
    kinds = sorted({_kind(ex) for ex in examples})
    head = "| system | " + " | ".join(f"{k} (n={sum(_kind(ex) == k for ex in examples)})" for k in kinds) + " | all |"
    lines = [head, "|---" * (len(kinds) + 2) + "|"]
    everyone, reachable = {ex.id for ex in examples}, {ex.id for ex in examples if answerable(ex)}
    rows = {"answerable@3 (ceiling)": ({i: float(i in reachable) for i in everyone}, everyone)}
    rows.update({system: ({i: r["scores"]["hits1"] for i, r in got.items()}, everyone) for system, got in records.items()})
    rows.update({f"{system}: candidate recall of the answerable": (
        {i: float(candidate_recalled(r, Trace.from_dict(r["trace"]))) for i, r in got.items()}, reachable)
        for system, got in records.items()})
    for name, (scores, among) in rows.items():
        cells = []
        for kind in [*kinds, None]:
            ids = [ex.id for ex in examples if ex.id in among and (kind is None or _kind(ex) == kind)]
            cells.append(f"{sum(scores.get(i, 0.0) for i in ids) / len(ids):.3f}" if ids else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _kind(example: dspy.Example) -> str:
    return getattr(example, "compositionality_type", None) or "?"


def plot(results: dict[tuple[str, str], Summary], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for system in dict.fromkeys(s for s, _ in results):
        points = [(s.input_tokens + s.output_tokens, s.hits1, sample) for (name, sample), s in results.items() if name == system]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=system)
        for x, y, sample in points:
            ax.annotate(sample, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("LLM tokens per question (input + output)")
    ax.set_ylabel("Hits@1")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{title}: accuracy against tokens per question")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def write_outputs(bench: Bench, out: Path, systems: list[str], per_sample: int) -> tuple[list[Path], list[str]]:
    """`table.md` (with Hits@1 per question type where the data has types) and
    `accuracy_vs_tokens.png` from the records on disk; the paths, and what is still incomplete."""
    results, stops, missing, complete = {}, {}, [], {}
    for system in systems:
        for sample, examples in bench.test.items():
            records = list(read_records(out / f"{system}-{sample}.jsonl", repair=False).values())
            wanted = min(per_sample, len(examples))  # `--types` with a --per-hop above their number takes them all
            if len(records) >= wanted:
                results[(system, sample)] = summarize(records[:wanted])
                stops[(system, sample)] = stopped(records[:wanted], {ex.id: ex for ex in examples})
                complete.setdefault(system, {}).update({r["id"]: r for r in records[:wanted]})
            else:
                missing.append(f"{system} {sample} ({len(records)}/{wanted})")
    text = table(results, stops) + "\n"
    examples = [ex for group in bench.test.values() for ex in group]
    if any(getattr(ex, "compositionality_type", None) for ex in examples):
        text += "\nHits@1 per question type, and candidate recall of the answerable questions:\n\n" + by_type(complete, examples) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    markdown, figure = out / "table.md", out / "accuracy_vs_tokens.png"
    markdown.write_text(text)
    plot(results, figure, bench.dataset)
    return [markdown, figure], missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=DATASETS, default="metaqa")
    parser.add_argument("--per-hop", type=int, default=30, help="test questions per hop (MetaQA) or in all (CWQ-mini)")
    parser.add_argument("--train", type=int, help="compile questions, disjoint from the test sample (default: "
                        f"{TRAIN['metaqa']} on MetaQA, {TRAIN['cwq-mini']} on CWQ-mini)")
    parser.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS), help=f"of {', '.join(SYSTEMS)}")
    parser.add_argument("--lm", default="local")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-llm-calls", type=int, default=WalkConfig.max_llm_calls)
    parser.add_argument("--metaqa", type=Path, default=METAQA)
    parser.add_argument("--cwq-mini", type=Path, default=CWQ_MINI)
    parser.add_argument("--out", type=Path, help="results directory (default: runs/{accuracy,cwq-mini}-LM[-seedN])")
    parser.add_argument("--split", choices=("test", "dev"), default="test",
                        help="CWQ-mini: test questions, or dev questions outside the compile sample (to tune on)")
    parser.add_argument("--samples", help="only these samples, comma-separated (MetaQA: 1hop,2hop,3hop; CWQ-mini: test or dev)")
    parser.add_argument("--types", type=lambda text: [t for t in text.split(",") if t],
                        help="CWQ-mini: sample only questions of these compositionality types (of comparative, superlative, "
                             "conjunction, composition), comma-separated; a --per-hop above their number takes them all")
    parser.add_argument("--report", action="store_true", help="write the table and plot from the records so far; run nothing")
    args = parser.parse_args(argv)
    systems = [s for s in args.systems.split(",") if s]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    if args.split == "dev" and args.dataset != "cwq-mini":
        parser.error("--split dev is for --dataset cwq-mini (MetaQA's samples are dev questions already)")
    if args.types and args.dataset != "cwq-mini":
        parser.error("--types is for --dataset cwq-mini (MetaQA's questions have no compositionality type)")
    if args.types and set(args.types) - set(CWQ_TYPES):
        parser.error(f"unknown types {sorted(set(args.types) - set(CWQ_TYPES))}; choose from {', '.join(CWQ_TYPES)}")
    args.train = args.train or TRAIN[args.dataset]
    seeded = f"-seed{args.seed}" if args.seed else ""
    prefix = "accuracy" if args.dataset == "metaqa" else args.dataset
    args.out = args.out or Path(__file__).parents[1] / "runs" / f"{prefix}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', args.lm)}{seeded}"
    if args.dataset == "metaqa":
        bench = metaqa_bench(args.per_hop, args.train, args.seed, args.metaqa)
    else:
        bench = cwq_bench(args.per_hop, args.train, args.seed, args.cwq_mini, split=args.split, types=args.types)
        args.per_hop = len(bench.test[args.split])  # all of them, when --types leaves fewer
    if args.samples:
        wanted = args.samples.split(",")
        if set(wanted) - set(bench.test):
            parser.error(f"unknown samples {sorted(set(wanted) - set(bench.test))}; choose from {', '.join(bench.test)}")
        bench.test = {name: bench.test[name] for name in wanted}
    if not args.report:
        try:
            run_systems(bench, args, systems)
        except (ProgramMismatch, ProgramFileError) as error:
            parser.error(str(error))
    paths, missing = write_outputs(bench, args.out, systems, args.per_hop)
    print(paths[0].read_text(), end="")
    if missing:
        print("incomplete: " + ", ".join(missing))
    return 0


def run_systems(bench: Bench, args: argparse.Namespace, systems: list[str]) -> None:
    from kgqa.lm.adapter import ConstrainedJSONAdapter
    from kgqa.specs import make_lm

    args.out.mkdir(parents=True, exist_ok=True)
    walk = WalkConfig(max_llm_calls=args.max_llm_calls)
    dspy.configure(lm=make_lm(args.lm), adapter=ConstrainedJSONAdapter())
    params = {"dataset": args.dataset, "lm": args.lm, "per_hop": args.per_hop, "train": args.train, "seed": args.seed,
              "systems": args.systems, **{f"walk.{k}": v for k, v in walk.to_dict().items()}}
    with tracking.mlflow_run("bench accuracy", params=params):
        for system in systems:
            for sample, examples in bench.test.items():
                program = build(system, bench, args.out, walk, sample)
                if system in ABLATIONS:
                    reuse_skipped(args.out, system, sample, ids={ex.id for ex in examples})
                summary = evaluate(program, examples, out=args.out / f"{system}-{sample}.jsonl")
                tracking.log_metrics(f"{system}.{sample}.", summary.as_dict())
                print(f"{system} {sample}: Hits@1 {summary.hits1:.3f}", flush=True)
        for path in write_outputs(bench, args.out, systems, args.per_hop)[0]:
            tracking.log_artifact(path)


def reuse_skipped(out: Path, system: str, sample: str, *, ids: set[str]) -> int:
    """Seed an ablation's records with the `bootstrap` records of the sample's questions (`ids`) on
    which its step skipped every time (a step of `SKIPPED_IS_OFF` walks the same off as skipped), so
    only the others are asked again. How many were copied."""
    step = ablated_step(system)
    source, target = out / f"bootstrap-{sample}.jsonl", out / f"{system}-{sample}.jsonl"
    if step not in SKIPPED_IS_OFF or not source.exists():
        return 0
    done = read_records(target, repair=False) if target.exists() else {}
    copied = [
        {**record, "reused": "bootstrap"} for record in read_records(source, repair=False).values()
        if record["id"] in ids and record["id"] not in done and not record.get("error") and skipped_throughout(record, step)
    ]
    with target.open("a", encoding="utf-8") as f:
        f.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in copied)
    return len(copied)


def skipped_throughout(record: dict, step: str) -> bool:
    """The record's trace says `step` skipped every time it came up (or never came up)."""
    return all(s["status"] == "skipped" for s in record["trace"].get("steps", ()) if s["step"] == step)


def ablated_step(system: str) -> str:
    """The step a `bootstrap-no-STEP` system switches off."""
    return system.removeprefix("bootstrap-no-").replace("-", "_")


if __name__ == "__main__":
    sys.exit(main())
