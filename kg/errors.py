"""Errors raised by the knowledge-graph layer. The layer stands on its own (it imports nothing of
the rest of kgqa); the command line counts its errors among those a user can fix (`kgqa.errors`)."""


class KGError(RuntimeError):
    """The graph could not answer: an endpoint is down, timed out, or answered garbage."""


class InvalidTermError(KGError, ValueError):
    """An id, relation or label was refused before it could reach a query."""
