"""RoG-style datasets (`rmanluo/RoG-webqsp`, `rmanluo/RoG-cwq`): one small graph per question.

Rows hold `id, question, answer[], q_entity[], a_entity[], graph[[h, r, t]]` with entities as
names (mids where nameless). They come through HF `datasets`: by hub name when online, or from
a local parquet / JSON(L) file, compressed or not (`.jsonl.gz`, `.json.bz2`, ...: what `datasets`
decompresses). Each question's `graph` becomes its own in-memory store, in which a nameless node
(an `m.`/`g.` id: a CVT) gets no label, so the walk steps through it and never answers with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import dspy
import pyoxigraph as ox

from kgqa.data.examples import DatasetError, make_example, require
from kgqa.kg import EmbeddedStore, KnowledgeGraph
from kgqa.kg.errors import InvalidTermError
from kgqa.kg.profiles import FREEBASE_ID, RDFS_LABEL, ROG

_LOCAL_BUILDERS = {".parquet": "parquet", ".json": "json", ".jsonl": "json"}
COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst", ".lz4")


def local_format(path: Path) -> str | None:
    """The `datasets` builder for a local file, looking past a compression suffix; None for a hub name."""
    suffixes = path.suffixes[-2:] if path.suffix in COMPRESSIONS else path.suffixes[-1:]
    return _LOCAL_BUILDERS.get(suffixes[0]) if suffixes else None


def _rows(source: str, split: str):
    import datasets

    path = Path(source)
    try:
        builder = local_format(path)
        if builder:
            if not path.is_file():
                raise DatasetError(f"no such file: {path}")
            return datasets.load_dataset(builder, data_files=str(path), split="train")
        return datasets.load_dataset(source, split=split)
    except DatasetError:
        raise
    except Exception as exc:  # datasets raises many types: offline hub, bad schema, bad split
        raise DatasetError(f"cannot load RoG dataset {source!r} (split {split!r}): {type(exc).__name__}: {exc}") from exc


def check_graph(graph: object, source: str) -> list[tuple[str, str, str]]:
    if not isinstance(graph, list):
        raise DatasetError(f"{source}: graph must be a list of [head, relation, tail] triples")
    triples = []
    for n, triple in enumerate(graph):
        if not (isinstance(triple, (list, tuple)) and len(triple) == 3 and all(isinstance(t, str) and t for t in triple)):
            raise DatasetError(f"{source}: graph triple {n} is not [head, relation, tail]: {triple!r}"[:300])
        triples.append(tuple(triple))
    return triples


def load_rog(source: str | Path, *, split: str = "test", with_graph: bool = True) -> Iterator[dspy.Example]:
    """Examples from a hub dataset name or a local file; `graph` stays on each example if asked."""
    for index, row in enumerate(_rows(str(source), split)):
        where = f"{source}:{index}"
        extra = {"graph": check_graph(require(row, "graph", where), where)} if with_graph else {}
        yield make_example(
            source=where,
            id=row.get("id") or f"rog-{index}",
            question=require(row, "question", where),
            topic_entities=list(require(row, "q_entity", where) or []),
            answers=list(require(row, "answer", where) or []),
            a_entities=list(row.get("a_entity") or []),
            **{k: row[k] for k in ("ground_paths", "compositionality_type") if row.get(k) is not None},
            **extra,
        )


def graph_triples(graph: Iterable[tuple[str, str, str]]) -> Iterator[ox.Triple]:
    """RDF for name-based triples under the `rog` profile, each entity labelled with its name."""
    label = ox.NamedNode(RDFS_LABEL)
    seen: set[str] = set()
    for head, relation, tail in graph:
        try:
            h, r, t = (ox.NamedNode(ROG.entity_iri(head)), ox.NamedNode(ROG.relation_iri(relation)),
                       ox.NamedNode(ROG.entity_iri(tail)))
        except InvalidTermError as exc:
            raise DatasetError(f"bad graph triple {[head, relation, tail]!r}: {exc}") from None
        for name, node in ((head, h), (tail, t)):
            if name not in seen:
                seen.add(name)
                if not FREEBASE_ID.fullmatch(name):  # a mid stands for a nameless node: no label
                    yield ox.Triple(node, label, ox.Literal(name))
        yield ox.Triple(h, r, t)


def question_graph(example: dspy.Example) -> KnowledgeGraph:
    """The example's own graph as an in-memory KG (profile `rog`)."""
    store = EmbeddedStore()
    store.add_triples(graph_triples(example.graph))
    return KnowledgeGraph(store, profile=ROG)
