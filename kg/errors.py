"""Errors raised by the knowledge-graph layer."""

from kgqa.errors import KGQAError


class KGError(KGQAError, RuntimeError):
    """The graph could not answer: an endpoint is down, timed out, or answered garbage."""


class InvalidTermError(KGError, ValueError):
    """An id, relation or label was refused before it could reach a query."""
