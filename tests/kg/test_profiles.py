"""KG profiles (`kg.profiles`): how each family of graphs names its relations."""

from __future__ import annotations

import pytest

from kgqa.kg import Direction, Node
from kgqa.kg.profiles import FREEBASE, GENERIC, METAQA, ROG, KGProfile, PrefixCodec
from kgqa.programs.render import fact, plain_path
from kgqa.programs.trails import Hop, Trail


@pytest.mark.parametrize("profile, relation, parts, phrase", [
    (FREEBASE, "people.person.place_of_birth", ("people", "person", "place_of_birth"), "person place of birth"),
    (ROG, "book.book_edition.ISBN", ("book", "book_edition", "ISBN"), "book edition ISBN"),
    (METAQA, "directed_by", ("directed_by",), "directed by"),
    (GENERIC, "http://dbpedia.org/ontology/birthPlace", ("birth_place",), "birth place"),
    (GENERIC, "http://xmlns.com/foaf/0.1/familyName", ("family_name",), "family name"),
    (GENERIC, "http://www.wikidata.org/prop/direct/P19", ("p19",), "p19"),
    (GENERIC, "http://example.org/schema#worksFor", ("works_for",), "works for"),
])
def test_each_profile_reads_its_relation_ids_as_words(profile, relation, parts, phrase):
    assert profile.relation_parts(relation) == parts
    assert profile.relation_phrase(relation) == phrase


def test_relation_words_keep_every_name_of_each_relation_through_nameless_nodes():
    assert FREEBASE.relation_words("film.film.starring -> film.performance.actor") == "film film starring -> film performance actor"
    assert GENERIC.relation_words("http://dbpedia.org/ontology/starring") == "starring"


def test_a_path_on_a_generic_graph_reads_as_words_not_as_iris():
    dbo = "http://dbpedia.org/ontology/"
    heat = Node("http://dbpedia.org/resource/Heat", name="Heat")
    trail = Trail(heat, (Hop(dbo + "director", Direction.OUT, Node("http://dbpedia.org/resource/Michael_Mann", name="Michael Mann")),
                         Hop(dbo + "birthPlace", Direction.OUT, Node("http://dbpedia.org/resource/Chicago", name="Chicago"))))
    assert plain_path(trail, phrase=GENERIC.relation_phrase) == "Heat -> director -> Michael Mann -> birth place -> Chicago"
    assert fact("Heat", dbo + "runtime", ["170"], phrase=GENERIC.relation_phrase) == "Heat | runtime | 170"


def test_an_unknown_naming_convention_is_a_clear_error():
    import re

    with pytest.raises(ValueError, match="relation_names is one of dotted, plain, iri"):
        KGProfile(name="x", entities=GENERIC.entities, relations=PrefixCodec("http://x/", re.compile(r"\w+")), relation_names="camel")
