"""The chain prior bench: the prior fitted as compiling fits it, asked about other questions."""

from __future__ import annotations

import re

import dspy

from bench.accuracy import Bench
from bench.chain_prior import answering, measure, table
from kgqa.data.rog import graph_triples
from kgqa.kg import EmbeddedStore, KnowledgeGraph
from kgqa.programs.embedder import Embedder

FILMS = {"Heat": ("Michael Mann", "Al Pacino"), "Alien": ("Ridley Scott", "Sigourney Weaver"),
         "Jaws": ("Steven Spielberg", "Roy Scheider"), "Up": ("Pete Docter", "Ed Asner")}


def graph() -> KnowledgeGraph:
    triples = [t for film, (director, star) in FILMS.items()
               for t in ((film, "film.film.directed_by", director), (film, "film.film.starring", star))]
    store = EmbeddedStore()
    store.add_triples(graph_triples(triples))
    return KnowledgeGraph(store, profile="rog")


def asked(film: str, what: str, **fields) -> dspy.Example:
    director, star = FILMS[film]
    question = f"Who directed {film}?" if what == "director" else f"Who starred in {film}?"
    return dspy.Example(id=f"{film}-{what}", question=question, topic_entities=[film],
                        answers=[director if what == "director" else star], **fields)


def test_a_prior_keyed_by_shape_votes_for_the_chain_questions_asked_alike_went_by():
    kg = graph()
    # the given paths of one question name a relation this graph lacks: it is labeled from its answers
    train = [asked("Heat", "director", ground_paths=[["film.director.film"]]), asked("Alien", "director"),
             asked("Jaws", "star"), asked("Up", "star")]
    scored = [asked("Heat", "star"), asked("Up", "director")]
    assert answering(scored, kg) == [{("film.film.starring",)}, {("film.film.directed_by",)}]
    bench = Bench("films", kg, {"dev": scored}, train)
    scores = measure(bench, scored, Embedder().encode)
    assert len(scores) == 6 and {(labels, key) for labels in ("given", "found") for key in ("question", "shape")} <= set(scores)
    for (labels, key), score in scores.items():
        assert score.labeled == 4 and score.voted == 1.0
        if key == "shape":  # "Who starred in X?" is asked as two training questions were: by starring
            assert score.first == 1.0, (labels, score)
        if key.startswith("chosen"):  # as compiling fits it: by one of the two keys, and a temperature
            chosen, temperature = re.fullmatch(r"chosen \((\w+), temperature (\S+)\)", key).groups()
            assert chosen in ("question", "shape") and temperature in ("None", "0.05", "0.02", "0.01")
            if chosen == "shape":  # weighed sharper or not, the questions of its shape decide
                assert score.first == 1.0, (labels, score)
    assert "| films (2 scored) | found | shape | 4 | 1.000 |" in table({"films": scores}, {"films": 2})
