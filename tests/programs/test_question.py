"""programs.question: what the walk reads in a question's words, read once."""

from __future__ import annotations

import pytest

from kgqa.programs.question import (
    Question,
    end_at_answer,
    hop_relation,
    question_shape,
    standalone_years,
    start_after_topic,
)


def test_a_question_is_read_once_with_its_topic_names_masked():
    asked = Question("Which film directed by James Cameron was released earliest?", ("James Cameron",))
    assert asked.comparison is not None and asked.comparison.op == "min" and asked.comparison.cue == "earliest"
    assert asked.names_values and question_shape(asked.text, asked.topics) == "Which film directed by X was released earliest?"
    named = Question("Who directed [The Oldest Living Confederate Widow Tells All]?",
                     ("The Oldest Living Confederate Widow Tells All",))
    assert named.comparison is None and not named.names_values  # the words of a name set no comparison
    assert question_shape(named.text, named.topics) == "Who directed [X]?"
    bounded = Question("Which films did Ron Howard direct after 1990?", ("Ron Howard",))
    assert bounded.comparison.op == ">" and bounded.comparison.bound == (1990,) and bounded.names_values


def test_a_year_on_its_own_is_not_part_of_a_date_or_a_bound():
    words = "who won the 2010 world series prior to 2013 on june 5 2014".split()
    assert standalone_years(words) == {3: "2010"}


@pytest.mark.parametrize("target,words", [("movie (written by)", "written by"), ("capital", "capital"), ("actor ()", "actor ()")])
def test_a_plan_s_hop_names_its_relation_in_parentheses(target, words):

    assert hop_relation(target) == words


@pytest.mark.parametrize("kind,targets,walked", [
    ("actor", ["actor", "movie"], ["actor"]),  # a hop after the answer: the plan ends at the answer
    ("movie", ["director", "movie"], ["director", "movie"]),  # the answer is the last hop: kept
    ("year", ["director", "movie"], ["director", "movie"]),  # no hop reaches the answer kind: kept
    ("Actors", ["actor", "movie", "actor", "genre"], ["actor", "movie", "actor"]),  # the last hop of that kind
])
def test_a_plan_ends_at_the_hop_that_reaches_the_answer_kind(kind, targets, walked):

    assert end_at_answer(targets, kind) == walked


@pytest.mark.parametrize("kind,targets,walked", [
    ("writer", ["writer", "movie", "director"], ["movie", "director"]),  # the topic counted as a hop
    ("movie", ["director", "movie", "genre"], ["director", "movie", "genre"]),  # the topic's kind later on: kept
    ("movie", ["movie"], ["movie"]),  # never an empty plan
])
def test_a_plan_starts_after_the_topic(kind, targets, walked):

    assert start_after_topic(targets, kind) == walked


@pytest.mark.parametrize("question,topics,shape", [
    ("what films did [Ridley Scott] direct", ["Ridley Scott"], "what films did [X] direct"),
    ("Who directed titanic?", ["Titanic"], "Who directed X?"),
    ("where was the director of [Heat] born", [], "where was the director of [X] born"),
    ("What did Jo and Jo Jo record?", ["Jo", "Jo Jo"], "What did X and X record?"),  # the longer name first
    ("Where did Al Albertson live?", ["Al"], "Where did X Albertson live?"),  # whole words only
])
def test_a_question_s_shape_blanks_its_topic_entities(question, topics, shape):

    assert question_shape(question, topics) == shape
