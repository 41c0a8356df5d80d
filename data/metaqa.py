"""MetaQA: the WikiMovies KB (`head|relation|tail`) and its questions.

Entities are minted from their names (profile `metaqa`). The tails of `release_year`,
`has_imdb_rating` and `has_imdb_votes` are literals, so the film titled "1941" and the
year 1941 stay different nodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import dspy
import pyoxigraph as ox

from kgqa.data.examples import DatasetError, make_example, numbered_lines
from kgqa.data.jsonl import load_jsonl
from kgqa.kg.errors import InvalidTermError
from kgqa.kg.profiles import METAQA, RDFS_LABEL
from kgqa.kg.terms import XSD
from kgqa.progress import QUIET, Progress

LITERAL_RELATIONS = {
    "release_year": ox.NamedNode(XSD + "gYear"),
    "has_imdb_rating": None,
    "has_imdb_votes": None,
}
_TOPIC = re.compile(r"\[([^\]]+)\]")


def kb_triples(path: str | Path, *, progress: Progress = QUIET) -> Iterator[ox.Triple]:
    """Triples of a MetaQA `kb.txt` (or `kb.txt.gz`), plus one rdfs:label per entity (its name)."""
    path = Path(path)
    label = ox.NamedNode(RDFS_LABEL)
    labelled: set[str] = set()
    relations: dict[str, ox.NamedNode] = {}

    def entity(name: str, source: str, out: list[ox.Triple]) -> ox.NamedNode:
        try:
            node = ox.NamedNode(METAQA.entity_iri(name))
        except InvalidTermError as exc:
            raise DatasetError(f"{source}: {exc}") from None
        if name not in labelled:
            labelled.add(name)
            out.append(ox.Triple(node, label, ox.Literal(name)))
        return node

    for source, line in numbered_lines(path, progress=progress):
        parts = line.split("|")
        if len(parts) != 3 or not all(p.strip() for p in parts):
            raise DatasetError(f"{source}: expected 'head|relation|tail', got {line[:120]!r}")
        head, relation, tail = (p.strip() for p in parts)
        triples: list[ox.Triple] = []
        if relation not in relations:
            try:
                relations[relation] = ox.NamedNode(METAQA.relation_iri(relation))
            except InvalidTermError as exc:
                raise DatasetError(f"{source}: {exc}") from None
        subject = entity(head, source, triples)
        if relation in LITERAL_RELATIONS:
            datatype = LITERAL_RELATIONS[relation]
            obj = ox.Literal(tail, datatype=datatype) if datatype else ox.Literal(tail)
        else:
            obj = entity(tail, source, triples)
        triples.append(ox.Triple(subject, relations[relation], obj))
        yield from triples


def load_questions(path: str | Path, *, qtypes: str | Path | None = None) -> Iterator[dspy.Example]:
    """Questions from the original format (`question [topic]\\tans1|ans2`, with an optional aligned
    qtype file) or from JSONL (`{id, hop, question, topic_entity, answers, qtype, kb_exact}`)."""
    path = Path(path)
    if path.suffix == ".jsonl":
        yield from load_jsonl(path)
        return
    qtype_lines: list[str] | None = None
    if qtypes is None and path.with_name(path.stem + "_qtype.txt").is_file():
        qtypes = path.with_name(path.stem + "_qtype.txt")
    if qtypes is not None:
        qtype_lines = Path(qtypes).read_text(encoding="utf-8").splitlines()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if qtype_lines is not None and len(qtype_lines) != len(lines):
        raise DatasetError(f"{qtypes}: {len(qtype_lines)} question types for {len(lines)} questions in {path}")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        source = f"{path}:{number}"
        question, tab, answers = line.partition("\t")
        topics = _TOPIC.findall(question)
        if not tab or not topics:
            raise DatasetError(f"{source}: expected 'question with [topic]<TAB>answer|answer', got {line[:120]!r}")
        extra = {"qtype": qtype_lines[number - 1].strip()} if qtype_lines else {}
        yield make_example(
            source=source,
            id=f"{path.parent.name}-{number - 1}",
            question=question.strip(),
            topic_entities=topics,
            answers=answers.split("|"),
            **extra,
        )


QTYPE_RELATIONS = {
    "director": "directed_by",
    "writer": "written_by",
    "actor": "starred_actors",
    "year": "release_year",
    "language": "in_language",
    "genre": "has_genre",
    "tags": "has_tags",
    "tag": "has_tags",
    "imdbvotes": "has_imdb_votes",
    "imdbrating": "has_imdb_rating",
}


def qtype_path(qtype: str) -> list[tuple[str, str]]:
    """The relation path of a MetaQA question type: `director_to_movie_to_language` ->
    [("directed_by", "in"), ("in_language", "out")] (movies point at their attributes)."""
    kinds = qtype.split("_to_")
    path = []
    for here, there in zip(kinds, kinds[1:]):
        if here == "movie" and there in QTYPE_RELATIONS:
            path.append((QTYPE_RELATIONS[there], "out"))
        elif there == "movie" and here in QTYPE_RELATIONS:
            path.append((QTYPE_RELATIONS[here], "in"))
        else:
            raise DatasetError(f"unknown MetaQA question type {qtype!r}")
    return path
