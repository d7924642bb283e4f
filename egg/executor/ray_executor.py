"""The ``ray`` executor: one Ray actor per GPU of a cluster the user started; EGG only connects.

Start the cluster as Ray documents it (``ray start --head`` on one machine, ``ray start
--address=HEAD:6379`` on the others; EGG installed on every node), then ``egg ... --executor ray
--ray-address HEAD:6379``. :class:`RayExecutor` connects with ``ray.init(address=...)`` and places
one actor per GPU of the cluster (``num_gpus=1``: Ray pins it with ``CUDA_VISIBLE_DEVICES``); on a
cluster without GPUs, ``workers`` CPU actors (default: one per cluster CPU). Each actor owns a
:class:`~egg.evaluate.harness.Harness` of its own on its device (``workers`` judges per GPU,
default 2, as the local executor), so static checks, judge, runner and verdict are exactly the
local ones; the actor receives the pinned problem's bytes and the candidate's bytes (nodes need
no shared filesystem) and sends back the verdict and the archive's files, which are written into
the caller's archive directory.

Failures: an actor or node lost mid-evaluation (Ray raises ``RayActorError``, ``NodeDiedError``,
``WorkerCrashedError``, ...) re-queues the candidate once, on another actor; a second loss is a
verdict with ``stage_failed: "infrastructure"`` (never a rejection of the kernel). A lost actor
is replaced by a fresh one in the background when the cluster still has room for it; if every
actor is gone and none can be placed, the remaining candidates are infrastructure failures and
the run still finishes (and can be resumed later).
"""

from __future__ import annotations

import os
import queue
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from egg import __version__
from egg.errors import EggInputError
from egg.evaluate.devices import JUDGES_PER_GPU
from egg.evaluate.harness import (
    EvalOptions,
    Harness,
    default_archive_dir,
    infrastructure_failure,
    select_shapes,
)
from egg.evaluate.pins import ProblemStore
from egg.evaluate.verdict import Verdict

log = structlog.get_logger(__name__)

ACTOR_START_TIMEOUT_S = 600.0  # placing the actor, importing torch, the judges' CUDA init happens later
FREE_POLL_S = 2.0


class _Lost(Exception):
    """No actor finished the call: the reasons, one per attempt."""


class JudgeActor:
    """Runs inside a Ray worker process: one Harness on the actor's device."""

    def __init__(self, device: str, workers: int | None) -> None:
        import ray

        self.harness = Harness(device, workers=workers)
        self.root = Path(tempfile.mkdtemp(prefix="egg-ray-actor-"))
        gpus = ",".join(str(g) for g in ray.get_gpu_ids())
        self.where = f"ray node {ray.util.get_node_ip_address()}" + (f" GPU {gpus}" if gpus else f" pid {os.getpid()}")

    def hello(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "where": self.where, "capacity": self.harness.capacity}

    def _problem(self, name: str, data: bytes, sha: str) -> Path:
        path = self.root / "problems" / f"{sha[:16]}-{name}"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        return path

    def evaluate(self, problem: tuple[str, bytes, str], candidate: tuple[str, bytes], options: dict[str, Any]) -> dict[str, Any]:
        work = Path(tempfile.mkdtemp(prefix="eval-", dir=self.root))
        try:
            path = work / candidate[0]
            path.write_bytes(candidate[1])
            archive = work / "archive"
            verdict = self.harness.evaluate(self._problem(*problem), path, EvalOptions.model_validate(options), archive)
            files = {p.name: p.read_bytes() for p in archive.iterdir() if p.is_file() and p.name != "verdict.json"}
            verdict.worker = f"{self.where} ({verdict.worker})"
            return {"verdict": verdict.model_dump(mode="json"), "files": files}
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def profile_reference(self, problem: tuple[str, bytes, str], options: dict[str, Any]) -> dict[str, Any]:
        verdict = self.harness.profile_reference(self._problem(*problem), EvalOptions.model_validate(options))
        verdict.worker = self.where
        return {"verdict": verdict.model_dump(mode="json"), "files": {}}

    def close(self) -> None:
        self.harness.close()
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class _Actor:
    handle: Any
    pid: int
    where: str
    capacity: int
    alive: bool = True
    busy: int = 0


