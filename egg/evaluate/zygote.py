"""The zygote: a process that has imported torch, triton, numpy and the runner, but has not
initialised CUDA, and forks one fresh runner per candidate.

The judge starts it once per device as a fresh interpreter (``python -m egg.evaluate.zygote FD
DEVICE``), with ``TRITON_INTERPRET=1`` in its environment on CPU (before triton is imported) and
API keys removed. Forking a warm interpreter costs milliseconds, where a fresh ``python -c "import
torch, triton"`` costs seconds; each child still gets its own CUDA context and address space, so
nothing one candidate does (patching a module, caching a tensor, corrupting its context) reaches
the next one.

Protocol on the zygote's socket: ``fork`` carries the runner's socket as an ``SCM_RIGHTS``
descriptor; the zygote answers with the child's pid. The child starts a new session (so the judge
can kill its whole process group), asks to be killed when the zygote dies (as the zygote does for
the judge), closes the zygote's socket and serves only the judge
(:func:`egg.evaluate.runner.serve`). ``wait`` reaps a child and reports how it ended.
"""

from __future__ import annotations

import array
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from egg.evaluate import wire

START_TIMEOUT_S = 180.0
_PR_SET_PDEATHSIG = 1


def _recv_fd(sock: socket.socket) -> int:
    fds = array.array("i")
    msg, ancdata, _, _ = sock.recvmsg(1, socket.CMSG_LEN(fds.itemsize))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    if not msg or not fds:
        raise wire.WireError("fork request without a descriptor")
    return fds[0]


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies (a killed judge takes zygote and runners along)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _child(sock: socket.socket, fd: int, request: dict[str, Any]) -> None:
    code = 4
    try:
        os.setsid()
        _die_with_parent()
        sock.close()
        from egg.evaluate.runner import serve

        code = serve(socket.socket(fileno=fd), request["device"], request["log_path"], request["scratch"],
                     request["write_dirs"])
    except BaseException:  # noqa: BLE001 - the child must never return into the zygote's loop
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def _describe_status(status: int) -> dict[str, Any]:
    if os.WIFSIGNALED(status):
        return {"op": "exited", "signal": os.WTERMSIG(status)}
    return {"op": "exited", "code": os.WEXITSTATUS(status)}


def zygote_main(sock: socket.socket) -> None:
    _die_with_parent()
    import numpy  # noqa: F401 - warm imports, shared copy-on-write by every runner
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    import egg.evaluate.runner  # noqa: F401
    import egg.evaluate.runner_loop  # noqa: F401

    wire.send(sock, {"op": "ready", "pid": os.getpid()})
    children: set[int] = set()
    while True:
        try:
            request = wire.recv(sock)
        except wire.WireError:
            break
        op = request.get("op")
        if op == "fork":
            fd = _recv_fd(sock)
            pid = os.fork()
            if pid == 0:
                _child(sock, fd, request)
            os.close(fd)
            children.add(pid)
            wire.send(sock, {"op": "forked", "pid": pid})
        elif op == "wait":
            pid, deadline = int(request["pid"]), time.monotonic() + float(request.get("timeout", 5.0))
            answer: dict[str, Any] = {"op": "running"}
            while pid in children:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    children.discard(pid)
                    answer = _describe_status(status)
                    break
                if time.monotonic() > deadline:
                    break
                time.sleep(0.005)
            wire.send(sock, answer)
        elif op == "stop":
            break
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Zygote:
    """The judge's handle on its zygote: started on first use, restarted if it died."""

    def __init__(self, device: str, env: dict[str, str]) -> None:
        self.device, self.env = device, env
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None

    def start(self) -> None:
        parent, child = socket.socketpair()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "egg.evaluate.zygote", str(child.fileno())],
            pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=self.env,
        )
        child.close()
        self._sock = parent
        hello = wire.recv(parent, timeout=START_TIMEOUT_S)
        if hello.get("op") != "ready":
            raise wire.WireError(f"zygote said {hello!r}")

    def fork(self, runner_end: socket.socket, request: dict[str, Any]) -> int:
        if self._proc is None or self._proc.poll() is not None:
            self.start()
        assert self._sock is not None
        wire.send(self._sock, {"op": "fork", **request})
        self._sock.sendmsg([b"F"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [runner_end.fileno()]))])
        answer = wire.recv(self._sock, timeout=60)
        return int(answer["pid"])

    def wait(self, pid: int, timeout: float = 5.0) -> dict[str, Any]:
        if self._sock is None:
            return {"op": "running"}
        try:
            wire.send(self._sock, {"op": "wait", "pid": pid, "timeout": timeout})
            return wire.recv(self._sock, timeout=timeout + 30)
        except (wire.WireError, OSError):
            return {"op": "running"}

    def stop(self) -> None:
        if self._sock is not None:
            try:
                wire.send(self._sock, {"op": "stop"})
            except OSError:
                pass
        if self._proc is not None:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        if self._sock is not None:
            self._sock.close()
        self._proc = self._sock = None


if __name__ == "__main__":
    zygote_main(socket.socket(fileno=int(sys.argv[1])))
