"""The evaluation harness: static checks, then a worker job, then a :class:`Verdict` and an archive.

Public API::

    with Harness(device="auto") as harness:
        verdict = harness.evaluate(problem_path, candidate_path, EvalOptions(), archive_dir)

    verdict = evaluate_candidate(problem_path, candidate_path)   # one-shot

The harness knows nothing of agents: it takes files and returns verdicts. It is safe to call
``evaluate`` from several threads; each call takes a free worker (one per GPU, one on CPU).
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import structlog
from pydantic import BaseModel, Field

from egg import __version__
from egg.errors import EggInputError
from egg.evaluate.job import Job, JobResult
from egg.evaluate.pool import Worker, WorkerDied, WorkerTimeout
from egg.evaluate.static_checks import check_candidate_source, detect_backend
from egg.evaluate.verdict import Verdict
from egg.problem import class_init_params, inspect_problem, parse_source, select_shape_sets

log = structlog.get_logger(__name__)


class EvalOptions(BaseModel):
    """How to evaluate; defaults match ``egg eval``'s."""

    device: Literal["auto", "cpu", "cuda"] = "auto"
    timeout_s: float = Field(default=300.0, gt=0)
    trials: int = Field(default=5, ge=1)
    timing_runs: int = Field(default=100, ge=1)
    warmup_runs: int = Field(default=10, ge=0)
    shapes: str | None = None
    allow_tf32: bool = False
    seed: int | None = None
    time_compile: bool | None = None  # None: on GPU yes, on CPU no
    # Off only to study the dynamic defences on their own (tests, re-scoring research); a verdict
    # reached without static checks says so in its notes.
    static_checks: bool = True
    build_timeout_s: float = Field(default=900.0, gt=0)  # CUDA extension builds / nvcc checks


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise EggInputError("--device cuda: no CUDA device is available on this machine (use --device cpu)")
    if device not in ("cpu", "cuda"):
        raise EggInputError(f"--device: expected auto, cpu or cuda, got {device!r}")
    return device


def _device_slots(device: str) -> list[str]:
    if device == "cpu":
        return ["cpu"]
    import torch

    return [f"cuda:{i}" for i in range(torch.cuda.device_count())]


def extension_build_root() -> Path:
    """Where CUDA extensions are built: shared by every evaluation (``EGG_BUILD_DIR``, default
    ``~/.cache/egg/builds``). Each build's name and folder carry a hash of its sources and flags,
    so different candidates never share a build, and an identical source reuses its finished one."""
    return Path(os.environ.get("EGG_BUILD_DIR", Path.home() / ".cache" / "egg" / "builds")).resolve()


def default_archive_dir(root: Path, candidate: Path) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return root / f"eval-{stamp}-{candidate.stem}-{secrets.token_hex(3)}"


class Harness:
    """Owns the worker processes; evaluates candidates one per worker at a time."""

    def __init__(self, device: str = "auto") -> None:
        self.device = resolve_device(device)
        self._workers: queue.Queue[Worker] = queue.Queue()
        for slot in _device_slots(self.device):
            self._workers.put(Worker(slot))

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        while not self._workers.empty():
            self._workers.get_nowait().stop()

    def evaluate(
        self,
        problem_path: str | Path,
        candidate_path: str | Path,
        options: EvalOptions | None = None,
        archive_dir: str | Path | None = None,
    ) -> Verdict:
        options = options or EvalOptions()
        started = time.perf_counter()
        problem_path, candidate_path = Path(problem_path), Path(candidate_path)
        info = inspect_problem(problem_path)
        shape_names = select_shape_sets(info, options.shapes)
        if not candidate_path.is_file():
            raise EggInputError(f"{candidate_path}: no such candidate file")
        archive = Path(archive_dir) if archive_dir else default_archive_dir(Path("runs"), candidate_path)
        archive.mkdir(parents=True, exist_ok=True)
        archived = archive / "candidate.py"
        if archived.resolve() != candidate_path.resolve():
            shutil.copyfile(candidate_path, archived)
        source = candidate_path.read_text(encoding="utf-8", errors="replace")
        seed = options.seed if options.seed is not None else secrets.randbelow(2**31 - 10**6)
        verdict = Verdict(
            accepted=False,
            device=self.device,
            shape_sets=shape_names,
            seed=seed,
            problem=str(problem_path),
            candidate=str(candidate_path),
            archive_dir=str(archive),
            egg_version=__version__,
        )
        verdict.backend = "unknown"
        pre = _precheck(source, candidate_path, info.init_params, options.static_checks)
        if not options.static_checks:
            verdict.notes.append("static checks were turned off for this evaluation")
        if pre is not None:
            verdict.stage_failed, verdict.reasons = pre
        else:
            verdict.backend = detect_backend(source)
            job = Job(
                problem_path=str(info.path),
                candidate_path=str(archived.resolve()),
                device="cpu",
                shape_sets=[(n, info.shape_sets[n]) for n in shape_names],
                trials=options.trials,
                timing_runs=options.timing_runs,
                warmup_runs=options.warmup_runs,
                seed=seed,
                tolerance=info.tolerance,
                allow_tf32=options.allow_tf32 or info.allow_tf32,
                time_compile=options.time_compile if options.time_compile is not None else self.device == "cuda",
                build_dir=str(extension_build_root()),
            )
            self._run(job, verdict, archive, options.timeout_s, options.build_timeout_s)
        verdict.wall_s = time.perf_counter() - started
        timed = sum(s.median_ms * s.runs for s in verdict.timing.values()) / 1e3
        verdict.harness_overhead_s = max(0.0, verdict.wall_s - timed)
        (archive / "verdict.json").write_text(verdict.model_dump_json(indent=2))
        log.info("eval.verdict", candidate=candidate_path.name, accepted=verdict.accepted, summary=verdict.summary())
        return verdict

    def profile_reference(self, problem_path: str | Path, options: EvalOptions | None = None) -> Verdict:
        """Eager and torch.compile timings of the reference alone (the baseline of a run)."""
        options = options or EvalOptions()
        info = inspect_problem(problem_path)
        shape_names = select_shape_sets(info, options.shapes)
        verdict = Verdict(accepted=False, device=self.device, shape_sets=shape_names, problem=str(problem_path))
        with tempfile.TemporaryDirectory(prefix="egg-ref-") as tmp:
            job = Job(
                problem_path=str(info.path),
                candidate_path="",
                device="cpu",
                shape_sets=[(n, info.shape_sets[n]) for n in shape_names],
                timing_runs=options.timing_runs,
                warmup_runs=options.warmup_runs,
                seed=options.seed or 0,
                allow_tf32=options.allow_tf32 or info.allow_tf32,
                time_compile=options.time_compile if options.time_compile is not None else self.device == "cuda",
                build_dir=tmp,
                reference_only=True,
            )
            self._run(job, verdict, Path(tmp), options.timeout_s)
        verdict.accepted = False  # a baseline is not a candidate
        return verdict

    def _run(self, job: Job, verdict: Verdict, archive: Path, timeout_s: float, build_timeout_s: float = 900.0) -> None:
        worker = self._workers.get()
        try:
            job.device = worker.device
            log_path = str((archive / "worker.log").resolve())
            try:
                raw = worker.run(job.model_dump(mode="json"), log_path, timeout_s, build_timeout_s)
                if _out_of_memory(raw) and worker.jobs_since_start > 1:
                    # Device memory earlier jobs left fragmented may be the cause, not this job:
                    # the same job once more in a fresh worker decides.
                    log.info("harness.oom_retry", job=job.candidate_path)
                    worker.kill()
                    raw = worker.run(job.model_dump(mode="json"), log_path, timeout_s, build_timeout_s)
            except WorkerTimeout as exc:
                verdict.stage_failed, verdict.reasons = "timeout", [str(exc)]
                return
            except WorkerDied as exc:
                verdict.stage_failed = "crash"
                verdict.reasons = [f"candidate crashed the worker process ({exc}); a fresh worker takes the next job"]
                return
            _apply_result(JobResult.model_validate(raw), verdict)
        finally:
            self._workers.put(worker)


