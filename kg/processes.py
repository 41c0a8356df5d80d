"""Child processes that do not outlive the process that started them.

A server started in a session of its own (`start_new_session=True`, stopped with `os.killpg`) is
stopped by its owner's teardown. When the owner is killed outright (SIGKILL, the OOM killer) no
teardown runs, and the server would go on holding its port, its memory and the CPU. On Linux the
kernel can send the child a signal when its parent dies (`PR_SET_PDEATHSIG`); `dies_with_parent`
asks for that.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def dies_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A `preexec_fn` for `subprocess.Popen` that has the child sent SIG when this process dies; None
    off Linux, and off the main thread (the kernel watches the thread that forked, and a worker
    thread that ends would stop a server that is still wanted)."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def ask() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)

    return ask
