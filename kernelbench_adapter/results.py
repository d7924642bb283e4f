"""One evaluated sample of one problem, and its KernelBench-compatible form.

KernelBench's ``scripts/eval_from_generations.py`` writes ``eval_results.json`` as
``{"<problem_id>": [{"sample_id", "compiled", "correctness", "metadata", "runtime",
"runtime_stats"}, ...]}`` (fields of ``KernelExecResult`` in ``src/kernelbench/eval.py``; times in
ms, ``runtime`` is the mean). :meth:`SampleResult.kernelbench_entry` writes exactly those keys,
plus ``ref_runtime``/``ref_runtime_stats`` (also KernelExecResult fields: the eager reference) and
EGG's own: ``speedup_vs_eager``, ``speedup_vs_compile``, ``stage_failed``, ``reasons`` ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from egg import __version__
from egg.errors import EggInputError
from egg.evaluate.verdict import TimingStats, Verdict
from egg.graph.records import candidate_dir
from egg.report.model import RunReport
from kernelbench_adapter.dataset import KBProblem

# stage_failed values beyond the harness's own (egg.evaluate.verdict.StageFailed):
MISSING = "missing"  # no generation file for this problem/sample
ERROR = "error"  # the run or evaluation raised (bad problem file, crash of the tool itself)
NONE_ACCEPTED = "no_candidate_accepted"  # an optimisation run ended with every candidate rejected

_COMPILED_STAGES = {None, "correctness", "timing"}  # got past load/compile: KernelBench's "compiled"
_METADATA_KEY = {  # KernelBench's metadata keys for the same kinds of failure
    "load": "compilation_error",
    "compile": "compilation_error",
    "correctness": "correctness_issue",
    "crash": "runtime_error",
    "timeout": "runtime_error",
    "timing": "runtime_error",
    "static": "egg_static_check",
    "infrastructure": "egg_infrastructure_error",  # no verdict: the worker was lost twice (not the kernel's fault)
}


class SampleResult(BaseModel):
    level: int
    problem_id: int
    problem_name: str
    sample_id: int = 0
    compiled: bool = False
    correctness: bool = False
    stage_failed: str | None = None
    reasons: list[str] = Field(default_factory=list)
    candidate_ms: float | None = None  # medians, as the harness reports them
    eager_ms: float | None = None
    compile_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    timing_comparable: bool = False
    runtime_stats: dict[str, Any] = Field(default_factory=dict)
    ref_runtime_stats: dict[str, Any] = Field(default_factory=dict)
    backend: str | None = None
    device: str | None = None
    artifact: str | None = Field(default=None, description="run directory or verdict archive")
    run_wall_s: float | None = Field(default=None, description="optimize mode: seconds the problem's run took")
    egg_version: str = __version__

    def kernelbench_entry(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {"device": self.device, "backend": self.backend, "egg_version": self.egg_version}
        if self.artifact:
            metadata["egg_artifact"] = self.artifact
        if self.stage_failed:
            metadata[_METADATA_KEY.get(self.stage_failed, "other_error")] = "; ".join(self.reasons) or self.stage_failed
        return {
            "sample_id": self.sample_id,
            "compiled": self.compiled,
            "correctness": self.correctness,
            "metadata": metadata,
            "runtime": self.runtime_stats.get("mean", -1.0),
            "runtime_stats": self.runtime_stats,
            "ref_runtime": self.ref_runtime_stats.get("mean", -1.0),
            "ref_runtime_stats": self.ref_runtime_stats,
            "speedup_vs_eager": self.speedup_vs_eager,
            "speedup_vs_compile": self.speedup_vs_compile,
            "timing_comparable": self.timing_comparable,
            "stage_failed": self.stage_failed,
            "reasons": self.reasons,
            "problem_name": self.problem_name,
        }

    def line(self) -> str:
        if self.correctness:
            sp = f"{self.speedup_vs_eager:.2f}x vs eager" if self.speedup_vs_eager else "correct"
            return f"{self.problem_id} {self.problem_name}: {sp}"
        first = self.reasons[0] if self.reasons else ""
        return f"{self.problem_id} {self.problem_name}: failed at {self.stage_failed}: {first}"


def _stats(stats: TimingStats | None, device: str | None) -> dict[str, Any]:
    """KernelBench's runtime_stats keys (mean, min, num_trials, device) plus our median/p20/p80."""
    if stats is None:
        return {}
    return {"mean": stats.mean_ms, "min": stats.min_ms, "median": stats.median_ms, "p20": stats.p20_ms,
            "p80": stats.p80_ms, "num_trials": stats.runs, "device": device}


