"""One evaluation inside the worker process: load, correctness trials, timing.

Runs in the isolated worker (:mod:`egg.evaluate.worker`), never in the caller's process. The
order of operations is part of the anti-cheat design:

1. timers are captured (:mod:`egg.evaluate.timing` is imported before any candidate);
2. the candidate is imported from its file (Triton) or built (``load_inline``: unique name and
   build directory; ``nvcc -cubin`` compile check where there is no GPU);
3. ``Model`` and ``ModelNew`` are constructed after the same seed;
4. each trial draws fresh inputs from a fresh seed; reference and candidate get their own copies;
   the reference runs first, its outputs are copied aside and the memory it freed is poisoned;
   the candidate must launch a generated kernel on every call, leave its inputs unchanged, and
   match the reference in structure, shape, dtype, finiteness and tolerance;
5. a final trial refills the *same* input buffers with new values (a cache keyed on the input
   pointer or shape returns stale results there);
6. timing (GPU): eager, ``torch.compile`` and candidate on the same inputs, and every kept output
   of the timed candidate calls is re-verified.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, Field

from egg.evaluate import timing
from egg.evaluate.correctness import (
    clone_tree,
    compare_outputs,
    inputs_unchanged,
    tensors_of,
    to_device,
)
from egg.evaluate.cuda_build import CudaUnavailable, intercept_load_inline
from egg.evaluate.launches import LaunchLog
from egg.evaluate.poison import poison_freed_memory
from egg.evaluate.verdict import StageFailed, TimingStats, TrialResult
from egg.live import bind_parameters
from egg.problem import import_file, load_problem_module
from egg.tolerance import resolve_tolerances

KEEP_OUTPUT_BYTES = 2 * 1024**3
_FATAL_CUDA = (
    "illegal memory access",
    "CUDA error",
    "device-side assert",
    "Triton Error [CUDA]",
    "misaligned address",
    "unspecified launch failure",
    "an illegal instruction",
    "CUDA_ERROR",
)


class Job(BaseModel):
    problem_path: str
    candidate_path: str
    device: str
    shape_sets: list[tuple[str, dict[str, Any]]]
    trials: int = 5
    timing_runs: int = 100
    warmup_runs: int = 10
    seed: int = 0
    tolerance: Any = None
    allow_tf32: bool = False
    time_compile: bool = True
    build_dir: str
    reference_only: bool = False  # profile the reference (eager, torch.compile); no candidate


class JobResult(BaseModel):
    stage_failed: StageFailed | None = None
    reasons: list[str] = Field(default_factory=list)
    kernels_launched: list[str] = Field(default_factory=list)
    trials: list[TrialResult] = Field(default_factory=list)
    timing: dict[str, TimingStats] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    fatal_cuda: bool = False
    timed_s: float = 0.0
    timed_shape_set: str | None = None


class Rejected(Exception):
    def __init__(self, stage: StageFailed, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


def is_fatal_cuda(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}"
    return type(exc).__name__ == "AcceleratorError" or any(s in text for s in _FATAL_CUDA)


def describe_exception(exc: BaseException, candidate_path: str) -> str:
    """One line: exception type, message, and the candidate's file line where it was raised."""
    message = " ".join(str(exc).split())[:300]
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).name == Path(candidate_path).name:
        return f"SyntaxError: {exc.msg} ({Path(candidate_path).name} line {exc.lineno})"
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).resolve() == Path(candidate_path).resolve():
            code = f": `{frame.line.strip()}`" if frame.line else ""
            where = f" ({Path(candidate_path).name} line {frame.lineno}{code})"
            break
    return f"{type(exc).__name__}: {message}{where}"


