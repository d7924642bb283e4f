"""The harness's side of the judge processes: start, send a job, wait for the result, recycle.

One :class:`JudgeProcess` per slot (a GPU may have several), started as a fresh interpreter (``python -m
egg.evaluate.judge_main``) in its own session, so the harness's caller (the ``egg`` CLI, which
also runs agents) never shares a process with the judge, and killing the judge's process group
ends its zygote and runners too. The judge enforces each candidate's own time limit; the deadline
here only bounds the judge itself (a reference that hangs, a torch.compile that never returns).

A GPU judge is pinned to its GPU with ``CUDA_VISIBLE_DEVICES`` (it, its zygote and its runners
see that one GPU as ``cuda:0``), so no candidate can reach another GPU's memory or timings.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import structlog

from egg.evaluate import wire

log = structlog.get_logger(__name__)

START_TIMEOUT_S = 600.0  # CUDA init, the zygote's imports and the transport self-test


class JudgeDied(Exception):
    """The judge process ended or stopped answering; the message says how. ``lost``: it ended
    (killed, crashed, its machine went away) rather than overran its deadline."""

    def __init__(self, message: str, lost: bool = True) -> None:
        super().__init__(message)
        self.lost = lost


class JudgeProcess:
    def __init__(self, device: str, visible_gpu: str | None = None) -> None:
        """``device``: ``cpu`` or ``cuda:N``; ``visible_gpu``: pin the judge to this entry of
        ``CUDA_VISIBLE_DEVICES`` (it then sees it as ``cuda:0``)."""
        self.visible_gpu = visible_gpu
        self.device = "cuda:0" if visible_gpu is not None else device
        self.label = f"cuda:{visible_gpu}" if visible_gpu is not None else device  # for messages and logs
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self.ready: dict[str, Any] = {}
        self.jobs = 0

    @property
    def lease(self) -> Path | None:
        """The device's lease file (egg.evaluate.device_lease), as the judge named it; None before
        its start."""
        name = self.ready.get("lease")
        return Path(name) if isinstance(name, str) and name else None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self.alive else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        self.jobs = 0  # counts the jobs this process (not an earlier, killed one) has taken
        parent, child = socket.socketpair()
        env = dict(os.environ)
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
        else:
            env.pop("TRITON_INTERPRET", None)
        if self.visible_gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.visible_gpu
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "egg.evaluate.judge_main", str(child.fileno()), self.device],
            pass_fds=[child.fileno()], start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            env=env,
        )
        child.close()
        self._sock = parent
        try:
            self.ready = wire.recv(parent, timeout=START_TIMEOUT_S)
        except wire.WireError as exc:
            code = self._proc.poll()
            self.kill()
            raise JudgeDied(f"the judge for {self.label} did not start ({exc}; exit code {code})") from None
        log.debug("judge.started", device=self.label, pid=self.ready.get("pid"), transport=self.ready.get("transport"))

    def run(self, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one job; the judge's result dict, or :class:`JudgeDied` (the judge is then killed)."""
        if not self.alive:
            self.start()
        assert self._sock is not None
        self.jobs += 1
        try:
            wire.send(self._sock, {"op": "job", "job": job})
            answer = wire.recv(self._sock, timeout=timeout_s)
        except wire.WireTimeout:
            self.kill()
            raise JudgeDied(f"the judge for {self.label} did not answer within {timeout_s:g} s (killed)",
                            lost=False) from None
        except (wire.WireError, OSError) as exc:
            code = self._proc.poll() if self._proc else None
            self.kill()
            raise JudgeDied(f"the judge process for {self.label} ended ({exc}; exit code {code})") from None
        if answer.get("op") != "result" or not isinstance(answer.get("result"), dict):
            self.kill()
            raise JudgeDied(f"the judge sent {str(answer)[:200]} instead of a result")
        return answer["result"]

    def kill(self) -> None:
        proc = self._proc
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the judge leads its session: zygote and runners go too
            except (ProcessLookupError, PermissionError):
                if proc.poll() is None:
                    proc.kill()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log.warning("judge.unkillable", pid=proc.pid)
        if self._sock is not None:
            self._sock.close()
        self._proc = self._sock = None

    def stop(self) -> None:
        if self.alive and self._sock is not None and self._proc is not None:
            try:
                wire.send(self._sock, {"op": "stop"})
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
