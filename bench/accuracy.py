"""Accuracy and cost on MetaQA, side by side, on one LM and one KG.

For 1-, 2- and 3-hop MetaQA dev questions (`kb_exact` rows), a seeded sample per hop is answered by:
- llm-only: the LM from its own knowledge (no KG);
- floor: no LM, every choice by embedding similarity, walked to the question's hop count
  (it has no way to stop by itself: a floor, told the depth);
- uncompiled: the program as written;
- bootstrap-rs (the compiled program shipped), bootstrap, mipro, mipro-light: the program compiled
  on a disjoint seeded sample of dev questions (a third per hop; `--train`, default 60), with
  intermediate labels: each question type's gold relation path drives the teacher that writes
  the demos, and `walk_metric` scores answers, paths and depths. `bootstrap-rs` holds out 15 of
  them to score 5 candidate programs (zero-shot, labeled, unshuffled and 2 shuffled bootstraps).
Per system and hop: Hits@1, Hit@any, F1, LLM calls, input and output tokens, SPARQL queries, mean
and median seconds per question, and how many wrong answers stopped before, at and past the gold
depth. Writes `table.md`, `accuracy_vs_tokens.png`, the compiled programs (their `config.json`
gives the compile time) and per-run JSONL records (rerunning resumes them) to the results
directory, and logs it all to one MLflow run. Seconds depend on the engine: quote them with the
engine speed `kgqa doctor` reports. The reference run on the local LM is in
`bench/results/accuracy-local/` (seed 0) and `accuracy-local-seed1/`.

    .venv/bin/python -m bench.accuracy --per-hop 30 [--seed 1] [--systems floor,uncompiled,bootstrap-rs] [--lm local]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # noqa: E402

from data.jsonl import load_jsonl  # noqa: E402
from data.metaqa import kb_triples  # noqa: E402
from kg import EmbeddedStore, KnowledgeGraph  # noqa: E402
from optimizers import tracking  # noqa: E402
from optimizers.evaluate import Summary, evaluate, read_records, summarize  # noqa: E402
from optimizers.metrics import gold_relation_paths  # noqa: E402
from optimizers.teleprompters import Budget, compile_program  # noqa: E402
from programs import KGQA, WalkConfig  # noqa: E402
from programs.baselines import LLMOnly, SimilarityWalk  # noqa: E402
from programs.saving import load_program, save_program  # noqa: E402

METAQA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "metaqa"
SYSTEMS = ("llm-only", "floor", "uncompiled", "bootstrap", "bootstrap-rs", "mipro", "mipro-light")
DEFAULT_SYSTEMS = ("llm-only", "floor", "uncompiled", "bootstrap", "bootstrap-rs")
BUDGETS = {
    "bootstrap": Budget(demos=3, plan_demos=50),
    "bootstrap-rs": Budget(demos=3, plan_demos=50, candidates=2),  # 5 programs scored: zero-shot, labeled, unshuffled, 2 shuffles
    "mipro": Budget(demos=2, candidates=3, trials=5),
    "mipro-light": Budget(demos=2),
}
VALIDATION = {"bootstrap-rs": 15, "mipro": 4, "mipro-light": 4}  # compile questions held out to score candidates
HOPS = (1, 2, 3)


def samples(per_hop: int, train: int, seed: int, metaqa: Path):
    """Disjoint seeded samples: `per_hop` test questions per hop, and `train` compile questions
    (a third per hop) from the rest. The test questions are drawn as the first reference run drew
    them (with 12 more per hop), so tables with the same seed compare the same questions."""
    rng, draw = random.Random(seed), random.Random(f"compile-{seed}")
    test, pool = {}, []
    for hop in HOPS:
        rows = [ex for ex in load_jsonl(metaqa / "qa" / f"metaqa_{hop}hop_dev.jsonl") if ex.kb_exact]
        test[hop] = rng.sample(rows, per_hop + 12)[:per_hop]
        taken = {ex.id for ex in test[hop]}
        share = train // len(HOPS) + (hop <= train % len(HOPS))
        pool += draw.sample([ex for ex in rows if ex.id not in taken], share)
    return test, draw.sample(pool, len(pool))


def build(system: str, kg: KnowledgeGraph, trainset, out: Path, walk: WalkConfig, hop: int):
    if system == "llm-only":
        return LLMOnly()
    if system == "floor":
        return SimilarityWalk(kg, config=WalkConfig(**{**walk.to_dict(), "depth": hop}))
    if system == "uncompiled":
        return KGQA(kg, config=walk)
    directory = out / f"program-{system}"
    if not (directory / "program.json").exists():  # compile once, reuse across hops and reruns
        held = VALIDATION.get(system, 0)
        train, val = (trainset[:-held], trainset[-held:]) if held else (trainset, None)
        start = time.perf_counter()
        compiled = compile_program(KGQA(kg, config=walk), system, trainset=train, valset=val, budget=BUDGETS[system])
        minutes = (time.perf_counter() - start) / 60
        save_program(compiled, directory, settings={"kg": "metaqa", "optimizer": system, "train": len(train),
                                                     "valset": len(val or []), "compile_minutes": round(minutes, 1)})
        print(f"compiled {system} on {len(train)} questions (+{len(val or [])} validation) in {minutes:.1f} min", flush=True)
    return load_program(directory, kg)


def stopped(records: list[dict], examples: dict) -> tuple[int, int, int]:
    """Wrong answers (Hits@1 = 0) that stopped before, at and past the gold depth (relations walked)."""
    early = at = past = 0
    for record in records:
        example = examples.get(record["id"])
        gold = gold_relation_paths(example) if example is not None else []
        if record["scores"]["hits1"] or not gold:
            continue
        walked = len(record["trace"].get("relation_path", []))
        depth = min(len(g) for g in gold)
        early, at, past = early + (walked < depth), at + (walked == depth), past + (walked > depth)
    return early, at, past


def table(results: dict[tuple[str, int], Summary], stops: dict[tuple[str, int], tuple[int, int, int]] | None = None) -> str:
    head = ("| system | hop | n | Hits@1 | Hit@any | F1 | LLM calls | in tokens | out tokens | SPARQL | s/q mean | s/q median "
            "| wrong: early / at / past gold depth |")
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for (system, hop), s in results.items():
        early, at, past = (stops or {}).get((system, hop), ("-", "-", "-"))
        lines.append(
            f"| {system} | {hop} | {s.questions} | {s.hits1:.3f} | {s.hit_any:.3f} | {s.f1:.3f} | {s.llm_calls:.1f} | "
            f"{s.input_tokens:.0f} | {s.output_tokens:.0f} | {s.sparql_queries:.1f} | {s.seconds:.1f} | {s.seconds_median:.1f} "
            f"| {early} / {at} / {past} |"
        )
    return "\n".join(lines)


def plot(results: dict[tuple[str, int], Summary], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for system in dict.fromkeys(s for s, _ in results):
        points = [(results[(system, h)].input_tokens + results[(system, h)].output_tokens, results[(system, h)].hits1, h)
                  for h in HOPS if (system, h) in results]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=system)
        for x, y, h in points:
            ax.annotate(f"{h}-hop", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("LLM tokens per question (input + output)")
    ax.set_ylabel("Hits@1")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("MetaQA: accuracy against tokens per question")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def write_outputs(results: dict[tuple[str, int], Summary], out: Path, stops: dict | None = None) -> tuple[Path, Path]:
    """`table.md` and `accuracy_vs_tokens.png` in `out`; returns their paths, the table first."""
    markdown, figure = out / "table.md", out / "accuracy_vs_tokens.png"
    markdown.write_text(table(results, stops) + "\n")
    plot(results, figure)
    return markdown, figure


def report(out: Path, systems: list[str], per_hop: int, test: dict[int, list]) -> int:
    """The table and plot from the records on disk, for the (system, hop) pairs that are complete."""
    results, stops, missing = {}, {}, []
    for system in systems:
        for hop in HOPS:
            records = list(read_records(out / f"{system}-{hop}hop.jsonl", repair=False).values())
            if len(records) >= per_hop:
                results[(system, hop)] = summarize(records[:per_hop])
                stops[(system, hop)] = stopped(records[:per_hop], {ex.id: ex for ex in test[hop]})
            else:
                missing.append(f"{system} {hop}-hop ({len(records)}/{per_hop})")
    print(write_outputs(results, out, stops)[0].read_text(), end="")
    if missing:
        print("incomplete: " + ", ".join(missing))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-hop", type=int, default=30)
    parser.add_argument("--train", type=int, default=150, help="compile questions over all hops (disjoint from the test sample)")
    parser.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS), help=f"of {', '.join(SYSTEMS)}")
    parser.add_argument("--lm", default="local")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-llm-calls", type=int, default=WalkConfig.max_llm_calls)
    parser.add_argument("--metaqa", type=Path, default=METAQA)
    parser.add_argument("--out", type=Path, help="results directory (default: bench/results/accuracy-LM, where the reference run lives)")
    parser.add_argument("--report", action="store_true", help="write the table and plot from the records so far; run nothing")
    args = parser.parse_args(argv)
    seeded = f"-seed{args.seed}" if args.seed else ""
    args.out = args.out or Path(__file__).parent / "results" / f"accuracy-{re.sub(r'[^A-Za-z0-9_.-]+', '_', args.lm)}{seeded}"
    test, trainset = samples(args.per_hop, args.train, args.seed, args.metaqa)
    if args.report:
        return report(args.out, args.systems.split(","), args.per_hop, test)

    from kgqa.lm.adapter import ConstrainedJSONAdapter
    from kgqa.specs import make_lm

    systems = [s for s in args.systems.split(",") if s]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    store = EmbeddedStore()
    store.add_triples(kb_triples(args.metaqa / "kb.txt"))
    kg = KnowledgeGraph(store, profile="metaqa")
    walk = WalkConfig(max_llm_calls=args.max_llm_calls)
    dspy.configure(lm=make_lm(args.lm), adapter=ConstrainedJSONAdapter())
    results: dict[tuple[str, int], Summary] = {}
    stops: dict[tuple[str, int], tuple[int, int, int]] = {}
    params = {"lm": args.lm, "per_hop": args.per_hop, "train": args.train, "seed": args.seed, "systems": args.systems,
              **{f"walk.{k}": v for k, v in walk.to_dict().items()}}
    with tracking.mlflow_run("bench accuracy", params=params):
        for system in systems:
            for hop in HOPS:
                program = build(system, kg, trainset, args.out, walk, hop)
                records_path = args.out / f"{system}-{hop}hop.jsonl"
                results[(system, hop)] = evaluate(program, test[hop], out=records_path)
                stops[(system, hop)] = stopped(list(read_records(records_path).values()), {ex.id: ex for ex in test[hop]})
                tracking.log_metrics(f"{system}.{hop}hop.", results[(system, hop)].as_dict())
                print(f"{system} {hop}-hop: Hits@1 {results[(system, hop)].hits1:.3f}", flush=True)
        outputs = write_outputs(results, args.out, stops)
        for path in outputs:
            tracking.log_artifact(path)
    print(outputs[0].read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