class Evaluation:
    """State of one job: the loaded candidate, the launch log and the results so far."""

    def __init__(self, job: Job, launches: LaunchLog) -> None:
        self.job = job
        self.launches = launches
        self.device = torch.device(job.device)
        self.result = JobResult()
        self.tolerances = resolve_tolerances(job.tolerance)
        self.ext_calls: Any = None
        self.model_new_cls: Any = None
        self.all_kernels: set[str] = set()

    # -- loading -----------------------------------------------------------------------------
    def load_candidate(self) -> None:
        on_gpu = self.device.type == "cuda"
        try:
            with intercept_load_inline(Path(self.job.build_dir), on_gpu=on_gpu) as calls:
                module = import_file(self.job.candidate_path, "egg_candidate")
            self.ext_calls = calls
        except CudaUnavailable as exc:
            raise Rejected("compile" if not exc.check.ok else "correctness", exc.reason()) from None
        except SyntaxError as exc:
            raise Rejected("load", describe_exception(exc, self.job.candidate_path)) from None
        except Exception as exc:  # noqa: BLE001 - any import-time failure is the candidate's
            stage: StageFailed = "compile" if _is_build_error(exc) else "load"
            if is_fatal_cuda(exc):
                self.result.fatal_cuda = True
                stage = "crash"
            raise Rejected(stage, describe_exception(exc, self.job.candidate_path)) from None
        cls = getattr(module, "ModelNew", None)
        if cls is None or not isinstance(cls, type):
            raise Rejected("load", f"{Path(self.job.candidate_path).name} defines no class ModelNew")
        self.model_new_cls = cls

    def build_models(self, problem: Any) -> tuple[torch.nn.Module, torch.nn.Module]:
        torch.manual_seed(self.job.seed)
        init_inputs = problem.get_init_inputs()
        torch.manual_seed(self.job.seed)
        reference = problem.Model(*init_inputs).to(self.device)
        torch.manual_seed(self.job.seed)
        try:
            candidate = self.model_new_cls(*init_inputs)
            candidate = candidate.to(self.device)
        except Exception as exc:  # noqa: BLE001
            raise Rejected(
                "load", "ModelNew(*get_init_inputs()) failed: " + describe_exception(exc, self.job.candidate_path)
            ) from None
        if getattr(problem, "BIND_PARAMETERS", False):
            # Live-module problems: the reference holds the user's trained weights, which no seed
            # reproduces; the candidate computes with the reference's parameter objects instead.
            unbound = bind_parameters(candidate, reference)
            if unbound:
                raise Rejected(
                    "load",
                    f"ModelNew parameters {', '.join(unbound[:5])} match no parameter of the reference "
                    "by name and shape (this problem binds the reference's weights into ModelNew)",
                )
        return reference, candidate

    # -- running the candidate ------------------------------------------------------------------
    def call_candidate(self, model: torch.nn.Module, inputs: list[Any]) -> Any:
        """One forward call of the candidate with launch accounting and stream checks."""
        on_gpu = self.device.type == "cuda"
        stream_before = torch.cuda.current_stream(self.device) if on_gpu else None
        self.launches.reset(expected_stream=stream_before.cuda_stream if stream_before is not None else None)
        ext_before = _extension_counts(self.ext_calls)
        try:
            out = model(*inputs)
            if on_gpu:
                timing._cuda_synchronize()
        except Exception as exc:  # noqa: BLE001
            if is_fatal_cuda(exc):
                self.result.fatal_cuda = True
                raise Rejected("crash", describe_exception(exc, self.job.candidate_path)) from None
            raise Rejected("correctness", "forward raised " + describe_exception(exc, self.job.candidate_path)) from None
        ext_after = _extension_counts(self.ext_calls)
        self.launches.add_extension_calls({k: ext_after.get(k, 0) - ext_before.get(k, 0) for k in ext_after})
        if self.launches.side_stream:
            raise Rejected(
                "correctness",
                f"kernel {self.launches.side_stream[0]} was launched on a stream other than the caller's: "
                "work on a side stream escapes the timer",
            )
        if on_gpu and torch.cuda.current_stream(self.device) != stream_before:
            raise Rejected("correctness", "candidate changed the current CUDA stream and left it changed")
        if self.launches.total == 0:
            raise Rejected(
                "correctness",
                "no generated (Triton/CUDA) kernel launched during forward: the candidate is plain PyTorch",
            )
        self.all_kernels.update(self.launches.names)
        return out

    # -- correctness ------------------------------------------------------------------------------
    def trial(
        self, name: str, seed: int, reference: Any, candidate: Any, inputs: Any, in_place: bool = False
    ) -> TrialResult:
        """Run one trial on ``inputs`` (on the device): reference first, then candidate.

        The candidate gets its own copy, or with ``in_place`` the ``inputs`` buffers themselves
        (used to hand it the same pointers again with new contents).
        """
        ref_in = clone_tree(inputs)
        cand_in = inputs if in_place else clone_tree(inputs)
        snapshot = clone_tree(inputs)
        ref_out = reference(*ref_in)
        expected = clone_tree(ref_out)
        freed = [t.untyped_storage().nbytes() for t in tensors_of(ref_out) + tensors_of(ref_in)]
        del ref_out, ref_in
        poison_freed_memory(freed, self.device)
        out = self.call_candidate(candidate, cand_in)
        changed = inputs_unchanged(snapshot, cand_in)
        if changed:
            raise Rejected("correctness", f"shape set '{name}', seed {seed}: {changed}")
        cmp = compare_outputs(expected, out, self.tolerances)
        result = TrialResult(
            shape_set=name, seed=seed, passed=cmp.ok, max_abs_err=cmp.max_abs, max_rel_err=cmp.max_rel,
            detail=cmp.reason,
        )
        self.result.trials.append(result)
        if not cmp.ok:
            raise Rejected("correctness", f"shape set '{name}', seed {seed}: {cmp.reason}")
        return result

    def fresh_inputs(self, problem: Any, seed: int) -> Any:
        torch.manual_seed(seed)
        # Drawn on the evaluation device: KernelBench's get_inputs() builds multi-GB tensors with the
        # default (CPU) device, and drawing 2e9 values on the CPU then copying them took ~10 s per
        # trial on the H200 machine (level-1 #4: >100 s per candidate). Tensors a problem places
        # explicitly are moved as before; values depend on the device's generator, seeded alike.
        with torch.device(self.device):
            return to_device(problem.get_inputs(), self.device)

    def check_shape_set(self, index: int, name: str, overrides: dict[str, Any]) -> None:
        problem = load_problem_module(self.job.problem_path, overrides)
        reference, candidate = self.build_models(problem)
        base = self.job.seed + 1000 * (index + 1)
        for t in range(self.job.trials):
            self.trial(name, base + t, reference, candidate, self.fresh_inputs(problem, base + t))
        # Same buffers, new values: a result cached by pointer or by shape is now stale.
        buffers = self.fresh_inputs(problem, base + 500)
        self.trial(name, base + 500, reference, candidate, buffers, in_place=True)
        refill = self.fresh_inputs(problem, base + 501)
        for dst, src in zip(tensors_of(buffers), tensors_of(refill)):
            dst.copy_(src)
        self.trial(name, base + 501, reference, candidate, buffers, in_place=True)

    # -- timing -----------------------------------------------------------------------------------
    def time_reference(self, reference: Any, inputs: Any, runs: int, warmup: int) -> None:
        measure = timing.time_cuda if self.device.type == "cuda" else timing.time_cpu
        self.result.timing["eager"] = timing.stats(measure(lambda: reference(*inputs), runs, warmup))
        if self.job.time_compile:
            try:
                compiled = _compiled_reference(self.job, reference)
                self.result.timing["compile"] = timing.stats(measure(lambda: compiled(*inputs), runs, warmup))
            except Exception as exc:  # noqa: BLE001 - a reference torch.compile cannot handle is not the candidate's fault
                note = f"torch.compile of the reference failed: {type(exc).__name__}: {exc}"
                self.result.notes.append(" ".join(note.split())[:300])
        else:
            self.result.notes.append("torch.compile timing skipped (CPU run: timings are not comparable)")

    def time_all(self) -> None:
        name, overrides = self.job.shape_sets[0]
        self.result.timed_shape_set = name
        problem = load_problem_module(self.job.problem_path, overrides)
        if self.job.reference_only:
            torch.manual_seed(self.job.seed)
            reference, candidate = problem.Model(*problem.get_init_inputs()).to(self.device), None
        else:
            reference, candidate = self.build_models(problem)
        seed = self.job.seed + 99_999
        inputs = self.fresh_inputs(problem, seed)
        expected = clone_tree(reference(*clone_tree(inputs)))
        cand_inputs, snapshot = clone_tree(inputs), clone_tree(inputs)
        on_gpu = self.device.type == "cuda"
        runs = self.job.timing_runs if on_gpu else min(self.job.timing_runs, 3)
        warmup = self.job.warmup_runs if on_gpu else 1
        measure = timing.time_cuda if on_gpu else timing.time_cpu

        t0 = timing.now()
        self.time_reference(reference, inputs, runs, warmup)
        if candidate is None:
            self.result.timed_s = timing.now() - t0
            return
        kept: dict[int, Any] = {}
        out_bytes = sum(t.numel() * t.element_size() for t in tensors_of(expected)) or 1
        stride = max(1, (out_bytes * runs) // KEEP_OUTPUT_BYTES + 1)

        def keep(i: int, out: Any) -> None:
            if i % stride == 0 or i == runs - 1:
                kept[i] = out

        self.launches.reset(self.launches.expected_stream)
        ext_before = _extension_counts(self.ext_calls)
        cand = measure(lambda: candidate(*cand_inputs), runs, warmup, keep)
        self.result.timed_s = timing.now() - t0
        self.result.timing["candidate"] = timing.stats(cand)
        ext_after = _extension_counts(self.ext_calls)
        self.launches.add_extension_calls({k: ext_after.get(k, 0) - ext_before.get(k, 0) for k in ext_after})
        if self.launches.total < runs or self.launches.side_stream:
            raise Rejected(
                "timing",
                "timed calls launched no generated kernel or launched on a side stream "
                f"({self.launches.total} launches over {runs + warmup}+ calls)",
            )
        changed = inputs_unchanged(snapshot, cand_inputs)
        if changed:
            raise Rejected("timing", f"during timing: {changed}")
        for i, out in sorted(kept.items()):
            cmp = compare_outputs(expected, out, self.tolerances)
            if not cmp.ok:
                raise Rejected("timing", f"timed call {i + 1} of {runs} returned a wrong result: {cmp.reason}")
        self.all_kernels.update(self.launches.names)


# torch.compile of the reference, kept per worker process and problem/shape set: compiling is the
# dominant cost of an evaluation (tens of seconds) and its result does not depend on the
# candidate. Each evaluation still *times* it anew, side by side with eager and the candidate.
_COMPILED: dict[tuple[str, str, str], Any] = {}


def _compiled_reference(job: Job, reference: torch.nn.Module) -> Any:
    source = Path(job.problem_path).read_bytes()
    key = (job.problem_path, str(hash(source)), job.shape_sets[0][0])
    if key not in _COMPILED:
        if _COMPILED:  # a new problem (a suite shares the worker): let the last one's modules go
            _COMPILED.clear()
            torch._dynamo.reset()
        _COMPILED[key] = torch.compile(reference)
    return _COMPILED[key]


def _is_build_error(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}"
    return any(s in text for s in ("Error building extension", "ninja", "nvcc", "CompilationError", "compile"))


def _extension_counts(calls: Any) -> dict[str, int]:
    if calls is None:
        return {}
    counter = getattr(calls, "launch_counts", None)
    return dict(counter()) if callable(counter) else {}


def run_job(job: Job, launches: LaunchLog) -> JobResult:
    """Evaluate one candidate; every outcome is a :class:`JobResult`, never an exception."""
    ev = Evaluation(job, launches)
    allow_tf32 = job.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    torch.backends.cudnn.allow_tf32 = allow_tf32
    identity = timing.timer_identity()
    try:
        with torch.no_grad():
            if job.reference_only:
                ev.time_all()
                return ev.result
            ev.load_candidate()
            for index, (name, overrides) in enumerate(job.shape_sets):
                ev.check_shape_set(index, name, overrides)
            _check_tamper(identity)
            ev.time_all()
            _check_tamper(identity)
    except Rejected as rej:
        ev.result.stage_failed = rej.stage
        ev.result.reasons.append(rej.reason)
    except Exception as exc:  # noqa: BLE001 - anything else is still a verdict, not a harness crash
        fatal = is_fatal_cuda(exc)
        ev.result.fatal_cuda = ev.result.fatal_cuda or fatal
        ev.result.stage_failed = "crash" if fatal else "correctness"
        ev.result.reasons.append(describe_exception(exc, job.candidate_path))
    try:
        _check_tamper(identity)
    except Rejected as rej:
        ev.result.stage_failed = ev.result.stage_failed or rej.stage
        ev.result.reasons.append(rej.reason)
    ev.result.kernels_launched = sorted(ev.all_kernels)
    return ev.result


def _check_tamper(identity: dict[str, Any]) -> None:
    now = timing.timer_identity()
    changed = [key for key, value in identity.items() if now.get(key) is not value and now.get(key) != value]
    if changed:
        raise Rejected("static", f"candidate replaced {', '.join(changed)} at run time (timer/precision tampering)")
