"""Trails (`programs.trails`): a path from a topic entity, hop by hop."""

from __future__ import annotations

from kgqa.kg import Direction, Node
from kgqa.kg.profiles import FREEBASE, METAQA, ROG
from kgqa.programs.render import plain_path
from kgqa.programs.trails import Hop, Trail


def test_a_path_cut_back_ends_at_the_named_entity_before_its_end_and_never_at_the_topic():
    out, bribri = Direction.OUT, Node("m.bribri", name="Bribri")
    spoken = Hop("language.human_language.countries_spoken_in", out, Node("m.cr", name="Costa Rica"))
    currency = Hop("location.country.currency_used", out, Node("m.crc", name="Costa Rican colon"))
    cvt, actor = Hop("film.film.starring", out, Node("m.0x")), Hop("film.performance.actor", out, Node("m.tl", name="Taylor"))
    assert plain_path(Trail(bribri, (spoken, currency)).cut_back(), phrase=FREEBASE.hop_phrase) == "Bribri -> human language countries spoken in -> Costa Rica"
    assert plain_path(Trail(bribri, (spoken, cvt, actor)).cut_back(), phrase=FREEBASE.hop_phrase) == "Bribri -> human language countries spoken in -> Costa Rica"
    assert Trail(bribri, (cvt, actor)).cut_back() is None  # through a nameless node only: nothing before the end but the topic
    assert Trail(bribri, (spoken,)).cut_back() is None


def test_a_path_marks_a_relation_walked_back_where_the_graph_keeps_no_inverse_relations():
    weatherman, film = Node("weatherman", name="weatherman"), Node("Groundhog Day", name="Groundhog Day")
    about = Trail(weatherman, (Hop("has_tags", Direction.IN, film),))
    genre = about.extend((Hop("has_genre", Direction.OUT, Node("Comedy", name="Comedy")),), 1.0)
    # MetaQA keeps one way of each fact: has_tags walked back reaches films, not tags
    assert plain_path(about, phrase=METAQA.hop_phrase) == "weatherman -> has tags (reverse) -> Groundhog Day"
    assert plain_path(genre, phrase=METAQA.hop_phrase) == "weatherman -> has tags (reverse) -> Groundhog Day -> has genre -> Comedy"
    # Freebase names each way (film.film.directed_by, film.director.film): its paths carry no mark
    directed = Trail(Node("m.jc", name="James Cameron"), (Hop("film.film.directed_by", Direction.IN, Node("m.av", name="Avatar")),))
    assert plain_path(directed, phrase=FREEBASE.hop_phrase) == plain_path(directed, phrase=ROG.hop_phrase) == "James Cameron -> film directed by -> Avatar"
