"""Parent side of the worker processes: start, send a job, enforce the timeout, recycle.

One :class:`Worker` per device. A worker that dies (``os._exit``, a segfault), times out or hits a
CUDA error is killed with its whole process group and started afresh for the next job; the
harness process itself never runs candidate code, so it survives every candidate.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from typing import Any

import structlog

from egg.evaluate.worker import worker_main

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
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._conn: Any = None
        self.started_jobs = 0

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def start(self) -> None:
        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(target=worker_main, args=(child_conn, self.device), daemon=True)
        proc.start()
        child_conn.close()
        self._proc, self._conn = proc, parent_conn
        if not parent_conn.poll(START_TIMEOUT_S):
            self.kill()
            raise WorkerDied(f"worker for {self.device} did not start within {START_TIMEOUT_S:.0f} s")
        try:
            hello = parent_conn.recv()
        except EOFError:
            code = proc.exitcode
            self.kill()
            raise WorkerDied(f"worker for {self.device} failed to start: {_describe_exit(code)}") from None
        log.debug("worker.started", device=self.device, pid=hello.get("pid"))

    def run(self, job: dict[str, Any], log_path: str, timeout_s: float) -> dict[str, Any]:
        """Send one job; return the worker's result dict or raise WorkerDied / WorkerTimeout."""
        if not self.alive:
            self.start()
        self.started_jobs += 1
        self._conn.send({"job": job, "log_path": log_path})
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise WorkerTimeout(f"candidate did not finish within {timeout_s:g} s (worker killed)")
            if self._conn.poll(min(remaining, 0.5)):
                try:
                    message = self._conn.recv()
                except (EOFError, OSError):
                    self._proc.join(timeout=5)
                    code = self._proc.exitcode
                    self.kill()
                    raise WorkerDied(_describe_exit(code)) from None
                return message["result"]
            if not self._proc.is_alive():
                code = self._proc.exitcode
                self.kill()
                raise WorkerDied(_describe_exit(code))

    def kill(self) -> None:
        proc = self._proc
        if proc is not None:
            # The worker leads its own process group: this also ends anything a candidate started.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, TypeError):
                if proc.is_alive():
                    proc.kill()
            proc.join(timeout=10)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    def stop(self) -> None:
        if self.alive:
            try:
                self._conn.send(None)
                self._proc.join(timeout=5)
            except (OSError, BrokenPipeError):
                pass
        self.kill()
