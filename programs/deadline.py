"""When a question's run must end: a deadline, and an earlier stop a caller may ask for.

A served request gives each of its questions one `Deadline`: the request's timeout, cut short when
the client goes away or the server is stopping. The program checks it before every LLM call (the
steps that cost seconds), so a question no one waits for any more ends at its next step with
`StopReason.CUT`, and a question not yet started is not started."""

from __future__ import annotations

import threading
import time


class Cut(Exception):
    """The run was cut: its deadline passed, or its caller stopped it. The message says which."""


class Deadline:
    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + seconds
        self._stopped = threading.Event()
        self._reason = ""

    def stop(self, reason: str) -> None:
        """End the run at its next check, for REASON ("the client went away")."""
        if not self._stopped.is_set():
            self._reason = reason
            self._stopped.set()

    @property
    def reason(self) -> str | None:
        """Why the run must end now, or None while it may go on."""
        if self._stopped.is_set():
            return self._reason
        if self.at is not None and time.monotonic() >= self.at:
            return f"its {self.seconds:g} s deadline passed"
        return None

    def remaining(self) -> float | None:
        return None if self.at is None else max(0.0, self.at - time.monotonic())

    def check(self) -> None:
        """Raise `Cut` if the run must end now."""
        reason = self.reason
        if reason:
            raise Cut(f"cut: {reason}")
