"""The judge process: one per device, long-lived, started by the harness as a fresh interpreter.

``python -m egg.evaluate.judge_main FD DEVICE``: serves :class:`~egg.evaluate.messages.JudgeJob`
messages on the socket FD and answers each with a
:class:`~egg.evaluate.messages.JudgeResult`. The judge never imports candidate code and never
unpickles anything: it reads the problem's read-only copy once per hash, runs the reference,
starts one runner per candidate from its zygote and decides the verdict (:mod:`judge`). It marks
itself non-dumpable, so a process of the same user cannot read or write its memory through
``/proc`` or ptrace (the runners are additionally sandboxed, see :mod:`sandbox`).

At start the judge decides how buffers are shared on a GPU: a runner forked for the purpose maps
a CUDA IPC buffer and increments it; if that fails, host shared memory is used instead and every
verdict says so (no silent fallback).
"""

from __future__ import annotations

import ctypes
import gc
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import structlog
import torch

from egg.evaluate import clock, device_lease, timing, wire
from egg.evaluate.buffers import Arena
from egg.evaluate.gpu_lock import GpuLock
from egg.evaluate.judge import Evaluation, read_problem
from egg.evaluate.messages import JudgeJob, JudgeResult, Probe, RunnerOk
from egg.evaluate.rejection import Rejected
from egg.evaluate.runner_client import RunnerHandle
from egg.evaluate.sandbox import scrubbed_environment
from egg.evaluate.verdict import NOT_JUDGED
from egg.evaluate.zygote import Zygote

log = structlog.get_logger(__name__)
_PR_SET_DUMPABLE = 4


class JudgeContext:
    """What the judge keeps across evaluations: zygote, transport, device facts, caches."""

    def __init__(self, device: str) -> None:
        self.device = torch.device(device)
        self.scratch_root = tempfile.mkdtemp(prefix="egg-judge-")
        os.chmod(self.scratch_root, 0o700)
        env = scrubbed_environment(dict(os.environ))
        if self.device.type == "cpu":
            env["TRITON_INTERPRET"] = "1"
        else:
            env.pop("TRITON_INTERPRET", None)
        self.zygote = Zygote(device, env)
        self.isolation = [_not_dumpable(), "runner: a fresh process per candidate, forked from a zygote "
                          "that never initialised CUDA; the judge never imports candidate code"]
        self.transport = "file"
        if os.environ.get("EGG_JUDGE_TRANSPORT") == "host-mirror":  # tests, and machines where IPC misbehaves
            self.transport = "host-mirror"
            self.isolation.append("transport: host shared memory (forced by EGG_JUDGE_TRANSPORT=host-mirror)")
        elif self.device.type == "cuda":
            self.transport = self._choose_transport()
        self.gpu = GpuLock.for_device(self.device)
        self.peak = clock.device_peak(self.device)
        with self.gpu.exclusive():  # measured alone on the GPU: the clock check allows twice this
            self.flush_ms = timing.flush_ms(self.device)
        self._sources: dict[str, tuple[str, str]] = {}
        self._cache: dict[Any, Any] = {}
        self._compiled: dict[tuple[str, str, str], Any] = {}

    def _choose_transport(self) -> str:
        if not hasattr(torch.cuda, "MemPool"):
            self.isolation.append("transport: host shared memory (this torch has no torch.cuda.MemPool to keep "
                                  "shared device memory apart from the judge's own)")
            return "host-mirror"
        arena = Arena(self.device, "cuda-ipc")
        reason = "the runner's increment did not arrive"
        try:
            buf = arena.alloc([4], [1], torch.float32)
            buf.tensor.fill_(41.0)
            torch.cuda.synchronize(self.device)
            scratch = tempfile.mkdtemp(prefix="selftest-", dir=self.scratch_root)
            runner = RunnerHandle(self.zygote, {"device": str(self.device), "log_path": os.devnull, "scratch": scratch,
                                                "write_dirs": self.write_dirs(scratch, arena.root, scratch)}, 180, 60)
            try:
                runner.request(Probe(buffer=buf.spec), RunnerOk)
            finally:
                runner.close()
            torch.cuda.synchronize(self.device)
            if bool((buf.tensor == 42.0).all()):
                return "cuda-ipc"
        except (Rejected, OSError, RuntimeError, wire.WireError) as exc:
            reason = str(exc)
        finally:
            arena.close()
        note = f"transport: CUDA IPC self-test failed ({' '.join(reason.split())[:200]}); host shared memory instead"
        log.warning("judge.cuda_ipc_unavailable", reason=reason)
        self.isolation.append(note)
        return "host-mirror"

    def write_dirs(self, scratch: str, arena_root: Path | str, build_dir: str) -> list[str]:
        """Where a runner may write (Landlock): its scratch, the shared buffers, compiler caches, /dev."""
        home = Path.home()
        triton_home = Path(os.environ.get("TRITON_HOME", home)) / ".triton"
        dirs = [scratch, str(arena_root), build_dir, os.environ.get("TRITON_CACHE_DIR", ""), str(triton_home),
                str(home / ".nv"), "/dev"]
        for d in dirs[2:6]:
            if d:
                Path(d).mkdir(parents=True, exist_ok=True)
        return [d for d in dirs if d]

    def problem_source(self, job: JudgeJob) -> tuple[str, str]:
        """The problem's text, read once per hash from the harness's read-only copy."""
        if job.problem_sha256 not in self._sources:
            self._sources[job.problem_sha256] = (read_problem(job.problem_path, job.problem_sha256), job.problem_path)
        return self._sources[job.problem_sha256]

    def cached(self, key: Any, compute: Any) -> Any:
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    @staticmethod
    def _compile_key(job: JudgeJob, ref: Any) -> tuple[str, str, str]:
        return (job.problem_sha256, ref.shape_set, job.flags.model_dump_json())

    def has_compiled_reference(self, job: JudgeJob, ref: Any) -> bool:
        """Whether this judge already compiled (and first called) the reference for ``job``."""
        return self._compile_key(job, ref) in self._compiled

    def compiled_reference(self, job: JudgeJob, ref: Any) -> Any:
        """torch.compile of the reference, kept per problem hash, shape set and flags: compiling is
        the dominant cost of an evaluation and does not depend on the candidate; each evaluation
        still times it anew, side by side with eager and the candidate."""
        key = self._compile_key(job, ref)
        if key not in self._compiled:
            if self._compiled:  # a new problem (a suite shares the judge): let the last one's modules go
                self._compiled.clear()
                torch._dynamo.reset()
            self._compiled[key] = torch.compile(ref.model)
        return self._compiled[key]

    def release(self) -> None:
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.ipc_collect()  # shared blocks whose consumers are gone leave PyTorch's limbo first
            torch.cuda.empty_cache()

    def close(self) -> None:
        self.zygote.stop()
        self.gpu.close()
        shutil.rmtree(self.scratch_root, ignore_errors=True)


