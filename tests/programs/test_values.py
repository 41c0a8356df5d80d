"""Comparisons a value decides: what the question's words compare, and which answers hold."""

from __future__ import annotations

import pytest

from kgqa.kg.profiles import FREEBASE
from kgqa.programs.embedder import Embedder
from kgqa.programs.question import Comparison, read_comparison
from kgqa.programs.values import as_date, decide


@pytest.fixture(scope="module")
def similar():
    return Embedder().similarities


@pytest.mark.parametrize(("question", "op", "bound"), [
    ("Name movies Kim Richards acted in that released later than October 25, 2005.?", ">", (2005, 10, 25)),
    ("What President ended his governmental position prior to 18 January 1940?", "<", (1940, 1, 18)),
    ("Which magazines had Poe tenured as an editor after the month of February, 1841?", ">", (1841, 2)),
    ("Who was the Governor of Ohio that held his position from before 1-10-2011?", "<", (2011, 1, 10)),
    ("What film that was released before 2005-10-25 was Kim Richards in?", "<", (2005, 10, 25)),
    ("Which schools attended by President Kennedy were founded before 1890?", "<", (1890,)),
    ("What event with less than 30,000 casualties happened at Dunkirk?", "<", 30000.0),
    ("Which of China's trading partners has a country calling code greater than 967?", ">", 967.0),
    ("Which country has a GDP deflator change rate lower than 1.5?", "<", 1.5),
    ("Which wars involving France ended prior to February 28,1991?", "<", (1991, 2, 28)),
    ("In which French wars has the force size exceeded 16544?", ">", 16544.0),
    ("Which country that once had a CPI inflation rate of -1.61 speaks Portuguese?", "=", -1.61),
    ("What country had a GDP of 100349905926 and speaks Portuguese?", "=", 100349905926.0),
])
def test_a_bound_is_read_with_its_value(question, op, bound):
    comparison = read_comparison(question)
    assert (comparison.op, comparison.bound) == (op, bound)


@pytest.mark.parametrize(("question", "op", "words"), [
    ("Of President Kennedy's schools, which has the latest founding date?", "max", "founding date"),
    ("Which venue of the Chicago Cubs has the smallest capacity?", "min", "capacity"),
    ("What magazine did Poe work for that started publishing most recently?", "max", "started publishing"),
    ("Who fought in the Battle of Vicksburg and died the earliest?", "min", "died"),
    ("Which of Charlie Hunnam's films was released last?", "max", "released"),
    ("Which founder of New York University died first?", "min", "died"),
    ("Which tv program on which Tamera Mowry played has the most seasons?", "max", "seasons"),
])
def test_an_extreme_is_read_with_the_words_that_name_its_value(question, op, words):
    comparison = read_comparison(question)
    assert comparison.op == op and comparison.bound is None and words in comparison.words


@pytest.mark.parametrize(("question", "names"), [
    ("Who directed Parasite?", ()),
    ("Where was the director of [The Oldest Living Confederate Widow] born?", ("The Oldest Living Confederate Widow",)),
    ("Who starred in Fewer Than Zero?", ("Fewer Than Zero",)),
    ("What is the country over there?", ()),  # "over" with no value after it
    ("Who was the first President of the United States during WW2?", ()),  # an ordinal of a title, no value
    ("What is the most popular sport in Spain?", ()),
    ("In the film with a character named Winged Monkey #7, who played Dorothy?", ()),  # a name's number
    ("What TV series that had 3 episodes was Kim Richards in?", ()),  # a count
])
def test_no_comparison_where_none_is_made_or_the_words_are_a_name(question, names):
    assert read_comparison(question, names=names) is None


def test_graph_dates_read_at_their_precision():
    assert as_date("1936-09") == (1936, 9) and as_date("2006-09-01T00:00:00Z") == (2006, 9, 1) and as_date("1927") == (1927,)
    assert as_date("Harvard College") is None and as_date("1.26211727") is None


def test_an_extreme_keeps_the_answers_at_it_by_the_relation_the_words_name(similar):
    values = {
        "Edward Devotion School": [("organization.organization.date_founded", "1892"), ("education.education.end_date", "1927")],
        "Harvard College": [("organization.organization.date_founded", "1636"), ("education.education.end_date", "1940")],
        "Dexter School": [("organization.organization.date_founded", "1926")],
        "Choate": [],
    }
    latest = Comparison("max", "schools attended founding date", cue="latest")
    assert decide(latest, values, similar, profile=FREEBASE) == (["Dexter School"], "organization.organization.date_founded")
    earliest = Comparison("min", "schools attended founding date", cue="earliest")
    assert decide(earliest, values, similar, profile=FREEBASE) == (["Harvard College"], "organization.organization.date_founded")
    # a relation that shares no word with the comparison decides nothing, however many values it has
    assert decide(Comparison("max", "schools attended tuition", cue="highest"), values, similar, profile=FREEBASE) is None