def _out_of_memory(raw: dict[str, Any]) -> bool:
    return any("out of memory" in r or "OutOfMemoryError" in r for r in raw.get("reasons", []))


def _precheck(source: str, path: Path, init_params: list[str], static: bool) -> tuple[str, list[str]] | None:
    """Parse and statically check the candidate before any of it runs."""
    try:
        tree = parse_source(path, source)
    except EggInputError as exc:
        return "load", [str(exc).replace(f"{path}:", f"{path.name} line ", 1)]
    new_params = class_init_params(tree, "ModelNew")
    if new_params is None:
        return "load", [f"{path.name} defines no class ModelNew"]
    findings = check_candidate_source(source, path.name) if static else []
    if findings:
        return "static", [f.reason() for f in findings]
    if len(new_params) != len(init_params) and not any(p.startswith("*") for p in new_params):
        return "load", [
            f"ModelNew.__init__ takes ({', '.join(new_params)}) but Model.__init__ takes "
            f"({', '.join(init_params)}): the constructor signature must match"
        ]
    return None


def _apply_result(result: JobResult, verdict: Verdict) -> None:
    verdict.stage_failed = result.stage_failed
    verdict.reasons = result.reasons
    verdict.trials = result.trials
    verdict.timing = result.timing
    verdict.notes = verdict.notes + result.notes
    verdict.kernels_launched = result.kernels_launched
    verdict.timed_shape_set = result.timed_shape_set
    verdict.timing_comparable = verdict.device == "cuda"
    if "candidate" in result.timing:
        verdict.candidate_ms = result.timing["candidate"].median_ms
    if "eager" in result.timing:
        verdict.eager_ms = result.timing["eager"].median_ms
    if "compile" in result.timing:
        verdict.compile_ms = result.timing["compile"].median_ms
    if verdict.candidate_ms:
        if verdict.eager_ms:
            verdict.speedup_vs_eager = verdict.eager_ms / verdict.candidate_ms
        if verdict.compile_ms:
            verdict.speedup_vs_compile = verdict.compile_ms / verdict.candidate_ms
    if not verdict.timing_comparable and verdict.candidate_ms is not None:
        verdict.notes.append("CPU run (Triton interpreter): timings are reported but not comparable")
    verdict.accepted = result.stage_failed is None and not result.reasons


def evaluate_candidate(
    problem_path: str | Path,
    candidate_path: str | Path,
    options: EvalOptions | None = None,
    archive_dir: str | Path | None = None,
) -> Verdict:
    """Evaluate one candidate with a short-lived harness."""
    options = options or EvalOptions()
    with Harness(options.device) as harness:
        return harness.evaluate(problem_path, candidate_path, options, archive_dir)


def verdict_json(verdict: Verdict) -> str:
    return json.dumps(verdict.model_dump(mode="json"), indent=2)
