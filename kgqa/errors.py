"""The one base class of errors a user can fix. The command line prints them as one line (no
traceback unless --debug) and exits 2; anything else is a bug and keeps its traceback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kgqa.kg.errors import KGError


class KGQAError(Exception):
    """Bad input or an unavailable service: a wrong spec or file, a malformed dataset row or
    program file, a KG endpoint or LM that does not answer, a local model that cannot be built.
    Each subclass also derives from the builtin a caller would expect (ValueError, RuntimeError)."""



USER_ERRORS = (KGQAError, KGError)  # what the command line prints as one line: the graph layer's errors too


class LMUnavailable(KGQAError, RuntimeError):
    """The LM did not answer: connection refused or reset, timed out, a server error after
    retries, or an engine failure that is not about the model's text.

    A model that answers badly (garbage, an invented choice, JSON that does not parse) is the
    model's answer quality: the program falls back and goes on. A model that does not answer at all
    is an outage: the question ends with an error record, `kgqa evaluate` resumes it on the next
    run, `kgqa ask` exits non-zero and a served program answers 503."""


class PathError(KGQAError, OSError):
    """A file or folder the user named is missing, unreadable or unwritable."""


@contextlib.contextmanager
def user_paths() -> Iterator[None]:
    """Within a command, a file-system error on a path the user gave is a user error, not a bug."""
    try:
        yield
    except (BrokenPipeError, PathError):
        raise
    except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError, FileExistsError) as exc:
        raise PathError(str(exc)) from exc
