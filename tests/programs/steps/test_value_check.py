"""The value check (`programs.steps.value_check`): the answers a compared value decides, no LLM call."""

from __future__ import annotations

from tests.programs.oracle import oracle
from tests.programs.walk import ask, metaqa_kg, statuses


def test_where_the_question_compares_a_value_the_answers_it_holds_for_answer(kg, ids):
    # extraction answers Titanic, which brings every film of its chain; the release dates decide
    lm = oracle(["film.film.directed_by (reverse)"], hops=1, extracted_answers=lambda i: {"extracted_answers": ["Titanic"]})
    earliest = ask(kg, lm, "Which film directed by James Cameron was released earliest?", [ids["James Cameron"]])
    assert earliest.answers == ["The Terminator"] and earliest.paths[0].endswith("# Answer:\nThe Terminator")
    assert statuses(earliest.trace)["value_check"] == ["ran"]
    (why,) = [s["why"] for s in earliest.trace.steps if s["step"] == "value_check"]
    assert why == "earliest by film.film.initial_release_date: 1 of 3 answers"
    after = ask(kg, lm, "Which films directed by James Cameron were released after 1990?", [ids["James Cameron"]])
    assert after.answers == ["Titanic", "Avatar"]
    # switched off, or nothing compared: the extracted answer first, then the other ends of its chain
    off = ask(kg, lm, "Which film directed by James Cameron was released earliest?", [ids["James Cameron"]], value_check=False)
    assert off.answers[0] == "Titanic" and len(off.answers) == 3
    assert statuses(off.trace)["value_check"] == ["skipped: switched off"]
    plain = ask(kg, lm, "Which films did James Cameron direct?", [ids["James Cameron"]])
    assert plain.answers[0] == "Titanic" and statuses(plain.trace)["value_check"] == ["skipped: the question compares no value"]


def test_answers_that_are_values_are_compared_by_the_entities_they_are_values_of(tmp_path):
    # extraction answers the countries' codes, which carry no number the question compares: the
    # countries the walk passed to reach them are compared by their ISO numbers, and answer
    kg = metaqa_kg(tmp_path, ("Caribbean", "contains", "Barbados"), ("Caribbean", "contains", "Puerto Rico"),
                    ("Caribbean", "contains", "Cuba"), ("Barbados", "iso_code", "BRB"), ("Puerto Rico", "iso_code", "PRI"),
                    ("Cuba", "iso_code", "CUB"), ("Barbados", "iso_numeric", "052"), ("Puerto Rico", "iso_numeric", "630"),
                    ("Cuba", "iso_numeric", "192"))
    lm = oracle(["contains", "iso_code"])
    smallest = ask(kg, lm, "Which country in the [Caribbean] has the smallest ISO number?")
    assert smallest.answers == ["Barbados"]
    (why,) = [s["why"] for s in smallest.trace.steps if s["step"] == "value_check"]
    assert why == "smallest by iso_numeric: 1 of 3 entities the answers are values of"
    above = ask(kg, lm, "Which countries in the [Caribbean] have ISO numbers above 100?")
    assert sorted(above.answers) == ["Cuba", "Puerto Rico"]
    off = ask(kg, lm, "Which country in the [Caribbean] has the smallest ISO number?", value_check=False)
    assert sorted(off.answers) == ["BRB", "CUB", "PRI"]


def test_a_value_on_the_nameless_node_a_trail_came_through_is_the_answer_s(kg):
    # Cuarón's two Best Director awards, each a CVT node with its year, honored for Gravity and Roma:
    # each film is compared by the year of his award for it, not by every award it got
    cuaron = kg.link(["Alfonso Cuarón"])["Alfonso Cuarón"][0]
    lm = oracle(["award.award_winner.awards_won -> award.award_honor.honored_for"], hops=1,
                extracted_answers=lambda i: {"extracted_answers": ["Roma"]})
    pred = ask(kg, lm, "For which film did Alfonso Cuarón win his earliest award?", [cuaron])
    assert pred.answers == ["Gravity"]
    (why,) = [s["why"] for s in pred.trace.steps if s["step"] == "value_check"]
    assert why == "earliest by award.award_honor.year: 1 of 2 answers"
