"""The evaluation harness: static checks, then a job for the judge, then a :class:`Verdict` and an archive.

Public API::

    with Harness(device="auto") as harness:
        verdict = harness.evaluate(problem_path, candidate_path, EvalOptions(), archive_dir)

    verdict = evaluate_candidate(problem_path, candidate_path)   # one-shot

Three kinds of process (README, *The evaluator*): this one (the caller's) only checks the candidate's
source statically, hands jobs to a **judge** per device and archives the verdicts; the judge runs
the reference and decides; each candidate runs in a **runner** process of its own. The harness
knows nothing of agents: it takes files and returns verdicts. ``evaluate`` is safe to call from
several threads; each call takes a free judge. ``workers`` judges per GPU (default 2: one
candidate's runner start and load, CUDA builds included, overlap another's GPU work; the judges
of a GPU never time at once, see :mod:`egg.evaluate.gpu_lock`), each pinned to its GPU with
``CUDA_VISIBLE_DEVICES``; on CPU ``workers`` judges (default 1). This is EGG's ``local``
executor (:mod:`egg.executor`).

A judge lost mid-evaluation (killed, crashed) re-queues the candidate once, on a fresh judge; a
second loss, or a judge that overran its own deadline, is reported as ``stage_failed:
"infrastructure"``: no verdict on the kernel was reached.

An evaluation that ran out of device memory while another evaluation shared its device, of this
harness or of another EGG process (:mod:`egg.evaluate.device_lease`), is re-run once, alone on the
device and with a new seed, and later evaluations of that problem run alone from the start
(:mod:`egg.evaluate.judge_slots`; alone here means apart from every other EGG process's evaluations
too: the lease exclusive); the verdict's notes say so. One that runs out of memory with the device
to itself is the candidate's own, as before. A judge whose evaluation ran out of memory is replaced
by a fresh process (what a failed attempt left reserved does not always go with its release). A
problem whose judge peaked above its share of the device (``peak_device_bytes``;
``JudgeSlots.note_peak``) runs its later evaluations alone among this harness's judges, before
anything runs out (the lease stays shared: another process's overlap is seen, and an out-of-memory
error then is re-run as above).

The problem file is copied once per harness into a private store, read-only, and the judge reads
only that copy (checking its hash); a later change to the file on disk does not change what this
harness judges against, and the verdict notes it.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

import structlog
from pydantic import BaseModel, Field

from egg import __version__
from egg.errors import EggInputError
from egg.evaluate.messages import BackendFlags, JudgeJob, JudgeResult
from egg.evaluate import device_lease
from egg.evaluate.devices import device_slots, resolve_device
from egg.evaluate.pins import Pinned, ProblemStore
from egg.evaluate.judge_slots import JudgeSlots
from egg.evaluate.pool import JudgeDied, JudgeProcess
from egg.evaluate.rejection import OWN_OUT_OF_MEMORY, is_out_of_memory
from egg.evaluate.static_checks import check_candidate_source, detect_backend
from egg.evaluate.verdict import NOT_JUDGED, Verdict
from egg.problem import ProblemInfo, class_init_params, parse_source, select_shape_sets

log = structlog.get_logger(__name__)
JUDGE_SLACK_S = 1800.0  # beyond the candidate's limits: the reference's own work (torch.compile, trials)
INFRASTRUCTURE = "infrastructure"


class EvalOptions(BaseModel):
    """How to evaluate; defaults match ``egg eval``'s."""

    device: Literal["auto", "cpu", "cuda"] = "auto"
    timeout_s: float = Field(default=300.0, gt=0)
    trials: int = Field(default=5, ge=1)
    timing_runs: int = Field(default=100, ge=1)
    warmup_runs: int = Field(default=10, ge=0)
    # None: every shape set the problem declares; "default", a name or a comma list restricts.
    shapes: str | None = None
    allow_tf32: bool = False  # TF32 for matmuls and convolutions (as the problem's ALLOW_TF32)
    strict_fp32: bool = False  # cuDNN TF32 off too (PyTorch's default leaves it on)
    seed: int | None = None
    time_compile: bool | None = None  # None: on GPU yes, on CPU no
    # Off only to study the dynamic defences on their own (tests, re-scoring research); a verdict
    # reached without static checks says so in its notes.
    static_checks: bool = True
    build_timeout_s: float = Field(default=900.0, gt=0)  # CUDA extension builds / nvcc checks
    gpu_time_split: bool = True  # profile a few calls for the generated/library GPU-time split
    match_eager: bool = False  # floating outputs must match eager's; off: or an exact run, as accurately


