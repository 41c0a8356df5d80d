"""The chain prior's labels bench: a prior labeled with chains the graph does not hold votes for nothing."""

from __future__ import annotations

import dspy

from bench.chain_prior import LABELINGS, holding_ground_paths, reached, score
from kgqa.programs.chains import ChainPrior
from kgqa.programs.embedder import Embedder

FILMS = {"Heat": "Michael Mann", "Alien": "Ridley Scott", "Jaws": "Steven Spielberg", "Up": "Pete Docter"}


def row(film: str) -> dspy.Example:
    director = FILMS[film]
    return dspy.Example(
        question=f"Who directed the film {film}?", topic_entities=[film], answers=[director],
        ground_paths=[["film.director.film"]],  # Freebase's other name of the relation: not in this graph
        graph=[[film, "film.film.directed_by", director], [film, "film.film.starring", f"Star of {film}"],
               [film, "common.topic.notable_types", "Film"]],
    )


def test_a_prior_labeled_by_the_chains_the_graph_holds_ranks_the_answering_chain_first():
    train, scored = [row(f) for f in ("Heat", "Alien", "Jaws")], [row("Up")]
    offered = [reached(ex) for ex in scored]
    assert set(offered[0]) >= {("film.film.directed_by",), ("film.film.starring",)}
    assert ("common.topic.notable_types",) not in offered[0]  # hidden by the profile
    assert holding_ground_paths(train[0]) == []
    encode = Embedder().encode
    scores = {name: score(ChainPrior.fit((ex.question, label(ex)) for ex in train), scored, offered, encode)
              for name, label in LABELINGS.items()}
    ground, holding, walked = scores.values()
    assert (ground.labeled, ground.first, ground.voted) == (3, 0.0, 0.0)  # it votes for a chain nobody can walk
    assert holding.labeled == 0
    assert (walked.labeled, walked.first, walked.first3, walked.voted) == (3, 1.0, 1.0, 1.0)
