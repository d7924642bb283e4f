"""The suite's output directory: per-sample records, and the two summary files kept current.

Layout (one level and one mode per OUT)::

    OUT/suite.json                          SuiteReport: settings, metrics, every sample's result
    OUT/results.json                        KernelBench eval_results.json shape: {id: [sample, ...]}
    OUT/level{L}/{id}_{name}/               optimize mode: the run directory of the problem
    OUT/level{L}/{id}_{name}/kb_result.json     its SampleResult
    OUT/level{L}/{id}_{name}/sample_{S}/    rescore mode: the harness's archive (candidate.py,
                                            verdict.json, worker.log) and kb_result.json

Both summary files are rewritten (atomically) after every sample and are rebuilt from the
``kb_result.json`` files on disk, so a killed suite loses nothing it finished and a resumed one
reports every problem this OUT has seen, not only those selected this time.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import structlog
from pydantic import BaseModel, Field

from egg import __version__
from egg.errors import EggInputError
from kernelbench_adapter.dataset import KBProblem
from kernelbench_adapter.metrics import SuiteMetrics, suite_metrics
from kernelbench_adapter.results import MISSING, SampleResult

log = structlog.get_logger(__name__)

Mode = Literal["optimize", "rescore"]
RECORD = "kb_result.json"
METRICS_SAMPLE = 0  # like benchmark_eval_analysis.py, metrics use sample 0 of each problem


class SuiteReport(BaseModel):
    egg_version: str = __version__
    mode: Mode
    level: int
    root: str
    out_dir: str
    candidates_dir: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict, description="RunConfig (optimize) or EvalOptions (rescore)")
    created: str
    updated: str
    selected: list[int] = Field(default_factory=list, description="problem ids selected by the latest invocation")
    pending: list[int] = Field(default_factory=list, description="selected ids without a result yet")
    metrics_sample_id: int = METRICS_SAMPLE
    metrics: SuiteMetrics
    results: list[SampleResult] = Field(default_factory=list)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class SuiteStore:
    """Opens (or resumes) OUT and keeps its records and summaries."""

    def __init__(self, out: str | Path, *, mode: Mode, level: int, root: str | Path, resume: bool,
                 settings: dict[str, Any], candidates_dir: str | Path | None = None) -> None:
        self.out = Path(out).resolve()
        self.mode, self.level = mode, level
        self.root = str(Path(root).resolve())
        self.candidates_dir = str(Path(candidates_dir).resolve()) if candidates_dir else None
        self.created = _now()
        self.settings = settings
        suite_path = self.out / "suite.json"
        if resume and suite_path.is_file():
            self._check_resumable(SuiteReport.model_validate_json(suite_path.read_text()))
        elif self.out.exists() and any(self.out.iterdir()) and not resume:
            raise EggInputError(f"--out {self.out}: already exists and is not empty (add --resume to continue it)")
        self.level_dir.mkdir(parents=True, exist_ok=True)
        self.records: dict[tuple[int, int], SampleResult] = {}
        for path in [*self.level_dir.glob(f"*/{RECORD}"), *self.level_dir.glob(f"*/sample_*/{RECORD}")]:
            record = SampleResult.model_validate_json(path.read_text())
            self.records[(record.problem_id, record.sample_id)] = record
        self.selected: list[int] = []

    def _check_resumable(self, previous: SuiteReport) -> None:
        for what, before, now in (
            ("mode", previous.mode, self.mode),
            ("level", previous.level, self.level),
            ("--candidates", previous.candidates_dir, self.candidates_dir),
        ):
            if before != now:
                raise EggInputError(f"--resume {self.out}: this suite was started with {what} {before}, not {now}")
        self.created = previous.created
        self.settings = previous.settings  # a resumed suite keeps the settings it started with

    @property
    def level_dir(self) -> Path:
        return self.out / f"level{self.level}"

    def problem_dir(self, problem: KBProblem) -> Path:
        return self.level_dir / problem.stem

    def sample_dir(self, problem: KBProblem, sample_id: int) -> Path:
        return self.problem_dir(problem) / f"sample_{sample_id}"

    def record_path(self, problem: KBProblem, sample_id: int) -> Path:
        base = self.problem_dir(problem) if self.mode == "optimize" else self.sample_dir(problem, sample_id)
        return base / RECORD

    def done(self, problem: KBProblem, sample_id: int = 0) -> SampleResult | None:
        path = self.record_path(problem, sample_id)
        return SampleResult.model_validate_json(path.read_text()) if path.is_file() else None

    def save(self, result: SampleResult, problem: KBProblem) -> SuiteReport:
        path = self.record_path(problem, result.sample_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, result.model_dump_json(indent=2))
        self.records[(result.problem_id, result.sample_id)] = result
        return self.write_summaries()

    def forget(self, problem: KBProblem, sample_id: int = 0) -> None:
        """Drop a stale record (a failed attempt that is about to be retried)."""
        self.record_path(problem, sample_id).unlink(missing_ok=True)

    def report(self) -> SuiteReport:
        ordered = [self.records[k] for k in sorted(self.records)]
        problem_ids = sorted({r.problem_id for r in ordered})
        scored = [
            self.records.get((pid, METRICS_SAMPLE))
            or SampleResult(level=self.level, problem_id=pid, problem_name="", stage_failed=MISSING,
                            reasons=[f"no result for sample {METRICS_SAMPLE}"])
            for pid in problem_ids
        ]
        correct = [r for r in scored if r.correctness]
        metrics = suite_metrics(
            compiled=[r.compiled for r in scored],
            correct=[r.correctness for r in scored],
            speedup_vs_eager=[r.speedup_vs_eager for r in scored],
            speedup_vs_compile=[r.speedup_vs_compile for r in scored],
            timing_comparable=all(r.timing_comparable for r in correct) and not any(r.device == "cpu" for r in scored),
        )
        return SuiteReport(
            mode=self.mode, level=self.level, root=self.root, out_dir=str(self.out),
            candidates_dir=self.candidates_dir, settings=self.settings, created=self.created, updated=_now(),
            selected=self.selected, pending=[i for i in self.selected if i not in problem_ids],
            metrics=metrics, results=ordered,
        )

    def kernelbench_results(self) -> dict[str, list[dict[str, Any]]]:
        """``eval_results.json`` as KernelBench's eval_from_generations.py writes it (sorted ids)."""
        results: dict[str, list[dict[str, Any]]] = {}
        for key in sorted(self.records):
            results.setdefault(str(key[0]), []).append(self.records[key].kernelbench_entry())
        return results

    def write_summaries(self) -> SuiteReport:
        report = self.report()
        self.out.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.out / "results.json", json.dumps(self.kernelbench_results(), indent=4))
        _write_atomic(self.out / "suite.json", report.model_dump_json(indent=2))
        log.info("kernelbench.checkpoint", out=str(self.out), problems=report.metrics.total,
                 correct=report.metrics.correct, pending=len(report.pending))
        return report
