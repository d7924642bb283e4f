"""Nothing a runner starts outlives the evaluation: it cannot start a new session (seccomp), and the
judge kills its whole session, process groups it made included. Otherwise a leftover process would
keep its mapping of the judge's buffers after the judge freed them (egg.evaluate.buffers.Arena).

Real processes throughout: the filter is installed in a fresh interpreter, and the session is a
real one with a grandchild in its own process group, as ninja puts each compile."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from egg.evaluate.runner_client import kill_session, session_processes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="seccomp and /proc are Linux's")

# A child forked from the main thread and one forked from a thread that existed before the filter
# (TSYNC must cover it) each try setsid, then setpgid; the exit code says which worked.
_PROBE = textwrap.dedent("""
    import os, sys, threading
    from egg.evaluate.sandbox import forbid_new_sessions

    def child_code():
        try:
            os.setsid()
            return 10
        except PermissionError:
            pass
        try:
            os.setpgid(0, 0)
            return 20
        except OSError:
            return 30

    def fork_and_wait():
        pid = os.fork()
        if pid == 0:
            os._exit(child_code())
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    go, done, codes = threading.Event(), threading.Event(), []
    def early_thread():
        go.wait()
        codes.append(fork_and_wait())
        done.set()
    threading.Thread(target=early_thread).start()
    note = forbid_new_sessions() if sys.argv[1] == "filter" else "no filter"
    codes.append(fork_and_wait())
    go.set()
    done.wait()
    print(note)
    print(*codes)
""")


def _probe(mode: str) -> tuple[str, list[int]]:
    out = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, timeout=60, check=True)
    note, codes = out.stdout.strip().splitlines()
    return note, [int(c) for c in codes.split()]


def test_the_filter_refuses_setsid_in_every_thread_and_child_and_keeps_process_groups():
    note, codes = _probe("filter")
    assert note.startswith("seccomp: no new sessions"), note
    assert codes == [20, 20], "setsid must fail (EPERM) and setpgid still work, from the main thread and an older one"


def test_without_the_filter_a_child_can_leave_the_session():
    note, codes = _probe("none")
    assert codes == [10, 10]  # the control: what the filter takes away


# A session leader that starts a grandchild in a process group of its own, then waits.
_SESSION = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], process_group=0)
    print(child.pid, flush=True)
    time.sleep(120)
""")


def _session() -> tuple[subprocess.Popen[str], int]:
    leader = subprocess.Popen([sys.executable, "-c", _SESSION], start_new_session=True, stdout=subprocess.PIPE, text=True)
    assert leader.stdout is not None
    grandchild = int(leader.stdout.readline())
    return leader, grandchild


def test_killing_the_session_reaches_a_process_group_the_runner_made():
    leader, grandchild = _session()
    try:
        assert set(session_processes(leader.pid)) == {leader.pid, grandchild}
        assert kill_session(leader.pid) == []
        leader.wait(timeout=10)
        assert session_processes(leader.pid) == []
    finally:
        for pid in (leader.pid, grandchild):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_killing_only_the_process_group_would_leave_the_grandchild_running():
    leader, grandchild = _session()
    try:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait(timeout=10)
        time.sleep(0.2)
        assert session_processes(leader.pid) == [grandchild]  # why the judge kills the session
    finally:
        kill_session(leader.pid)
