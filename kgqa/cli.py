"""The `kgqa` command line. Parsing and printing live here; the work lives in the packages."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from data.examples import DatasetError  # noqa: E402
from kg.errors import KGError  # noqa: E402

USER_ERRORS = (KGError, DatasetError, FileNotFoundError, PermissionError)


def _kg_load(args: argparse.Namespace) -> int:
    from data.kb import build_store

    store, profile, reports = build_store(args.sources, path=args.store, format=args.format, profile=args.profile)
    for r in reports:
        print(f"loaded {r.source} ({r.format}): {r.triples:,} triples in {r.seconds:.2f} s")
    print(f"store {args.store}: {len(store):,} triples, profile {profile}")
    return 0


def _kg_stats(args: argparse.Namespace) -> int:
    from data.kb import store_stats
    from kg import EmbeddedStore, KnowledgeGraph

    store = EmbeddedStore.open(args.store)
    meta = store.read_meta()
    kg = KnowledgeGraph(store, profile=args.profile or meta.get("profile", "generic"))
    stats = {"store": str(args.store), "profile": kg.profile.name, **store_stats(kg)}
    stats["load_seconds"] = meta.get("load_seconds")
    if args.json:
        print(json.dumps(stats))
    else:
        for key, value in stats.items():
            print(f"{key:>13}: {value:,}" if isinstance(value, int) else f"{key:>13}: {value}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    """Load the demo KG and answer the demo test questions by walking their gold relation paths."""
    from data.demo import DEMO_KG, DEMO_PROFILE, split_path
    from data.jsonl import load_jsonl
    from kg import EmbeddedStore, KnowledgeGraph
    from kg.paths import answer_names, walk

    store = EmbeddedStore()
    start = time.perf_counter()
    store.load_file(DEMO_KG, format="ntriples")
    print(f"demo KG: {len(store):,} triples loaded in {time.perf_counter() - start:.2f} s (embedded, in memory)")
    kg = KnowledgeGraph(store, profile=DEMO_PROFILE)
    examples = list(load_jsonl(split_path("test")))
    correct = 0
    for ex in examples:
        answers = answer_names(kg, walk(kg, ex.topic_entities, ex.path))
        correct += answers == sorted(ex.answers)
    ex = examples[0]
    print(f"Q: {ex.question}\nA: {', '.join(answer_names(kg, walk(kg, ex.topic_entities, ex.path)))}")
    stats = kg.stats.snapshot()
    print(
        f"gold paths reproduce {correct}/{len(examples)} test answers; "
        f"{stats['queries']} SPARQL queries, {stats['seconds'] * 1000:.1f} ms in the KG"
    )
    return 0 if correct == len(examples) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kgqa", description="Knowledge-graph question answering as a compiled DSPy program.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="the main job on the embedded defaults (demo KG)")
    demo.set_defaults(run=_demo)

    kg = commands.add_parser("kg", help="build and inspect embedded KG stores")
    kg_commands = kg.add_subparsers(dest="kg_command", required=True)
    load = kg_commands.add_parser("load", help="load RDF, MetaQA kb.txt or RoG graphs into a store directory")
    load.add_argument("sources", nargs="+", help="files to load (RoG: a local file or a hub dataset name)")
    load.add_argument("--store", required=True, type=Path, help="store directory (created if missing)")
    load.add_argument("--format", choices=("ntriples", "turtle", "metaqa", "rog"), help="default: from the suffix")
    load.add_argument("--profile", choices=("freebase", "metaqa", "rog", "generic"), help="default: guessed")
    load.set_defaults(run=_kg_load)
    stats = kg_commands.add_parser("stats", help="triples, entities, relations and load time of a store")
    stats.add_argument("--store", required=True, type=Path)
    stats.add_argument("--profile", choices=("freebase", "metaqa", "rog", "generic"), help="default: the store's")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    stats.set_defaults(run=_kg_stats)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except USER_ERRORS as exc:
        if args.debug:
            raise
        print(f"kgqa: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
