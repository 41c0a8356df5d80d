"""The labeled shares per dataset, beside what any labeler of chains could reach in each row's graph."""

from __future__ import annotations

import dspy

from bench.accuracy import Bench, union_graph
from bench.path_labels import rows
from kgqa.programs.embedder import Embedder

RELIGION, PROFESSION = "people.person.religion", "people.person.profession"
ROWS = [
    # the given path holds
    dict(question="who directed heat", topic_entities=["Heat"], answers=["Michael Mann"],
         graph=[["Heat", "film.film.directed_by", "Michael Mann"]], ground_paths=[["film.film.directed_by"]]),
    # the given path does not hold: found from the answers
    dict(question="where was michael mann born", topic_entities=["Michael Mann"], answers=["Chicago"],
         graph=[["Michael Mann", "people.person.place_of_birth", "Chicago"]], ground_paths=[["people.person.nationality"]]),
    # the answer is 3 edges away, but only by walking a relation straight back to another person: no chain teaches it
    dict(question="what was vivaldi known for", topic_entities=["Antonio Vivaldi"], answers=["Priest"],
         graph=[["Antonio Vivaldi", RELIGION, "Catholicism"], ["Pietro", RELIGION, "Catholicism"], ["Pietro", PROFESSION, "Priest"]],
         ground_paths=[]),
    # the answer is nowhere in the row's graph
    dict(question="who produced heat", topic_entities=["Heat"], answers=["Art Linson"],
         graph=[["Heat", "film.film.directed_by", "Michael Mann"]], ground_paths=[]),
    # the answer is the topic entity itself (answerable@3 counts it): no chain ends there
    dict(question="which country sings die stem", topic_entities=["South Africa"], answers=["South Africa"],
         graph=[["South Africa", "location.country.national_anthem", "Die Stem"]], ground_paths=[]),
]


def bench() -> Bench:
    train = [dspy.Example(id=f"q{i}", **row).with_inputs("question") for i, row in enumerate(ROWS)]
    return Bench("cwq-mini", union_graph(train), {}, train)


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_labeled_shares_stand_beside_the_share_a_gold_answer_is_reachable_in_its_row_s_graph():
    kept, removed = map(cells, rows(bench(), Embedder().encode))
    # dataset, given paths, questions, labeled, reachable, by given, by found, none
    assert kept[:8] == ["cwq-mini", "kept", "5", "0.400", "0.600", "0.200", "0.200", "0.600"]
    assert removed[:8] == ["cwq-mini", "removed (ground_paths)", "5", "0.400", "0.600", "0.000", "0.400", "0.600"]
    assert removed[10] == "1 / 1 of 1"  # the given path that holds is the one found first
