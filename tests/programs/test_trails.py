"""Trails (`programs.trails`): a path from a topic entity, hop by hop."""

from __future__ import annotations

from kgqa.kg import Direction, Node
from kgqa.kg.profiles import FREEBASE
from kgqa.programs.render import plain_path
from kgqa.programs.trails import Hop, Trail


def test_a_path_cut_back_ends_at_the_named_entity_before_its_end_and_never_at_the_topic():
    out, bribri = Direction.OUT, Node("m.bribri", name="Bribri")
    spoken = Hop("language.human_language.countries_spoken_in", out, Node("m.cr", name="Costa Rica"))
    currency = Hop("location.country.currency_used", out, Node("m.crc", name="Costa Rican colon"))
    cvt, actor = Hop("film.film.starring", out, Node("m.0x")), Hop("film.performance.actor", out, Node("m.tl", name="Taylor"))
    assert plain_path(Trail(bribri, (spoken, currency)).cut_back(), phrase=FREEBASE.relation_phrase) == "Bribri -> human language countries spoken in -> Costa Rica"
    assert plain_path(Trail(bribri, (spoken, cvt, actor)).cut_back(), phrase=FREEBASE.relation_phrase) == "Bribri -> human language countries spoken in -> Costa Rica"
    assert Trail(bribri, (cvt, actor)).cut_back() is None  # through a nameless node only: nothing before the end but the topic
    assert Trail(bribri, (spoken,)).cut_back() is None
