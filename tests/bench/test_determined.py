"""How far the graph decides each answer: the best query of the walk's shape, and the shares over questions."""

from __future__ import annotations

from bench.determined import Determined, determined, summary, table
from kgqa.data.rog import graph_triples
from kgqa.kg import EmbeddedStore, KnowledgeGraph

FACTS = [("Heat", "film.film.directed_by", "Michael Mann"), ("Ali", "film.film.directed_by", "Michael Mann"),
         ("Heat", "film.film.starring", "Al Pacino"), ("Heat", "film.film.starring", "Robert De Niro"),
         ("The Insider", "film.film.starring", "Al Pacino"), ("The Insider", "film.film.directed_by", "Michael Mann"),
         ("Serpico", "film.film.starring", "Al Pacino"), ("Serpico", "film.film.directed_by", "Sidney Lumet")]


def graph() -> KnowledgeGraph:
    store = EmbeddedStore()
    store.add_triples(graph_triples(FACTS))
    return KnowledgeGraph(store, profile="rog")


def test_one_chain_whose_ends_are_all_gold_determines_the_answer():
    kg = graph()
    assert determined(kg, ["Serpico"], ["Sidney Lumet"]) == Determined(1.0, 1, False)
    # every chain from Heat to a star ends at both stars: an oracle picks the right one half the time
    assert determined(kg, ["Heat"], ["robert de niro"]) == Determined(0.5, 1, False)


def test_two_topic_entities_decide_together_what_neither_decides_alone():
    kg = graph()
    # Al Pacino's films (3) and Michael Mann's (3) share two; with Sidney Lumet's one is left
    assert determined(kg, ["Al Pacino"], ["Serpico"]).precision == 1 / 3
    found = determined(kg, ["Al Pacino", "Sidney Lumet"], ["Serpico"])
    assert found.precision == 1.0 and found.relations == 1 and not found.shared  # Lumet's one film says it alone
    found = determined(kg, ["Al Pacino", "Michael Mann"], ["The Insider"])
    assert found == Determined(0.5, 2, True)


def test_a_question_no_query_answers_counts_as_undetermined():
    kg = graph()
    assert determined(kg, ["Heat"], ["Sigourney Weaver"]) == Determined(0.0)
    assert determined(kg, ["Nowhere Film"], ["Michael Mann"]) == Determined(0.0)  # not in the graph
    rows = [("conjunction", Determined(1.0, 1)), ("conjunction", Determined(0.5, 2, True)), ("composition", Determined(0.0))]
    shares = summary(rows)
    assert shares["all"] == {"questions": 3, "determined": 1 / 3, "partly": 1 / 3, "none": 1 / 3, "oracle_hits1": 0.5,
                             "shared_ends": 1 / 3}
    assert shares["by_kind"]["conjunction"]["oracle_hits1"] == 0.75 and shares["by_relations"][0]["none"] == 1.0
    assert "| cwq | 3 | all | 0.333 | 0.333 | 0.333 | 0.500 | 0.333 |" in table({"cwq": shares})
