"""Graph access for kgqa: one batched interface over an embedded store or a SPARQL endpoint."""

from kgqa.kg.embedded import EmbeddedStore
from kgqa.kg.endpoint import SparqlEndpoint
from kgqa.kg.errors import InvalidTermError, KGError
from kgqa.kg.graph import Edge, Fanout, KGStats, KnowledgeGraph, Move
from kgqa.kg.profiles import FREEBASE, GENERIC, METAQA, PROFILES, ROG, KGProfile, get_profile
from kgqa.kg.terms import Direction, Node, normalize_label

__all__ = [
    "Direction",
    "Edge",
    "EmbeddedStore",
    "FREEBASE",
    "Fanout",
    "GENERIC",
    "InvalidTermError",
    "KGError",
    "KGProfile",
    "KGStats",
    "KnowledgeGraph",
    "METAQA",
    "Move",
    "Node",
    "PROFILES",
    "ROG",
    "SparqlEndpoint",
    "get_profile",
    "normalize_label",
]
