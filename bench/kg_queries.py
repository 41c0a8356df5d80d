"""Batched KG access against the anchor systems' one-query-per-entity pattern, on MetaQA.

For a seeded sample of 2-hop and 3-hop MetaQA dev questions (`kb_exact` rows), walk each
question's gold relation path (from its `qtype`) twice, doing what an exploring program does
at every hop: list the relations around the frontier (both directions), follow one relation,
and name what was reached.

- batched: one query for the relations around the topic entities, then per hop one query for the
  neighbours through the path's relation, with their names and the relations around them;
- anchor (ToG/PoG): per frontier entity 2 relation queries and 1 neighbour query, and 1 name query per
  entity reached, with the anchors' query shapes (see `AnchorAccess`);
- anchor-direct: the same round trips with a plain name pattern instead of the anchors' FILTER
  form, which pyoxigraph (unlike Virtuoso) answers by scanning every name: the cost of the round
  trips alone.

Both run on the embedded store and on a local Virtuoso loaded with the same triples, after one
untimed warm-up pass (Virtuoso's first touch of a page costs 20-60 ms). The last line is
`ratio_queries=X ratio_time=Y` (anchor / batched, the smaller over the two backends); the line
before it gives anchor-direct / batched.

    .venv/bin/python -m bench.kg_queries [--per-hop 100] [--no-virtuoso]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pyoxigraph as ox

from kgqa.data.jsonl import load_jsonl
from kgqa.data.metaqa import kb_triples, qtype_path
from kgqa.kg import Direction, EmbeddedStore, KnowledgeGraph, Node, SparqlEndpoint, virtuoso
from kgqa.kg.terms import sparql_iri

OWL_SAME_AS = "http://www.w3.org/2002/07/owl#sameAs"
METAQA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "metaqa"

Walk = Callable[[KnowledgeGraph, list[str], list[tuple[str, str]]], frozenset[str]]


def walk_batched(kg: KnowledgeGraph, topics: list[str], path: list[tuple[str, str]]) -> frozenset[str]:
    """The relations around the topics (one query), then per hop one query: the neighbours through
    the path's relation, with their names and, unless it is the last hop, the relations around
    them (the next hop's listing)."""
    frontier, reached = topics, []
    kg.relations(frontier)
    for hop, (relation, direction) in enumerate(path, 1):
        more = hop < len(path)  # the last hop's answers need no relation listing
        fanout = kg.follow([(e, relation, Direction(direction)) for e in frontier], relations=more)
        reached = sorted({n for ns in fanout.items.values() for n in ns if n.literal or n.id not in topics})
        frontier = [n.id for n in reached if not n.literal]
        if more:  # those reached by a hub's moves came without their relations, asked as the walk asks them
            kg.fill_relations(dict(fanout.around), frontier)
    return frozenset(n.label for n in reached)


class AnchorAccess:
    """Graph access the way ToG / PoG do it (`freebase_func.py`), one round trip per entity:
    `SELECT ?relation WHERE { <e> ?relation ?x }` (and the incoming twin; no DISTINCT, relations
    filtered in Python), `SELECT DISTINCT ?tail WHERE { <e> <r> ?tail }` (or its head form), and a
    name query per entity. The name query is theirs too: `{ ?entity <name> ?n . FILTER(?entity = <e>) }
    UNION { ?entity owl:sameAs ?n . FILTER(...) }`. Virtuoso turns that FILTER into a lookup;
    pyoxigraph scans every name for it (~12 ms a query on MetaQA). With `direct_names`, the name
    query is the plain pattern `<e> <name> ?n` instead: the same round trips, none of that scan.
    Full IRIs and our escaping."""

    def __init__(self, kg: KnowledgeGraph, *, direct_names: bool = False) -> None:
        self.kg, self.profile, self.direct_names = kg, kg.profile, direct_names

    def relations(self, entity: str, direction: Direction) -> list[str]:
        e = sparql_iri(self.profile.entity_iri(entity))
        pattern = f"{e} ?relation ?x" if direction is Direction.OUT else f"?x ?relation {e}"
        rows = self.kg._select(f"SELECT ?relation WHERE {{ {pattern} . }}")
        return sorted({r for row in rows if (r := self.profile.relation_id(row["relation"].value))})

    def neighbours(self, entity: str, relation: str, direction: Direction) -> set[Node]:
        e, r = sparql_iri(self.profile.entity_iri(entity)), sparql_iri(self.profile.relation_iri(relation))
        pattern = f"{e} {r} ?tail" if direction is Direction.OUT else f"?tail {r} {e}"
        rows = self.kg._select(f"SELECT DISTINCT ?tail WHERE {{ {pattern} . }}")
        return {node for row in rows if (node := self.kg._node(row["tail"])) is not None}

    def name(self, entity: str) -> str | None:
        e = sparql_iri(self.profile.entity_iri(entity))
        if self.direct_names:
            union = " UNION ".join(f"{{ {e} {sparql_iri(p)} ?name . }}" for p in self.profile.name_predicates)
        else:
            predicates = [*self.profile.name_predicates, OWL_SAME_AS]
            union = " UNION ".join(f"{{ ?entity {sparql_iri(p)} ?name . FILTER(?entity = {e}) }}" for p in predicates)
        rows = self.kg._select(f"SELECT DISTINCT ?name WHERE {{ {union} }}")
        return min((row["name"].value for row in rows if row["name"].kind == "literal"), default=None)


def walk_anchor(
    kg: KnowledgeGraph, topics: list[str], path: list[tuple[str, str]], *, direct_names: bool = False
) -> frozenset[str]:
    """Per frontier entity: outgoing and incoming relations, then the neighbours; then per entity reached, its name."""
    access = AnchorAccess(kg, direct_names=direct_names)
    frontier, reached = topics, []
    for relation, direction in path:
        found: set[Node] = set()
        for entity in frontier:
            access.relations(entity, Direction.OUT)
            access.relations(entity, Direction.IN)
            found |= access.neighbours(entity, relation, Direction(direction))
        reached = sorted(n for n in found if n.literal or n.id not in topics)
        names = {n.id: access.name(n.id) for n in reached if not n.literal}
        frontier = [n.id for n in reached if not n.literal]
    return frozenset(n.id if n.literal else names[n.id] or n.id for n in reached)


def sample(per_hop: int, seed: int) -> list:
    rng = random.Random(seed)
    chosen = []
    for hop in (2, 3):
        rows = [ex for ex in load_jsonl(METAQA / "qa" / f"metaqa_{hop}hop_dev.jsonl") if ex.kb_exact]
        chosen += rng.sample(rows, per_hop)
    return chosen


def run(kg: KnowledgeGraph, questions: list, walk: Walk) -> tuple[dict, list[frozenset[str]]]:
    before = kg.stats.snapshot()
    start = time.perf_counter()
    answers = [walk(kg, ex.topic_entities, qtype_path(ex.qtype)) for ex in questions]
    wall = time.perf_counter() - start
    after = kg.stats.snapshot()
    return {"queries": after["queries"] - before["queries"], "kg_seconds": after["seconds"] - before["seconds"], "wall": wall}, answers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-hop", type=int, default=100, help="questions per hop (2 and 3); default 100 (200 in all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--metaqa", type=Path, default=METAQA)
    parser.add_argument("--no-virtuoso", action="store_true", help="embedded store only")
    args = parser.parse_args(argv)

    questions = sample(args.per_hop, args.seed)
    gold = [frozenset(ex.answers) for ex in questions]
    triples = list(kb_triples(args.metaqa / "kb.txt"))
    store = EmbeddedStore()
    store.add_triples(triples)
    backends = {"embedded": KnowledgeGraph(store, profile="metaqa")}
    server = None
    workdir = tempfile.TemporaryDirectory(prefix="kgqa-bench-")
    if not args.no_virtuoso:
        nt = Path(workdir.name) / "metaqa.nt"
        nt.write_bytes(ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES))
        start = time.perf_counter()
        server = virtuoso.LocalVirtuoso.start(Path(workdir.name) / "virtuoso", [nt])
        print(f"virtuoso: loaded {len(triples):,} triples in {time.perf_counter() - start:.1f} s ({server.url})")
        backends["virtuoso"] = KnowledgeGraph(SparqlEndpoint(server.url, timeout=60), profile="metaqa")

    print(f"{len(questions)} questions (2-hop and 3-hop, kb_exact, seed {args.seed}), gold relation paths")
    print(f"{'backend':<10} {'way':<14} {'queries':>9} {'KG s':>8} {'wall s':>8} {'q/question':>10} {'gold':>9}")
    ratios, direct_ratios = [], []
    try:
        for name, kg in backends.items():
            run(kg, questions, walk_batched)  # warm-up, untimed: the first touch of a page is cold on both backends
            batched, batched_answers = run(kg, questions, walk_batched)
            anchor, anchor_answers = run(kg, questions, walk_anchor)
            direct, direct_answers = run(kg, questions, partial(walk_anchor, direct_names=True))
            for way, answers in (("anchor", anchor_answers), ("anchor-direct", direct_answers)):
                if answers != batched_answers:
                    diff = sum(a != b for a, b in zip(batched_answers, answers))
                    print(f"{name}: batched and {way} disagree on {diff} questions", file=sys.stderr)
                    return 1
            hits = sum(a == g for a, g in zip(batched_answers, gold))
            for way, m in (("batched", batched), ("anchor", anchor), ("anchor-direct", direct)):
                print(
                    f"{name:<10} {way:<14} {m['queries']:>9,} {m['kg_seconds']:>8.3f} {m['wall']:>8.2f} "
                    f"{m['queries'] / len(questions):>10.1f} {hits:>4}/{len(questions)}"
                )
            ratios.append((anchor["queries"] / batched["queries"], anchor["kg_seconds"] / batched["kg_seconds"]))
            direct_ratios.append(direct["kg_seconds"] / batched["kg_seconds"])
    finally:
        if server is not None:
            server.stop()
        workdir.cleanup()
    print("same answers every way on every backend")
    print(f"anchor-direct (their round trips, plain name patterns): ratio_time={min(direct_ratios):.1f}")
    print(f"ratio_queries={min(r[0] for r in ratios):.1f} ratio_time={min(r[1] for r in ratios):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
