"""Gold paths from answers alone: given paths checked in the graph, the rest found there."""

from __future__ import annotations

import dspy
import pytest

from kgqa.data.rog import graph_triples
from kgqa.kg import EmbeddedStore, KnowledgeGraph
from kgqa.kg.paths import chains_from
from kgqa.optimizers.paths import find_paths, label_paths, label_trainset

HURT_LOCKER = [
    ("The Hurt Locker", "film.film.directed_by", "Kathryn Bigelow"),
    ("The Hurt Locker", "film.film.starring", "m.0cvt1"),  # a nameless performance node
    ("m.0cvt1", "film.performance.actor", "Jeremy Renner"),
    ("Jeremy Renner", "people.person.spouse_s", "Kathryn Bigelow"),  # a longer way to the answer
    ("The Hurt Locker", "common.topic.notable_types", "Kathryn Bigelow"),  # hidden by the profile
]


def rog_kg(triples) -> KnowledgeGraph:
    store = EmbeddedStore()
    store.add_triples(graph_triples(triples))
    return KnowledgeGraph(store, profile="rog")


def row(*, answers=("Kathryn Bigelow",), topics=("The Hurt Locker",), **fields) -> dspy.Example:
    return dspy.Example(question="Who directed The Hurt Locker?", topic_entities=list(topics), answers=list(answers), **fields)


def test_the_shortest_chain_to_the_answer_is_found_with_its_direction_and_hidden_relations_left_out():
    kg = rog_kg(HURT_LOCKER)
    through_spouse = (("film.film.starring", "out"), ("film.performance.actor", "out"), ("people.person.spouse_s", "out"))
    # the longer chain reaches exactly the answer too: it ties, after the shorter
    assert find_paths(kg, ["The Hurt Locker"], ["Kathryn Bigelow"]) == ((("film.film.directed_by", "out"),), through_spouse)
    assert label_paths(row(), kg).tied == 2
    kg = rog_kg(HURT_LOCKER[:1] + HURT_LOCKER[4:])
    assert find_paths(kg, ["The Hurt Locker"], ["Kathryn Bigelow"]) == ((("film.film.directed_by", "out"),),)
    assert find_paths(kg, ["Kathryn Bigelow"], ["The Hurt Locker"]) == ((("film.film.directed_by", "in"),),)
    assert find_paths(kg, ["The Hurt Locker"], ["kathryn  BIGELOW"]) == ((("film.film.directed_by", "out"),),)  # normalized


def test_a_chain_through_a_nameless_node_counts_its_relations_and_never_ends_there():
    kg = rog_kg(HURT_LOCKER[1:4])
    through = (("film.film.starring", "out"), ("film.performance.actor", "out"), ("people.person.spouse_s", "out"))
    assert find_paths(kg, ["The Hurt Locker"], ["Kathryn Bigelow"]) == (through,)
    assert find_paths(kg, ["The Hurt Locker"], ["Kathryn Bigelow"], longest=2) == ()
    assert find_paths(kg, ["The Hurt Locker"], ["m.0cvt1"]) == ()  # a CVT node is never an answer


def test_the_chain_that_reaches_the_answers_and_little_else_beats_a_shorter_one_that_reaches_one():
    films = [(f"Film {n}", "film.film.directed_by", "Slade") for n in range(3)]
    cast = [(f"Film {n}", "film.film.starring", f"Actor {n}") for n in range(3)]
    other = [("Slade", "people.person.nationality", "Actor 0"), ("Slade", "people.person.nationality", "Elsewhere")]
    kg = rog_kg(films + cast + other)
    answers = ["Actor 0", "Actor 1", "Actor 2"]
    # one relation reaches one actor of three (and a place): two relations reach all three and nothing else
    assert find_paths(kg, ["Slade"], answers)[0] == (("film.film.directed_by", "in"), ("film.film.starring", "out"))


def test_given_paths_are_used_where_they_hold_and_found_paths_where_they_do_not():
    kg = rog_kg(HURT_LOCKER)
    holding = label_paths(row(ground_paths=[["film.film.directed_by"]]), kg)
    assert holding.source == "given" and holding.paths == ((("film.film.directed_by", "out"),),)
    # RoG's Freebase-wide ground paths that this graph lacks are checked, then replaced by what it has
    broken = label_paths(row(ground_paths=[["film.director.film"], ["people.person.nationality", "film.film.country"]]), kg)
    assert broken.source == "found" and broken.paths[0] == (("film.film.directed_by", "out"),)
    assert label_paths(row(), kg).source == "found"  # no paths given: answers alone
    assert label_paths(row(topics=("Not In The Graph",)), kg).source == "none"
    assert label_paths(row(answers=("Nobody Here",)), kg).source == "none"
    unchecked = label_paths(row(ground_paths=[["film.film.directed_by"]]), None)  # no graph: as given, either way
    assert unchecked.source == "given" and unchecked.paths == ((("film.film.directed_by", None),),)


def test_labeling_a_trainset_counts_its_sources_and_compiles_from_the_labels():
    from kgqa.evaluate.metrics import gold_paths

    kg = rog_kg(HURT_LOCKER)
    rows = [row(ground_paths=[["film.film.directed_by"]]), row(), row(answers=("Nobody Here",))]
    labeled, counts = label_trainset(rows, kg)
    assert counts == {"given": 1, "found": 1, "none": 1}
    assert [ex.path_source for ex in labeled] == ["given", "found", "none"]
    assert gold_paths(labeled[1])[0] == [("film.film.directed_by", "out")] and gold_paths(labeled[2]) == []
    assert not hasattr(rows[1], "teacher_paths") or rows[1].get("teacher_paths") is None  # the rows given are left as they were


