"""KG profiles: the schema conventions of one family of graphs.

A profile turns the ids a user, a dataset or an LLM speaks of (`m.0abc`, `Joel Zwick`,
`film.film.directed_by`) into IRIs and back, refuses ids that do not belong to it, and
says which predicates hold names and which relations are noise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

from kgqa.kg.errors import InvalidTermError
from kgqa.kg.terms import check_iri, check_text

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SKOS_PREF_LABEL = "http://www.w3.org/2004/02/skos/core#prefLabel"
FREEBASE_NS = "http://rdf.freebase.com/ns/"
KGQA_NS = "http://kgqa.local/"
MEMO_SIZE = 1 << 18


@dataclass(frozen=True)
class PrefixCodec:
    """Ids are the local part of IRIs under one namespace and must match `pattern`."""

    namespace: str
    pattern: re.Pattern[str]

    def to_iri(self, local: str, *, what: str) -> str:
        check_text(local, what=what)
        if not self.pattern.fullmatch(local):
            raise InvalidTermError(f"{what} {local[:120]!r} is not of the form {self.pattern.pattern}")
        return self.namespace + local

    def from_iri(self, iri: str) -> str | None:
        if not iri.startswith(self.namespace):
            return None
        local = iri[len(self.namespace) :]
        return local if self.pattern.fullmatch(local) else None


@dataclass(frozen=True)
class MintedCodec:
    """Ids are names; IRIs are minted by percent-encoding them under a namespace."""

    namespace: str

    def to_iri(self, local: str, *, what: str) -> str:
        check_text(local, what=what)
        return self.namespace + quote(local, safe="")

    def from_iri(self, iri: str) -> str | None:
        if not iri.startswith(self.namespace):
            return None
        return unquote(iri[len(self.namespace) :]) or None


@dataclass(frozen=True)
class IriCodec:
    """Ids are the IRIs themselves (generic RDF)."""

    def to_iri(self, local: str, *, what: str) -> str:
        return check_iri(local, what=what)

    def from_iri(self, iri: str) -> str | None:
        return iri


Codec = PrefixCodec | MintedCodec | IriCodec


@dataclass(frozen=True)
class KGProfile:
    """Schema conventions of a graph family; see `PROFILES` for the shipped ones."""

    name: str
    entities: Codec
    relations: Codec
    name_predicates: tuple[str, ...] = (RDFS_LABEL,)
    name_lang: str | None = "en"
    # Other names of an entity, used to find it from a question (not to display it).
    alias_predicates: tuple[str, ...] = ()
    # Relations never offered to a walk: IRI prefixes of the relation ids, and substrings.
    skip_relation_prefixes: tuple[str, ...] = ()
    skip_relation_substrings: tuple[str, ...] = ()
    # Entities without a name that a walk steps through to reach named ones (Freebase CVTs).
    step_through_unnamed: bool = False
    # Walking the arrival relation back is not offered (PoG's pre-relations). Right where relations
    # come in inverse pairs (Freebase: film.film.directed_by / film.director.film); wrong for MetaQA,
    # whose paths walk relations back (movie_to_actor_to_movie: 34% of 2-hop, all 3-hop questions).
    drops_pre_relations: bool = False
    # An entity's id is its name (MetaQA mints ids from names, and labels them with the same
    # string): what a walk reaches is named from its id, with no label lookup in the query.
    names_are_ids: bool = False
    # Where a graph says which relations are inverses of one another (the same facts stored either
    # way round): "schema" (`reverse_property` links them, Freebase's type.property.reverse_property),
    # "mirrored" (the pairs that state many of the same facts both ways, read from the data: RoG
    # graphs keep film.film.starring in one question's graph and film.performance.film in the
    # next), or "none".
    inverses: str = "none"
    reverse_property: str = ""
    known_relations: tuple[str, ...] = field(default=())
    # How a relation id reads as words (`relation_parts`): "dotted" (Freebase's domain.type.property,
    # each dotted part a name), "plain" (the id is one name: MetaQA's directed_by), "iri" (the IRI's
    # local name, its camelCase split: .../ontology/birthPlace is birth_place).
    relation_names: str = "plain"
    # Conversions are pure and hot (every id of every frontier, every IRI of every result), so
    # each profile remembers the last ones it made. Refusals (InvalidTermError) are not remembered.
    _memo: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        if self.relation_names not in RELATION_NAMES:
            raise ValueError(f"relation_names is one of {', '.join(RELATION_NAMES)}, not {self.relation_names!r}")

    def _remembered(self, table: str, key: str, make):
        memo = self._memo.setdefault(table, {})
        try:
            return memo[key]
        except KeyError:
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            value = memo[key] = make(key)
            return value

    def entity_iri(self, entity_id: str) -> str:
        return self._remembered("entity_iri", entity_id, lambda e: self.entities.to_iri(e, what="entity id"))

    def relation_iri(self, relation: str) -> str:
        return self._remembered("relation_iri", relation, lambda r: self.relations.to_iri(r, what="relation"))

    def entity_id(self, iri: str) -> str | None:
        """The profile id of an IRI, or None when the IRI is not an entity of this profile."""
        return self._remembered("entity_id", iri, self.entities.from_iri)

    def relation_id(self, iri: str) -> str | None:
        return self._remembered("relation_id", iri, self._relation_id)

    def _relation_id(self, iri: str) -> str | None:
        relation = self.relations.from_iri(iri)
        if relation is None or self.skips(relation):
            return None
        return relation

    def relation_parts(self, relation: str) -> tuple[str, ...]:
        """A relation id's names, most general first, the words of each joined by '_':
        ('people', 'person', 'place_of_birth'), ('directed_by',), ('birth_place',)."""
        if self.relation_names == "dotted":
            return tuple(relation.split("."))
        if self.relation_names == "iri":
            local = re.split(r"[/#:]", relation.rstrip("/#"))[-1]
            return (_CAMEL_HUMP.sub("_", local).lower(),)
        return (relation,)

    def relation_phrase(self, relation: str) -> str:
        """A relation as a short phrase, for the model and the path scorer: its last two names in
        words ('person place of birth', 'directed by', 'birth place')."""
        return self._remembered("phrase", relation, lambda r: " ".join(self.relation_parts(r)[-2:]).replace("_", " "))

    def relation_words(self, label: str) -> str:
        """A relation label (a relation, or several through nameless nodes, 'a -> b') as all its
        names in words, for similarity: 'film film directed by -> film performance actor'."""
        return " -> ".join(" ".join(self.relation_parts(part)).replace("_", " ") for part in label.split(" -> "))

    def skips(self, relation: str) -> bool:
        return relation.startswith(self.skip_relation_prefixes) or any(
            s in relation for s in self.skip_relation_substrings
        )

    def skip_iri_prefixes(self) -> tuple[str, ...]:
        """Skipped relations as IRI prefixes, for filters pushed into SPARQL."""
        namespace = getattr(self.relations, "namespace", "")
        return tuple(namespace + p for p in self.skip_relation_prefixes)


RELATION_NAMES = ("dotted", "plain", "iri")
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
FREEBASE_ID = re.compile(r"[mg]\.[0-9a-z_]+")  # a Freebase mid or g-id; a nameless (CVT) node is known by it
# Real Freebase property ids are mostly lower case, but not all: `book.book_edition.ISBN`,
# `location.location_symbol_relationship.Kind_of_symbol`; a few user bases use hyphens.
_FREEBASE_RELATION = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+")

FREEBASE = KGProfile(
    name="freebase",
    entities=PrefixCodec(FREEBASE_NS, FREEBASE_ID),
    relations=PrefixCodec(FREEBASE_NS, _FREEBASE_RELATION),
    name_predicates=(FREEBASE_NS + "type.object.name",),
    name_lang="en",
    alias_predicates=(FREEBASE_NS + "common.topic.alias",),
    skip_relation_prefixes=("type.object.", "common.", "freebase."),
    skip_relation_substrings=("sameAs",),
    step_through_unnamed=True,
    drops_pre_relations=True,
    inverses="schema",
    reverse_property=FREEBASE_NS + "type.property.reverse_property",
    relation_names="dotted",
)

METAQA_RELATIONS = (
    "directed_by",
    "written_by",
    "starred_actors",
    "release_year",
    "in_language",
    "has_genre",
    "has_imdb_votes",
    "has_imdb_rating",
    "has_tags",
)

METAQA = KGProfile(
    name="metaqa",
    entities=MintedCodec(KGQA_NS + "metaqa/entity/"),
    relations=PrefixCodec(KGQA_NS + "metaqa/relation/", re.compile(r"[a-z][a-z0-9_]*")),
    name_predicates=(RDFS_LABEL,),
    name_lang=None,
    names_are_ids=True,
    known_relations=METAQA_RELATIONS,
)

# RoG-style per-question graphs: entities are names (mids where nameless), relations are Freebase's.
# A nameless node (a CVT) carries no label, so the walk steps through it as on Freebase.
ROG = KGProfile(
    name="rog",
    entities=MintedCodec(KGQA_NS + "rog/entity/"),
    relations=PrefixCodec(KGQA_NS + "rog/relation/", _FREEBASE_RELATION),
    name_predicates=(RDFS_LABEL,),
    name_lang=None,
    skip_relation_prefixes=FREEBASE.skip_relation_prefixes,
    skip_relation_substrings=FREEBASE.skip_relation_substrings,
    step_through_unnamed=True,
    drops_pre_relations=True,
    inverses="mirrored",
    relation_names="dotted",
)

GENERIC = KGProfile(
    name="generic",
    entities=IriCodec(),
    relations=IriCodec(),
    name_predicates=(RDFS_LABEL, SKOS_PREF_LABEL),
    name_lang="en",
    alias_predicates=("http://www.w3.org/2004/02/skos/core#altLabel",),
    skip_relation_prefixes=(),
    skip_relation_substrings=("#label", "#prefLabel", "sameAs"),
    relation_names="iri",
)

PROFILES: dict[str, KGProfile] = {p.name: p for p in (FREEBASE, METAQA, ROG, GENERIC)}


def get_profile(name: str | KGProfile) -> KGProfile:
    if isinstance(name, KGProfile):
        return name
    try:
        return PROFILES[name]
    except KeyError:
        raise InvalidTermError(f"unknown KG profile {name!r}; choose one of {', '.join(PROFILES)}") from None