def extension_build_root() -> Path:
    """Where CUDA extensions are built: shared by every evaluation (``EGG_BUILD_DIR``, default
    ``~/.cache/egg/builds``). Each build's name and folder carry a hash of its sources and flags,
    so different candidates never share a build, and an identical source reuses its finished one."""
    return Path(os.environ.get("EGG_BUILD_DIR", Path.home() / ".cache" / "egg" / "builds")).resolve()


def default_archive_dir(root: Path, candidate: Path) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return root / f"eval-{stamp}-{candidate.stem}-{secrets.token_hex(3)}"


def select_shapes(info: ProblemInfo, spec: str | None) -> list[str]:
    """``--shapes``: None means every declared shape set (a one-shape kernel must not pass)."""
    return list(info.shape_sets) if spec is None or spec == "" else select_shape_sets(info, spec)


def backend_flags(options: EvalOptions, info: ProblemInfo) -> BackendFlags:
    """PyTorch's defaults (matmul TF32 off, cuDNN TF32 on), as users run it; ``--allow-tf32`` or a
    problem's ``ALLOW_TF32`` turn both on, ``--strict-fp32`` both off."""
    if options.allow_tf32 or info.allow_tf32:
        return BackendFlags(matmul_allow_tf32=True, cudnn_allow_tf32=True)
    if options.strict_fp32:
        return BackendFlags(matmul_allow_tf32=False, cudnn_allow_tf32=False)
    return BackendFlags()


def infrastructure_failure(verdict: Verdict, what: str) -> None:
    """Mark ``verdict`` as reached by no judge: the machinery failed, not the kernel."""
    verdict.accepted = False
    verdict.stage_failed = INFRASTRUCTURE
    verdict.reasons = [f"{NOT_JUDGED}: {what}"]
    log.warning("eval.infrastructure_failure", candidate=verdict.candidate, what=what)