def test_a_bound_keeps_the_answers_whose_value_meets_it_in_their_order(similar):
    values = {
        "Burton's Gentleman's Magazine": [("book.editorial_tenure.from", "1839"), ("book.editorial_tenure.to", "1840-06")],
        "Graham's Magazine": [("book.editorial_tenure.from", "1841-02"), ("book.editorial_tenure.to", "1842-04")],
        "Broadway Journal": [("book.editorial_tenure.from", "1845-01-04"), ("book.editorial_tenure.to", "1846")],
        "The Stylus": [],  # no value: not kept, as nothing says it meets the bound
    }
    after = read_comparison("Which magazines had Edgar Allen Poe tenured as an editor after the month of February, 1841?",
                            names=["Edgar Allen Poe"])
    # a date known to the month meets a bound of that month; which end of the term: "tenured ... after" is ambiguous,
    # and both ends of these terms are after it but Burton's
    kept, relation = decide(after, values, similar, profile=FREEBASE)
    assert kept == ["Graham's Magazine", "Broadway Journal"] and relation.startswith("book.editorial_tenure.")
    ended = read_comparison("Which magazine did Poe leave, his editorial tenure ending before 1841?", names=["Poe"])
    assert decide(ended, values, similar, profile=FREEBASE) == (["Burton's Gentleman's Magazine"], "book.editorial_tenure.to")


def test_a_number_bound_compares_numbers_not_dates(similar):
    values = {"Miami University": [("education.university.number_of_undergraduates", "15,000"),
                                   ("organization.organization.date_founded", "1809")],
              "Georgetown": [("education.university.number_of_undergraduates", "7,500")],
              "American University": [("education.university.number_of_undergraduates", "7037")]}
    fewer = read_comparison("What colleges with fewer than 15,208 undergraduates boast Paul Ryan as an alumnus?")
    kept, relation = decide(fewer, values, similar, profile=FREEBASE)
    assert kept == ["Miami University", "Georgetown", "American University"]
    assert relation == "education.university.number_of_undergraduates"
    fewest = Comparison("min", "colleges attended undergraduates", cue="fewest")
    assert decide(fewest, values, similar, profile=FREEBASE)[0] == ["American University"]


def test_words_match_a_relation_whatever_their_inflection(similar):
    values = {"Harrah's Laughlin": [("architecture.structure.opened", "1988-08-29")],
              "Edgewater Hotel and Casino": [("architecture.structure.opened", "1982")]}
    latest = read_comparison("What is the latest structure to open in Laughlin, Nevada?", names=["Laughlin, Nevada"])
    assert decide(latest, values, similar, profile=FREEBASE) == (["Harrah's Laughlin"], "architecture.structure.opened")


def test_a_start_or_an_end_named_picks_that_end_of_a_term(similar):
    values = {"Burton's Gentleman's Magazine": [("book.editorial_tenure.from", "1839"), ("book.editorial_tenure.to", "1840-06")],
              "Graham's Magazine": [("book.editorial_tenure.from", "1841-02"), ("book.editorial_tenure.to", "1842-04")],
              "Broadway Journal": [("book.editorial_tenure.from", "1845-01-04"), ("book.editorial_tenure.to", "1846")]}
    started = read_comparison("What magazine did Edgar Allen Poe work for that started publishing most recently?",
                              names=["Edgar Allan Poe"])
    # no word of the relation's own is in the question, but "started" names the start of the term
    assert decide(started, values, similar, profile=FREEBASE) == (["Broadway Journal"], "book.editorial_tenure.from")
    assert decide(Comparison("max", "Poe work publishing", cue="most recently"), values, similar, profile=FREEBASE) is None


def test_an_extreme_compares_two_values_at_least(similar):
    values = {"University of Wisconsin-Madison": [("organization.organization.date_founded", "1848")],
              "North Carolina State University": []}
    earliest = read_comparison("What is the earliest founded college that Russell Wilson attended?", names=["Russell Wilson"])
    assert decide(earliest, values, similar, profile=FREEBASE) is None  # one date is no comparison: the answers stay as extracted
    values["North Carolina State University"] = [("organization.organization.date_founded", "1887")]
    assert decide(earliest, values, similar, profile=FREEBASE) == (["University of Wisconsin-Madison"], "organization.organization.date_founded")


def test_an_identifier_is_compared_only_where_the_question_names_one(similar):
    values = {"The New School": [("education.school.nces_school_id", "360000000001")],
              "DeWitt Clinton High School": [("education.school.nces_school_id", "360008701940")]}
    largest = read_comparison("Which of the schools attended by James Baldwin has the largest number of post graduate students?",
                              names=["James Baldwin"])
    assert decide(largest, values, similar, profile=FREEBASE) is None  # "schools" is no reason to compare school ids
    films = {"Abandon": [("film.film.netflix_id", "60023647")], "Nicholas Nickleby": [("film.film.netflix_id", "60025060")]}
    smallest = read_comparison("What movie has Charlie Hunnam been in, and the netflix_id is smallest?", names=["Charlie Hunnam"])
    assert decide(smallest, films, similar, profile=FREEBASE) == (["Abandon"], "film.film.netflix_id")


def test_a_number_must_pass_a_bound_a_date_may_meet_it(similar):
    values = {"Barbados": [("location.country.iso_numeric", "052")], "Puerto Rico": [("location.country.iso_numeric", "630")]}
    above = read_comparison("Which countries in the Caribbean have ISO numbers above 052?", names=["Caribbean"])
    assert decide(above, values, similar, profile=FREEBASE) == (["Puerto Rico"], "location.country.iso_numeric")
    terms = {"Graham's Magazine": [("book.editorial_tenure.from", "1841-02")], "Burton's": [("book.editorial_tenure.from", "1839")]}
    after = read_comparison("Which magazines had Poe tenured as an editor after the month of February, 1841?", names=["Poe"])
    assert decide(after, terms, similar, profile=FREEBASE) == (["Graham's Magazine"], "book.editorial_tenure.from")
