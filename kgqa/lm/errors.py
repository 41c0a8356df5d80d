"""The one error of an LM that did not answer.

A model that answers badly (garbage, an invented choice, JSON that does not parse) is the model's
answer quality: the program falls back and goes on. A model that does not answer at all (a refused
or reset connection, a timeout, a server error after bounded retries, an engine that failed) is an
outage: the question ends with an error record, `kgqa evaluate` resumes it on the next run, `kgqa
ask` exits non-zero and a served program answers 503. `LMUnavailable` is that second kind."""

from __future__ import annotations

from kgqa.errors import KGQAError


class LMUnavailable(KGQAError, RuntimeError):
    """The LM did not answer: connection refused or reset, timed out, a server error after
    retries, or an engine failure that is not about the model's text."""