class Harness:
    """Owns the judge processes; evaluates candidates one per judge at a time."""

    kind = "local"

    def __init__(self, device: str = "auto", workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise EggInputError(f"--workers: expected a number >= 1, got {workers}")
        self.device = resolve_device(device)
        self._all = [JudgeProcess(slot, gpu) for slot, gpu in reversed(device_slots(self.device, workers))]
        self._slots = JudgeSlots(self._all)
        if not self._all:
            raise EggInputError("--device cuda: no visible GPU (CUDA_VISIBLE_DEVICES)")
        self._problems = ProblemStore()

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for judge in self._all:
            judge.stop()
        self._problems.close()

    @property
    def capacity(self) -> int:
        """How many evaluations can run at once (judges)."""
        return len(self._all)

    def workers(self) -> list[dict[str, object]]:
        """Each judge: its device, process id (None before its first job) and jobs served."""
        return [{"device": j.label, "pid": j.pid, "jobs": j.jobs} for j in self._all]

    # -- problems --------------------------------------------------------------------------------
    def pin_problem(self, problem_path: str | Path) -> tuple[Pinned, str | None]:
        """The read-only copy of ``problem_path`` this harness judges against (made on first use)."""
        return self._problems.pin(problem_path)

    def pin_problems(self, paths: list[str | Path]) -> None:
        """Copy every problem before any candidate runs (a suite: no candidate can touch a later one)."""
        for p in paths:
            self.pin_problem(p)

    # -- evaluation ------------------------------------------------------------------------------
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
        pinned, changed = self.pin_problem(problem_path)
        info = pinned.info
        shape_names = select_shapes(info, options.shapes)
        if not candidate_path.is_file():
            raise EggInputError(f"{candidate_path}: no such candidate file")
        archive = Path(archive_dir) if archive_dir else default_archive_dir(Path("runs"), candidate_path)
        archive.mkdir(parents=True, exist_ok=True)
        archived = archive / "candidate.py"
        if archived.resolve() != candidate_path.resolve():
            shutil.copyfile(candidate_path, archived)
        if not (archive / "problem.py").exists():  # the archive holds what the candidate was judged against
            shutil.copyfile(pinned.store_path, archive / "problem.py")
            (archive / "problem.py").chmod(0o444)
        source = candidate_path.read_text(encoding="utf-8", errors="replace")
        seed = options.seed if options.seed is not None else secrets.randbelow(2**31 - 10**6)
        flags = backend_flags(options, info)
        verdict = Verdict(accepted=False, device=self.device, shape_sets=shape_names, seed=seed,
                          problem=str(problem_path), candidate=str(candidate_path), archive_dir=str(archive),
                          egg_version=__version__, problem_sha256=pinned.sha256,
                          backend_flags=flags.model_dump())
        verdict.backend = "unknown"
        if changed:
            verdict.notes.append(changed)
        pre = _precheck(source, candidate_path, info.init_params, options.static_checks)
        if not options.static_checks:
            verdict.notes.append("static checks were turned off for this evaluation")
        if pre is not None:
            verdict.stage_failed, verdict.reasons = pre
        else:
            verdict.backend = detect_backend(source)
            job = self._job(pinned, shape_names, options, seed, flags)
            job.candidate_path = str(archived.resolve())
            job.log_path = str((archive / "worker.log").resolve())
            Path(job.log_path).touch()
            self._run(job, verdict, options)
        verdict.wall_s = time.perf_counter() - started
        timed = sum(s.median_ms * s.runs for s in verdict.timing.values()) / 1e3
        verdict.harness_overhead_s = max(0.0, verdict.wall_s - timed)
        (archive / "verdict.json").write_text(verdict.model_dump_json(indent=2))
        log.info("eval.verdict", candidate=candidate_path.name, accepted=verdict.accepted, summary=verdict.summary())
        return verdict

    def profile_reference(self, problem_path: str | Path, options: EvalOptions | None = None) -> Verdict:
        """Eager and torch.compile timings of the reference alone (the baseline of a run)."""
        options = options or EvalOptions()
        pinned, _ = self.pin_problem(problem_path)
        shape_names = select_shapes(pinned.info, options.shapes)
        flags = backend_flags(options, pinned.info)
        verdict = Verdict(accepted=False, device=self.device, shape_sets=shape_names, problem=str(problem_path),
                          problem_sha256=pinned.sha256, backend_flags=flags.model_dump())
        job = self._job(pinned, shape_names, options, options.seed or 0, flags)
        job.reference_only = True
        self._run(job, verdict, options)
        verdict.accepted = False  # a baseline is not a candidate
        return verdict

    def _job(self, pinned: Pinned, shape_names: list[str], options: EvalOptions, seed: int,
             flags: BackendFlags) -> JudgeJob:
        info = pinned.info
        return JudgeJob(
            problem_path=pinned.store_path, problem_sha256=pinned.sha256, problem_name=info.name,
            shape_sets=[(n, info.shape_sets[n]) for n in shape_names], trials=options.trials,
            timing_runs=options.timing_runs, warmup_runs=options.warmup_runs, seed=seed, tolerance=info.tolerance,
            flags=flags, time_compile=options.time_compile if options.time_compile is not None else self.device == "cuda",
            build_dir=str(extension_build_root()), timeout_s=options.timeout_s, build_timeout_s=options.build_timeout_s,
            gpu_time_split=options.gpu_time_split, fp32_route=not options.match_eager,
        )

    def _run(self, job: JudgeJob, verdict: Verdict, options: EvalOptions) -> None:
        why_alone = self._slots.alone_reason(job.problem_sha256)
        alone = why_alone is not None
        device_wide = self._slots.device_wide(job.problem_sha256)
        if why_alone:
            verdict.notes.append(f"run alone on its device: {why_alone}")
        got = self._attempt(job, verdict, options, alone, device_wide)
        if got is None:
            return
        result, overlapped, label = got
        oom = next((r for r in result.reasons if is_out_of_memory(r)), None)
        if oom is not None and overlapped and not device_wide:
            # A neighbour's reference and buffers may have taken the memory (judge_slots): the verdict
            # must be the candidate's own, so it is reached again with the device to itself, on fresh
            # inputs (a new seed: the first attempt saw the old ones). A candidate that runs out of
            # memory alone too is rejected as before.
            self._slots.send_alone(job.problem_sha256, "an earlier evaluation of this problem ran out of device "
                                   "memory beside another one", device_wide=True)
            job.seed = verdict.seed = secrets.randbelow(2**31 - 10**6)
            verdict.notes.append(f"re-run alone on its device with a new seed: the first attempt ran out of device "
                                 f"memory while another evaluation shared the device ({oom[:160]})")
            log.warning("eval.rerun_alone", candidate=verdict.candidate, reason=oom[:160])
            got = self._attempt(job, verdict, options, True, True)
            if got is None:
                return
            result, overlapped = got[0], got[1]
        if not overlapped and result.stage_failed != INFRASTRUCTURE and any(is_out_of_memory(r) for r in result.reasons):
            verdict.notes.append(f"{OWN_OUT_OF_MEMORY}: no other EGG evaluation held it meanwhile")
        if why := self._slots.note_peak(job.problem_sha256, label, result.peak_device_bytes, result.device_total_bytes):
            verdict.notes.append(f"this problem's later evaluations run alone on their device: {why}")
            log.info("eval.heavy_problem", problem=verdict.problem, reason=why)
        _apply_result(result, verdict)

    def _attempt(self, job: JudgeJob, verdict: Verdict, options: EvalOptions, alone: bool,
                 device_wide: bool) -> tuple[JudgeResult, bool, str] | None:
        """One judge's answer, whether another job overlapped it on the device, and the device's
        label; None: the machinery failed (``verdict`` says so). ``alone``: no other job of this
        harness on the device; ``device_wide``: no other EGG process's evaluation either."""
        deadline = options.timeout_s + options.build_timeout_s + JUDGE_SLACK_S
        for attempt in (1, 2):
            with self._slots.take(alone) as taken:
                judge = taken.judge
                try:
                    job.device = judge.device
                    verdict.worker = f"local {judge.label}" + (", alone" if alone else "")
                    if not judge.alive:
                        judge.start()  # it names its device's lease
                    # other EGG processes on the device (device_lease): shared, or exclusive device-wide
                    with device_lease.hold(judge.lease, device_wide) as lease:
                        raw = judge.run(job.model_dump(mode="json"), deadline)
                    verdict.worker = f"local {judge.label}, judge pid {judge.pid}" + (", alone" if alone else "")
                    if any(is_out_of_memory(str(r)) for r in raw.get("reasons") or []):
                        _replace(judge, verdict)
                except JudgeDied as exc:  # a killed judge restarts on its next job
                    if exc.lost and attempt == 1:
                        verdict.notes.append(f"re-queued once: {exc}")
                        log.warning("eval.requeued", candidate=verdict.candidate, reason=str(exc))
                        continue
                    infrastructure_failure(verdict, f"{exc}" + ("; it was lost twice" if exc.lost else ""))
                    return None
            if note := device_lease.wait_note(lease):
                verdict.notes.append(note)
            return JudgeResult.model_validate(raw), taken.overlapped or lease.overlapped, judge.label
        return None


def _replace(judge: JudgeProcess, verdict: Verdict) -> None:
    """End a judge whose evaluation ran out of device memory; its slot starts a fresh one for the
    next job. What a failed attempt leaves reserved in the judge does not always go with its release
    (2026-12-05, H100 sweep: judges began their re-runs alone holding 24-28 GiB, and ran out of memory
    again), and a re-run alone must start from an empty device: a new process holds nothing."""
    pid = judge.pid
    judge.kill()
    verdict.notes.append(f"judge pid {pid} replaced after this attempt ran out of device memory (what it held goes "
                         "with its process)")
    log.info("eval.judge_replaced", candidate=verdict.candidate, pid=pid)


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


_COPIED = ("trials", "timing", "kernels_launched", "timed_shape_set", "launches_per_call", "floor_ms", "floor_bytes",
           "judge_clock_ms", "null_call_ms", "clock_sets", "checked_timed_calls", "generated_gpu_ms", "library_gpu_ms",
           "transport", "isolation", "ablation", "phase_s", "peak_device_bytes", "phase_peak_bytes", "start_device_bytes")


def _apply_result(result: JudgeResult, verdict: Verdict) -> None:
    verdict.stage_failed = result.stage_failed
    verdict.reasons = result.reasons
    for name in _COPIED:
        setattr(verdict, name, getattr(result, name))
    verdict.notes = verdict.notes + result.notes
    verdict.notes += [n for n in result.isolation if n.startswith("transport:")]
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