def test_the_chain_prior_learns_only_the_found_chains_that_fit_best_and_every_given_one():
    from kgqa.optimizers.paths import best_relation_paths

    # the film's subjects name its director and more: a chain of the first path's length that fits less well
    kg = rog_kg([*HURT_LOCKER[:1], ("The Hurt Locker", "film.film.subjects", "Kathryn Bigelow"),
                 ("The Hurt Locker", "film.film.subjects", "Iraq War")])
    given = row(ground_paths=[["film.film.directed_by"], ["film.film.subjects"]])
    labeled, _ = label_trainset([row(), given], kg)
    found, kept = labeled
    assert [p[0][0] for p in found.teacher_paths] == ["film.film.directed_by", "film.film.subjects"]  # both taught
    assert found.best_paths == 1 and best_relation_paths(found) == [["film.film.directed_by"]]
    assert kept.best_paths == 2 and best_relation_paths(kept) == [["film.film.directed_by"], ["film.film.subjects"]]
    assert best_relation_paths(row(ground_paths=[["film.film.directed_by"]])) == [["film.film.directed_by"]]  # unlabeled: all


def test_chains_that_fit_equally_go_in_the_order_the_questions_worded_alike_share():
    from kgqa.programs.embedder import Embedder

    films = {"Rope": ("Hitchcock", "Hitchcock"), "Alien": ("Scott", "O'Bannon"), "Heat": ("Mann", "Mann Jr"),
             "Jaws": ("Spielberg", "Benchley"), "Fargo": ("Coen", "Coen Brothers")}
    kg = rog_kg([(film, relation, person) for film, (director, writer) in films.items()
                 for relation, person in (("film.film.directed_by", director), ("film.film.written_by", writer))])
    rows = [dspy.Example(question=f"Who wrote the screenplay of {film}?", topic_entities=[film], answers=[writer])
            for film, (_, writer) in films.items()]
    rows.append(dspy.Example(question="Who was the director of Heat?", topic_entities=["Heat"], answers=["Mann"]))
    by_name, _ = label_trainset(rows, kg)
    voted, _ = label_trainset(rows, kg, encode=Embedder().encode)
    # Rope's writer directed it: both relations reach exactly the answer, and by name the director's goes first
    assert label_paths(rows[0], kg).tied == 2
    assert by_name[0].teacher_paths[0] == [["film.film.directed_by", "out"]]
    # the questions worded like it were answered by the writer's relation alone: theirs goes first
    assert voted[0].teacher_paths == [[["film.film.written_by", "out"]], [["film.film.directed_by", "out"]]]
    assert [ex.teacher_paths for ex in voted[1:]] == [ex.teacher_paths for ex in by_name[1:]]  # no tie, no change


def test_a_shorter_chain_that_fits_one_question_by_chance_gives_way_to_the_longer_one_its_neighbours_need(tmp_path):
    from kgqa.data.metaqa import kb_triples
    from kgqa.programs.embedder import Embedder

    # "which other films did the director of X make": Alien's director made Alien and its sequel only,
    # so the sequel relation alone reaches exactly the answer; the other directors made more
    filmographies = {"Alien": ["Aliens"], "Heat": ["Thief", "Collateral"], "Jaws": ["Duel", "Hook"],
                     "Fargo": ["Blood Simple", "Miller's Crossing"], "Rope": ["Vertigo", "Psycho"]}
    lines = [f"{film}|directed_by|Director of {first}" for first, others in filmographies.items() for film in (first, *others)]
    (tmp_path / "kb.txt").write_text("\n".join([*lines, "Alien|sequel|Aliens", "Heat|sequel|Heat 2"]) + "\n")
    store = EmbeddedStore()
    store.add_triples(kb_triples(tmp_path / "kb.txt"))
    kg = KnowledgeGraph(store, profile="metaqa")  # relations walked back, as MetaQA's questions go
    rows = [dspy.Example(question=f"Which other films did the director of {first} make?", topic_entities=[first],
                         topic_names=[first], answers=others) for first, others in filmographies.items()]
    by_length, _ = label_trainset(rows, kg)
    voted, _ = label_trainset(rows, kg, encode=Embedder().encode)
    director = [["directed_by", "out"], ["directed_by", "in"]]
    # three chains reach exactly Aliens (the sequel, the director's films, and the sequel's director's
    # films): shorter first, but the questions worded alike were answered by the director's films;
    # what is taught is the first and the others of its length
    assert label_paths(rows[0], kg).tied == 3 and by_length[0].teacher_paths == [[["sequel", "out"]]]
    assert voted[0].teacher_paths == [director]
    assert all(ex.teacher_paths[0] == director for ex in voted[1:])


@pytest.mark.parametrize("longest", [1, 2, 3])
def test_the_search_reads_the_graph_one_query_per_frontier(longest):
    kg = rog_kg(HURT_LOCKER).scoped()
    lengths = list(chains_from(kg, ["The Hurt Locker"], longest=longest))
    assert len(lengths) <= longest
    # one follow a length, and the topics' relations first: a query, or lookups in the index beside the store
    assert kg.stats.queries == len(lengths) + (kg.stats.lookups == 0) and kg.stats.lookups <= len(lengths)


def test_the_demo_questions_paths_are_found_again_from_their_answers(embedded_demo_kg, demo_train):
    found = {ex.question: label_paths(ex.copy(path=None), embedded_demo_kg) for ex in demo_train}
    assert all(label.source == "found" for label in found.values())
    same = [ex for ex in demo_train if tuple(map(tuple, ex.path)) in found[ex.question].paths]
    assert len(same) >= 0.8 * len(demo_train)
    # the others go by a shorter chain to the same answers ("the country where Cameron was born" by his nationality)
    assert all(len(found[ex.question].paths[0]) <= len(ex.path) for ex in demo_train)
