"""Parent side of the worker processes: start, send a job, enforce the timeout, recycle.

One :class:`Worker` per device. A worker that dies (``os._exit``, a segfault), times out or hits a
CUDA error is killed with its whole process group and started afresh for the next job; the
harness process itself never runs candidate code, so it survives every candidate.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

import structlog

log = structlog.get_logger(__name__)

START_TIMEOUT_S = 180.0


class WorkerDied(Exception):
    """The worker process ended without answering (crash) — message says how."""


class WorkerTimeout(Exception):
    """The job ran past its timeout; the worker was killed."""


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "worker did not exit"
    if code < 0:
        try:
            return f"worker killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"worker killed by signal {-code}"
    return f"worker exited with code {code}"


class Worker:
    def __init__(self, device: str) -> None:
        self.device = device
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self.started_jobs = 0
        self.jobs_since_start = 0  # jobs this process has served (a fresh worker has run none)

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        self.jobs_since_start = 0
        parent_sock, child_sock = socket.socketpair()
        env = dict(os.environ)
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
        else:
            env.pop("TRITON_INTERPRET", None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "egg.evaluate.worker", str(child_sock.fileno()), self.device],
            pass_fds=[child_sock.fileno()],
            start_new_session=True,  # its own process group: killpg ends whatever a candidate started
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        child_sock.close()
        parent_conn = Connection(parent_sock.detach())
        self._proc, self._conn = proc, parent_conn
        if not parent_conn.poll(START_TIMEOUT_S):
            self.kill()
            raise WorkerDied(f"worker for {self.device} did not start within {START_TIMEOUT_S:.0f} s")
        try:
            hello = parent_conn.recv()
        except EOFError:
            proc.wait(timeout=10)
            code = proc.returncode
            self.kill()
            raise WorkerDied(f"worker for {self.device} failed to start: {_describe_exit(code)}") from None
        log.debug("worker.started", device=self.device, pid=hello.get("pid"))

    def run(self, job: dict[str, Any], log_path: str, timeout_s: float, build_timeout_s: float = 900.0) -> dict[str, Any]:
        """Send one job; return the worker's result dict or raise WorkerDied / WorkerTimeout.

        ``timeout_s`` bounds the candidate's own run; time spent building or compile-checking a
        CUDA extension (reported by the worker) is bounded by ``build_timeout_s`` instead.
        """
        if not self.alive:
            self.start()
        self.started_jobs += 1
        self.jobs_since_start += 1
        assert self._conn is not None and self._proc is not None
        try:
            self._conn.send({"job": job, "log_path": log_path})
        except OSError:  # the worker went away between jobs: start a fresh one and send again
            self.kill()
            self.start()
            assert self._conn is not None
            self._conn.send({"job": job, "log_path": log_path})
        deadline = time.monotonic() + timeout_s
        paused: float | None = None  # candidate time left when a build started
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                if paused is not None:
                    raise WorkerTimeout(f"building the CUDA extension took longer than {build_timeout_s:g} s (worker killed)")
                raise WorkerTimeout(f"candidate did not finish within {timeout_s:g} s (worker killed)")
            if self._conn.poll(min(remaining, 0.5)):
                try:
                    message = self._conn.recv()
                except (EOFError, OSError):
                    code = self._wait_exit()
                    self.kill()
                    raise WorkerDied(_describe_exit(code)) from None
                if "build" in message:
                    if message["build"] == "start":
                        paused, deadline = remaining, time.monotonic() + build_timeout_s
                    elif paused is not None:
                        deadline, paused = time.monotonic() + paused, None
                    continue
                if message["result"].get("fatal_cuda"):
                    self.kill()  # its CUDA context is unusable; the next job gets a fresh worker
                return message["result"]
            if not self.alive:
                code = self._wait_exit()
                self.kill()
                raise WorkerDied(_describe_exit(code))

    def _wait_exit(self) -> int | None:
        assert self._proc is not None
        try:
            return self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        proc = self._proc
        if proc is not None:
            # The worker leads its own process group: this also ends anything a candidate started.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                if proc.poll() is None:
                    proc.kill()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log.warning("worker.unkillable", pid=proc.pid)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    def stop(self) -> None:
        if self.alive and self._conn is not None and self._proc is not None:
            try:
                self._conn.send(None)
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