def _not_dumpable() -> str:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0:
            return "judge: not dumpable (no same-user ptrace or /proc/PID/mem access)"
    except (OSError, AttributeError):
        pass
    return "judge: could not mark itself non-dumpable"


def evaluate(job: JudgeJob, ctx: JudgeContext) -> JudgeResult:
    try:
        return Evaluation(job, ctx).run()
    except Rejected as rej:
        return JudgeResult(stage_failed=rej.stage, reasons=[rej.reason], transport=ctx.transport)
    except torch.OutOfMemoryError as exc:
        # the judge's own allocations (the reference, its inputs and outputs, the output copies it
        # compares) did not fit: no verdict on the kernel was reached, so it is no "crash" of the
        # candidate's (2026-12-05, H100: level-1 problems with 6-8 GB tensors, judges at 53-75 GB)
        log.warning("judge.out_of_memory", error=str(exc)[:200])
        # (the error's name stays in the reason: the harness re-runs an out-of-memory error alone)
        reason = (f"{NOT_JUDGED}: the judge ran out of device memory on its own allocations (OutOfMemoryError: "
                  f"{' '.join(str(exc).split())[:200]}): this problem needs a device with more memory")
        return JudgeResult(stage_failed="infrastructure", reasons=[reason], transport=ctx.transport)
    except Exception as exc:  # noqa: BLE001 - a broken reference is still an answer, never a hung harness
        log.exception("judge.error")
        reason = f"the judge could not evaluate: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        return JudgeResult(stage_failed="crash", reasons=[reason], transport=ctx.transport)
    finally:
        ctx.release()


def judge_main(sock: socket.socket, device: str) -> None:
    from egg.logging import configure_logging

    configure_logging(level=os.environ.get("EGG_JUDGE_LOG_LEVEL", "warning"))
    torch.set_grad_enabled(False)
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
        torch.cuda.init()
    ctx = JudgeContext(device)
    wire.send(sock, {"op": "ready", "pid": os.getpid(), "transport": ctx.transport, "isolation": ctx.isolation,
                     "lease": str(device_lease.lease_path(ctx.device))})
    try:
        while True:
            try:
                message = wire.recv(sock)
            except wire.WireError:
                return
            if message.get("op") != "job":
                return
            result = evaluate(JudgeJob.model_validate(message["job"]), ctx)
            wire.send(sock, {"op": "result", "result": result.model_dump(mode="json")})
    finally:
        ctx.close()


if __name__ == "__main__":
    judge_main(socket.socket(fileno=int(sys.argv[1])), sys.argv[2])