class RayExecutor:
    """``Executor`` over Ray actors; thread-safe, ``evaluate`` blocks until an actor is free."""

    kind = "ray"

    def __init__(self, device: str = "auto", address: str | None = None, workers: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise EggInputError("--executor ray needs Ray: pip install 'egg-kernels[ray]'") from None
        self._ray = ray
        target = address or os.environ.get("RAY_ADDRESS") or "auto"
        self._owns_connection = not ray.is_initialized()
        if self._owns_connection:
            _reachable(target)
            try:
                ray.init(address=target, log_to_driver=False, logging_level="warning")
            except (ConnectionError, RuntimeError, ValueError) as exc:
                first = " ".join(str(exc).split())[:300]
                raise EggInputError(f"--ray-address {target}: could not connect to a Ray cluster (start one with "
                                    f"'ray start --head' and pass its address): {first}") from None
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        if device == "cuda" and gpus == 0:
            raise EggInputError(f"--device cuda: the Ray cluster at {target} has no GPU")
        self.device = "cuda" if device in ("auto", "cuda") and gpus > 0 else "cpu"
        self._workers = workers
        count = gpus if self.device == "cuda" else (workers or max(1, int(resources.get("CPU", 1))))
        self._remote = ray.remote(JudgeActor)
        self._free: queue.Queue[_Actor] = queue.Queue()
        self._actors: list[_Actor] = []
        self._pending = 0
        self._lock = threading.Lock()
        self._problems = ProblemStore()
        started = [self._start_actor() for _ in range(count)]
        for handle in started:
            self._register(handle)
        if not self._actors:
            self._problems.close()
            raise EggInputError(f"--executor ray: no actor could be placed on the cluster at {target} within "
                                f"{ACTOR_START_TIMEOUT_S:g} s (resources: {dict(resources)})")
        log.info("executor.ray_ready", actors=len(self._actors), device=self.device,
                 where=[a.where for a in self._actors])

    # -- actors ----------------------------------------------------------------------------------
    def _start_actor(self) -> Any:
        opts: dict[str, Any] = {"num_gpus": 1} if self.device == "cuda" else {"num_cpus": 1}
        judges = self._workers if self.device == "cuda" else 1
        per_actor = (judges or JUDGES_PER_GPU) if self.device == "cuda" else 1
        return self._remote.options(max_concurrency=per_actor, max_restarts=0, **opts).remote(self.device, judges)

    def _register(self, handle: Any) -> bool:
        try:
            hello = self._ray.get(handle.hello.remote(), timeout=ACTOR_START_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - an actor that cannot start is logged and left out
            log.warning("executor.actor_not_started", error=" ".join(str(exc).split())[:300])
            self._ray.kill(handle)
            return False
        actor = _Actor(handle=handle, pid=hello["pid"], where=hello["where"], capacity=hello["capacity"])
        with self._lock:
            self._actors.append(actor)
        for _ in range(actor.capacity):
            self._free.put(actor)
        return True

    def _lost(self, actor: _Actor) -> None:
        """Mark ``actor`` dead (once) and start a replacement in the background."""
        with self._lock:
            if not actor.alive:
                return
            actor.alive = False
            self._pending += 1

        def replace() -> None:
            try:
                self._register(self._start_actor())
            finally:
                with self._lock:
                    self._pending -= 1

        threading.Thread(target=replace, name="egg-ray-replace", daemon=True).start()

    def _take(self) -> _Actor:
        while True:
            try:
                actor = self._free.get(timeout=FREE_POLL_S)
            except queue.Empty:
                with self._lock:
                    if not any(a.alive for a in self._actors) and self._pending == 0:
                        raise _Lost("no Ray actor is left and none could be placed") from None
                continue
            if actor.alive:  # slots of a dead actor are dropped; its replacement brings new ones
                with self._lock:
                    actor.busy += 1
                return actor

    def _call(self, method: str, *args: Any) -> tuple[dict[str, Any], list[str]]:
        notes: list[str] = []
        for attempt in (1, 2):
            actor = self._take()
            try:
                answer = self._ray.get(getattr(actor.handle, method).remote(*args))
            except self._ray.exceptions.RayTaskError as exc:  # the actor's code raised: not a lost worker
                raise exc.as_instanceof_cause() from None
            except self._ray.exceptions.RayError as exc:
                reason = f"the Ray actor on {actor.where} was lost ({type(exc).__name__})"
                log.warning("executor.actor_lost", where=actor.where, attempt=attempt, error=str(exc)[:300])
                self._lost(actor)
                notes.append(reason)
                continue
            finally:
                with self._lock:
                    actor.busy -= 1
            self._free.put(actor)
            return answer, notes
        raise _Lost("; ".join(notes) + "; it was lost twice")

    # -- Executor --------------------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        with self._lock:
            return sum(a.capacity for a in self._actors if a.alive)

    def workers(self) -> list[dict[str, object]]:
        with self._lock:
            return [{"device": a.where, "pid": a.pid, "busy": a.busy} for a in self._actors if a.alive]

    def pin_problems(self, paths: list[str | Path]) -> None:
        for p in paths:
            self._problems.pin(p)

    def evaluate(self, problem_path: str | Path, candidate_path: str | Path, options: EvalOptions | None = None,
                 archive_dir: str | Path | None = None) -> Verdict:
        options = options or EvalOptions()
        started = time.perf_counter()
        problem_path, candidate_path = Path(problem_path), Path(candidate_path)
        pinned, changed = self._problems.pin(problem_path)
        if not candidate_path.is_file():
            raise EggInputError(f"{candidate_path}: no such candidate file")
        archive = Path(archive_dir) if archive_dir else default_archive_dir(Path("runs"), candidate_path)
        archive.mkdir(parents=True, exist_ok=True)
        problem = (problem_path.name, Path(pinned.store_path).read_bytes(), pinned.sha256)
        try:
            answer, notes = self._call("evaluate", problem, (candidate_path.name, candidate_path.read_bytes()),
                                       options.model_dump(mode="json"))
            verdict = Verdict.model_validate(answer["verdict"])
            verdict.notes = notes_of(notes) + verdict.notes
        except _Lost as lost:
            verdict = Verdict(accepted=False, device=self.device, problem_sha256=pinned.sha256, egg_version=__version__,
                              shape_sets=select_shapes(pinned.info, options.shapes))
            infrastructure_failure(verdict, str(lost))
            answer = {"files": {"candidate.py": candidate_path.read_bytes()}}
            verdict.wall_s = time.perf_counter() - started
        if changed:
            verdict.notes.append(changed)
        verdict.problem, verdict.candidate, verdict.archive_dir = str(problem_path), str(candidate_path), str(archive)
        _write_archive(archive, candidate_path, pinned.store_path, answer["files"], verdict)
        log.info("eval.verdict", candidate=candidate_path.name, accepted=verdict.accepted, summary=verdict.summary(),
                 worker=verdict.worker)
        return verdict

    def profile_reference(self, problem_path: str | Path, options: EvalOptions | None = None) -> Verdict:
        options = options or EvalOptions()
        pinned, _ = self._problems.pin(problem_path)
        problem = (Path(problem_path).name, Path(pinned.store_path).read_bytes(), pinned.sha256)
        try:
            answer, notes = self._call("profile_reference", problem, options.model_dump(mode="json"))
        except _Lost as lost:
            verdict = Verdict(accepted=False, device=self.device, problem_sha256=pinned.sha256)
            infrastructure_failure(verdict, str(lost))
        else:
            verdict = Verdict.model_validate(answer["verdict"])
            verdict.notes = notes_of(notes) + verdict.notes
        verdict.problem = str(problem_path)
        return verdict

    def close(self) -> None:
        with self._lock:
            actors, self._actors = list(self._actors), []
        for actor in actors:
            if actor.alive:
                try:
                    self._ray.get(actor.handle.close.remote(), timeout=60)
                except Exception:  # noqa: BLE001 - closing: a dead actor has nothing left to close
                    pass
            self._ray.kill(actor.handle)
        self._problems.close()
        if self._owns_connection:
            self._ray.shutdown()

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


CONNECT_CHECK_S = 10.0


def _reachable(address: str) -> None:
    """A HOST:PORT that nothing answers on is a one-line error now (ray.init would retry for minutes)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return  # "auto", ray://...: Ray resolves those itself
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_CHECK_S).close()
    except OSError as exc:
        raise EggInputError(f"--ray-address {address}: nothing answers there ({exc}); start the cluster with "
                            f"'ray start --head' and pass its address") from None


def notes_of(lost: list[str]) -> list[str]:
    return [f"re-queued once: {reason}" for reason in lost]


def _write_archive(archive: Path, candidate: Path, problem_copy: str, files: dict[str, bytes], verdict: Verdict) -> None:
    """The archive the local harness would have written: candidate.py, problem.py, worker.log, verdict.json."""
    for name, data in files.items():
        target = archive / name
        if name == "candidate.py" and target.exists() and target.resolve() == candidate.resolve():
            continue
        if name == "problem.py":
            continue
        target.write_bytes(data)
    if not (archive / "problem.py").exists():
        shutil.copyfile(problem_copy, archive / "problem.py")
        (archive / "problem.py").chmod(0o444)
    (archive / "verdict.json").write_text(verdict.model_dump_json(indent=2))
