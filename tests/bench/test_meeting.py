"""The meeting bench: the nearest meeting of a conjunction's topic entities, against the farther ones."""

from __future__ import annotations

import dspy

from bench.meeting import meetings, score


def row(answer: str, *triples: tuple[str, str, str], topics=("David Slade", "Taylor Lautner")) -> dspy.Example:
    return dspy.Example(question="What David Slade film starred Taylor Lautner?", topic_entities=list(topics), answers=[answer],
                        graph=[list(t) for t in triples])


FILMS = (("David Slade", "film.director.film", "Eclipse"), ("Taylor Lautner", "film.actor.film", "Eclipse"),
         ("Taylor Lautner", "film.actor.film", "Breaking Dawn"), ("Eclipse", "film.film.sequel", "Breaking Dawn"),
         ("Taylor Lautner", "film.actor.film", "Valentine's Day"), ("Eclipse", "common.topic.notable_types", "Film"),
         ("Breaking Dawn", "common.topic.notable_types", "Film"))


def test_meetings_sum_each_topic_entitys_hops_and_leave_hidden_relations_out():
    assert meetings(row("Eclipse", *FILMS)) == {"Eclipse": 2, "Breaking Dawn": 3, "Valentine's Day": 4}  # "Film" is hidden
    assert meetings(row("Eclipse", *FILMS, topics=("David Slade",))) is None


def test_the_nearest_meeting_is_scored_against_all_of_them():
    far = row("Breaking Dawn", *FILMS)
    apart = row("Eclipse", ("David Slade", "film.director.film", "Hard Candy"), ("Taylor Lautner", "film.actor.film", "Eclipse"))
    s = score([row("Eclipse", *FILMS), far, apart])
    assert (s.questions, s.met, s.gold_met, s.one_nearest) == (3, 2, 2, 2)
    assert s.meetings == 3.0 and abs(s.pick_any - 1 / 3) < 1e-9
    assert (s.nearest_holds_gold, s.pick_nearest, s.one_nearest_gold) == (0.5, 0.5, 0.5)
