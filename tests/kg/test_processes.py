"""Servers started as subprocesses stop when the process that started them is killed outright."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from kgqa.kg.processes import dies_with_parent


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie has exited; only its parent has not read its status
        return stat.read().split(") ")[1].split()[0] != "Z"


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def _owner(script: str) -> tuple[subprocess.Popen, int]:
    """A Python process running SCRIPT, which starts a server and prints its PID; both returned."""
    owner = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, text=True)
    line = owner.stdout.readline()
    assert line.strip().isdigit(), f"the owner printed {line!r}"
    return owner, int(line)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_started_so_is_stopped_when_its_owner_is_killed():
    owner, child = _owner("""
        import subprocess, sys, time
        from kgqa.kg.processes import dies_with_parent
        child = subprocess.Popen(["sleep", "600"], start_new_session=True, preexec_fn=dies_with_parent())
        print(child.pid, flush=True)
        time.sleep(600)
    """)
    try:
        assert _alive(child)
        owner.send_signal(signal.SIGKILL)  # no teardown runs
        owner.wait()
        assert _gone_within(child, 10), "the child outlived its killed owner"
    finally:
        if _alive(child):
            os.killpg(child, signal.SIGKILL)


def test_off_the_main_thread_the_child_is_left_to_its_owner():
    import threading

    seen = []
    worker = threading.Thread(target=lambda: seen.append(dies_with_parent()))
    worker.start()
    worker.join()
    assert seen == [None]  # the kernel would signal it when this worker thread ended


def test_a_local_virtuoso_does_not_outlive_its_killed_owner(tmp_path, virtuoso_installed):
    owner, server = _owner(f"""
        import time
        from kgqa.kg.virtuoso import LocalVirtuoso
        server = LocalVirtuoso.start({str(tmp_path)!r}, timeout=120)
        print(server.process.pid, flush=True)
        time.sleep(600)
    """)
    try:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        assert _gone_within(server, 30), "Virtuoso outlived its killed owner"
    finally:
        if _alive(server):
            os.killpg(server, signal.SIGKILL)
