"""The judge's handle on one runner: send a command, await the one reply it allows, enforce time.

Whatever the runner does instead of replying becomes a rejection, never an acceptance: a reply of
the wrong kind or not matching the schema is ``crash`` ("sent an invalid message"), the process
ending early is ``crash`` with its exit status, silence past the candidate's time is ``timeout``.
Time spent building a CUDA extension (the runner announces it) counts against the build budget
instead, and in total at most ``build_timeout_s``. On any of these, and at the end of every
evaluation, the runner's session is killed: its process group and any group it made (it cannot
start a new session: :func:`egg.evaluate.sandbox.forbid_new_sessions`). ``reaped`` says whether
the runner exited and nothing of its session is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel

from egg.evaluate import wire
from egg.evaluate.messages import (
    RUNNER_MAX_FRAME,
    InvalidMessage,
    RunnerBuild,
    RunnerFailed,
    RunnerHello,
    RunnerMessage,
    parse_runner,
)
from egg.evaluate.rejection import Rejected
from egg.evaluate.zygote import Zygote

log = structlog.get_logger(__name__)


def describe_exit(status: dict[str, Any]) -> str:
    if status.get("op") != "exited":
        return "it did not exit"
    if "signal" in status:
        try:
            return f"killed by signal {signal.Signals(status['signal']).name}"
        except ValueError:
            return f"killed by signal {status['signal']}"
    return f"exited with code {status.get('code')}"


def session_processes(sid: int) -> list[int]:
    """Live processes of session ``sid`` (Linux ``/proc``; empty elsewhere). Zombies count as gone."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp session ...
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def kill_session(sid: int, timeout_s: float = 2.0) -> list[int]:
    """SIGKILL every process of session ``sid`` (the runner's group and any group it made, such as
    ninja's compiles) until none is left; returns those still alive after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = session_processes(sid)
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


class RunnerHandle:
    def __init__(self, zygote: Zygote, request: dict[str, Any], timeout_s: float, build_timeout_s: float) -> None:
        self.zygote = zygote
        self.timeout_s, self.build_timeout_s = timeout_s, build_timeout_s
        self.spent = self.build_spent = 0.0
        self.sock, runner_end = socket.socketpair()
        try:
            self.pid = zygote.fork(runner_end, request)
        finally:
            runner_end.close()
        self.alive = True
        self.reaped = False  # the runner exited and its session was killed and found empty
        hello = self.await_reply(RunnerHello)
        assert isinstance(hello, RunnerHello)
        self.isolation = list(hello.isolation)

    def request(self, message: BaseModel, expect: type[BaseModel]) -> RunnerMessage:
        try:
            wire.send(self.sock, message.model_dump(mode="json", exclude_none=True))
        except OSError:
            self._died("before the judge's command reached it")
        return self.await_reply(expect)

    def await_reply(self, expect: type[BaseModel]) -> RunnerMessage:
        building_since: float | None = None
        while True:
            started = time.monotonic()
            if building_since is None:
                left = self.timeout_s - self.spent
            else:
                left = self.build_timeout_s - self.build_spent - (started - building_since)
            try:
                raw = wire.recv(self.sock, timeout=max(0.0, left), max_bytes=RUNNER_MAX_FRAME)
            except wire.WireTimeout:
                self.kill()
                if building_since is not None:
                    raise Rejected("timeout", f"building the CUDA extension took longer than {self.build_timeout_s:g} s "
                                   "(runner killed)") from None
                raise Rejected("timeout", f"candidate did not finish within {self.timeout_s:g} s (runner killed)") from None
            except wire.WireError as exc:
                self._died(str(exc))
            finally:
                if building_since is None:
                    self.spent += time.monotonic() - started
            try:
                message = parse_runner(raw)
            except InvalidMessage as exc:
                self.kill()
                raise Rejected("crash", f"the candidate's process sent an invalid message ({exc}); "
                               "runner killed") from None
            if isinstance(message, RunnerBuild):
                if message.event == "start" and building_since is None:
                    building_since = time.monotonic()
                elif message.event == "done" and building_since is not None:
                    self.build_spent += time.monotonic() - building_since
                    building_since = None
                continue
            if isinstance(message, RunnerFailed):
                if message.fatal_cuda:
                    self.kill()
                raise Rejected(message.stage, message.reason)
            if not isinstance(message, expect):
                self.kill()
                raise Rejected("crash", f"the candidate's process sent '{message.op}' where the judge expected "
                               f"'{_op_of(expect)}'; runner killed")
            return message

    def _died(self, how: str) -> None:
        status = self.zygote.wait(self.pid, timeout=5.0)
        self.reaped = status.get("op") == "exited"
        self.kill()
        raise Rejected("crash", f"the candidate's process ended before finishing ({describe_exit(status)}; {how})")

    def kill(self) -> None:
        if not self.alive:
            return
        self.alive = False
        try:
            os.killpg(self.pid, signal.SIGKILL)  # the runner leads its own session: its children go too
        except (ProcessLookupError, PermissionError):
            pass
        exited = self.reaped or self.zygote.wait(self.pid, timeout=10.0).get("op") == "exited"
        self.reaped = exited and not kill_session(self.pid)
        self.sock.close()

    def close(self) -> None:
        """Ask the runner to exit; whatever is left of its process group is killed."""
        if not self.alive:
            return
        try:
            wire.send(self.sock, {"op": "exit"})
        except OSError:
            pass
        status = self.zygote.wait(self.pid, timeout=2.0)
        self.alive = False
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if status.get("op") != "exited":
            status = self.zygote.wait(self.pid, timeout=10.0)
        # processes in other groups of its session (it cannot start a new session: sandbox.py)
        self.reaped = status.get("op") == "exited" and not kill_session(self.pid)
        self.sock.close()


def _op_of(model: type[BaseModel]) -> str:
    annotation = model.model_fields["op"].annotation
    return str(getattr(annotation, "__args__", ("?",))[0])
