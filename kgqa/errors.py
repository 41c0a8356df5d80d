"""The one base class of errors a user can fix. The command line prints them as one line (no
traceback unless --debug) and exits 2; anything else is a bug and keeps its traceback."""

from __future__ import annotations


class KGQAError(Exception):
    """Bad input or an unavailable service: a wrong spec or file, a malformed dataset row or
    program file, a KG endpoint or LM that does not answer, a local model that cannot be built.
    Each subclass also derives from the builtin a caller would expect (ValueError, RuntimeError)."""