def from_verdict(problem: KBProblem, sample_id: int, verdict: Verdict) -> SampleResult:
    return SampleResult(
        level=problem.level,
        problem_id=problem.problem_id,
        problem_name=problem.name,
        sample_id=sample_id,
        compiled=verdict.stage_failed in _COMPILED_STAGES,
        correctness=verdict.accepted,
        stage_failed=None if verdict.accepted else (verdict.stage_failed or "rejected"),
        reasons=list(verdict.reasons),
        candidate_ms=verdict.candidate_ms,
        eager_ms=verdict.eager_ms,
        compile_ms=verdict.compile_ms,
        speedup_vs_eager=verdict.speedup_vs_eager if verdict.accepted else None,
        speedup_vs_compile=verdict.speedup_vs_compile if verdict.accepted else None,
        timing_comparable=verdict.timing_comparable,
        runtime_stats=_stats(verdict.timing.get("candidate"), verdict.device),
        ref_runtime_stats=_stats(verdict.timing.get("eager"), verdict.device),
        backend=verdict.backend,
        device=verdict.device,
        artifact=verdict.archive_dir,
    )


def from_report(problem: KBProblem, report: RunReport) -> SampleResult:
    """An optimisation run's answer for a problem: its best accepted candidate, or a failure."""
    run_dir = Path(report.run_dir)
    best = report.best
    if best is not None:
        verdict_path = candidate_dir(run_dir, best.reused_verdict_of or best.id) / "verdict.json"
        if verdict_path.is_file():
            result = from_verdict(problem, 0, Verdict.model_validate_json(verdict_path.read_text()))
            result.artifact, result.run_wall_s = str(run_dir), report.wall_s
            # the run's references (egg.graph.records.references: the faster of the job's and the baseline's)
            result.eager_ms, result.compile_ms = best.eager_ms, best.compile_ms
            result.speedup_vs_eager, result.speedup_vs_compile = best.speedup_vs_eager, best.speedup_vs_compile
            return result
        return SampleResult(
            level=problem.level, problem_id=problem.problem_id, problem_name=problem.name, compiled=True,
            correctness=True, candidate_ms=best.candidate_ms, eager_ms=best.eager_ms, compile_ms=best.compile_ms,
            speedup_vs_eager=best.speedup_vs_eager, speedup_vs_compile=best.speedup_vs_compile,
            timing_comparable=best.timing_comparable, device=report.device, artifact=str(run_dir),
            run_wall_s=report.wall_s,
        )
    reasons = [
        f"{item['id'] or '(no candidate)'} [{item['agent']}] {item['stage_failed']}: {(item['reasons'] or [''])[0]}"
        for item in report.rejected
    ] or [report.outcome]
    compiled = any(c.stage_failed in _COMPILED_STAGES for c in report.candidates)
    return SampleResult(
        level=problem.level, problem_id=problem.problem_id, problem_name=problem.name, compiled=compiled,
        stage_failed=NONE_ACCEPTED, reasons=reasons, device=report.device, artifact=str(run_dir),
        run_wall_s=report.wall_s,
    )


def failure(problem: KBProblem, sample_id: int, stage: str, reason: str, artifact: str | None = None) -> SampleResult:
    return SampleResult(
        level=problem.level, problem_id=problem.problem_id, problem_name=problem.name, sample_id=sample_id,
        stage_failed=stage, reasons=[" ".join(reason.split())], artifact=artifact,
    )


def failure_from_exception(problem: KBProblem, sample_id: int, exc: BaseException, artifact: str | None = None) -> SampleResult:
    """A sample whose run or evaluation raised: recorded as a failure with the reason, never skipped."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    reason = text if isinstance(exc, EggInputError) else f"{type(exc).__name__}: {text}"
    return failure(problem, sample_id, ERROR, reason[:500], artifact)
