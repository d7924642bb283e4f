"""``OUT/report.html`` for a KernelBench suite directory (``kernelbench_adapter``'s output).

Input, read defensively (the adapter owns these files; unknown keys are ignored):

* ``OUT/suite.json``: ``{"mode", "level", "out_dir", "created", "updated", "pending": [id],
  "metrics": {"total", "compiled", "correct", "compilation_rate", "correctness_rate",
  "timing_comparable", "vs_eager": {"fast_p": {"1.0": f}, "geo_mean_speedup", ...},
  "vs_compile": {...}}, "results": [SampleResult]}`` where a result has ``problem_id``,
  ``problem_name``, ``sample_id``, ``compiled``, ``correctness``, ``stage_failed``, ``reasons``,
  ``candidate_ms``, ``speedup_vs_eager``, ``speedup_vs_compile``, ``timing_comparable``,
  ``device`` and ``artifact`` (the problem's run directory, or a verdict archive);
* else ``OUT/results.json`` in KernelBench's ``eval_results.json`` shape
  (``{"<id>": [{"sample_id", "compiled", "correctness", "speedup_vs_eager", ...}]}``).

Metrics come from ``suite.json`` when it has them, else they are computed here with
KernelBench's definitions (fast_p = correct and speedup > p, over all attempted problems;
geometric mean over correct problems with a timing). Sample 0 of each problem is scored.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import structlog
from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, Field

from egg.report.charts import Bar, speedup_bars
from egg.report.html import environment, regenerate

log = structlog.get_logger(__name__)

THRESHOLDS = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)


class ProblemResult(BaseModel):
    model_config = ConfigDict(extra="ignore")
    problem_id: int
    problem_name: str = ""
    sample_id: int = 0
    compiled: bool = False
    correctness: bool = False
    stage_failed: str | None = None
    reasons: list[str] = Field(default_factory=list)
    candidate_ms: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    timing_comparable: bool = False
    device: str | None = None
    artifact: str | None = None

    @property
    def label(self) -> str:
        name = self.problem_name.removesuffix(".py")
        return name if name.startswith(f"{self.problem_id}_") else f"{self.problem_id} {name}".strip()


class SuiteInput(BaseModel):
    model_config = ConfigDict(extra="ignore")
    mode: str = "?"
    level: int | None = None
    out_dir: str = ""
    created: str = ""
    updated: str = ""
    egg_version: str = ""
    pending: list[int] = Field(default_factory=list)
    metrics: dict[str, Any] = Field(default_factory=dict)
    results: list[ProblemResult] = Field(default_factory=list)


def is_suite_dir(path: Path) -> bool:
    if (path / "suite.json").is_file():
        return True
    return (path / "results.json").is_file() and not (path / "report.json").is_file()


def load_suite(suite_dir: Path) -> SuiteInput:
    if (suite_dir / "suite.json").is_file():
        return SuiteInput.model_validate_json((suite_dir / "suite.json").read_text(encoding="utf-8"))
    raw = json.loads((suite_dir / "results.json").read_text(encoding="utf-8"))
    results = [ProblemResult.model_validate({"problem_id": int(pid), **entry})
               for pid, entries in raw.items() for entry in entries]
    return SuiteInput(out_dir=str(suite_dir), results=results)


def _fast_p(rows: list[ProblemResult], key: str) -> dict[str, Any]:
    speedups = [getattr(r, key) if r.correctness else None for r in rows]
    n = len(rows)
    timed = [s for s in speedups if s]
    geo = math.exp(sum(math.log(s) for s in timed) / len(timed)) if timed else 0.0
    return {"fast_p": {str(p): (sum(1 for s in speedups if s and s > p) / n if n else 0.0) for p in THRESHOLDS},
            "geo_mean_speedup": geo, "timed_correct": len(timed),
            "untimed_correct": sum(r.correctness for r in rows) - len(timed)}


def metrics_of(suite: SuiteInput, scored: list[ProblemResult]) -> dict[str, Any]:
    """suite.json's metrics if complete, else computed from the sample-0 rows."""
    m = suite.metrics
    if m.get("vs_eager", {}).get("fast_p") and "total" in m:
        return m
    n = len(scored)
    return {"total": n, "compiled": sum(r.compiled for r in scored), "correct": sum(r.correctness for r in scored),
            "compilation_rate": sum(r.compiled for r in scored) / n if n else 0.0,
            "correctness_rate": sum(r.correctness for r in scored) / n if n else 0.0,
            "timing_comparable": all(r.timing_comparable for r in scored if r.correctness)
            and not any(r.device == "cpu" for r in scored),
            "vs_eager": _fast_p(scored, "speedup_vs_eager"), "vs_compile": _fast_p(scored, "speedup_vs_compile")}


def _link(suite_dir: Path, artifact: str | None, regenerate_runs: bool) -> tuple[str | None, str]:
    """A relative link to the problem's report.html (regenerated from report.json) or verdict.json."""
    if not artifact:
        return None, ""
    folder = Path(artifact)
    if not folder.is_absolute():
        folder = suite_dir / folder
    if (folder / "report.json").is_file():
        if regenerate_runs or not (folder / "report.html").is_file():
            try:
                regenerate(folder)
            except Exception as exc:  # noqa: BLE001 - one bad run must not break the suite page
                log.warning("report.run_html_failed", run_dir=str(folder), error=repr(exc))
        if (folder / "report.html").is_file():
            return os.path.relpath(folder / "report.html", suite_dir), "report"
    if (folder / "verdict.json").is_file():
        return os.path.relpath(folder / "verdict.json", suite_dir), "verdict"
    return None, ""


def render_suite_html(suite_dir: str | Path, *, regenerate_runs: bool = True) -> str:
    suite_dir = Path(suite_dir)
    suite = load_suite(suite_dir)
    by_problem: dict[int, ProblemResult] = {}
    for r in sorted(suite.results, key=lambda r: (r.problem_id, r.sample_id)):
        if r.sample_id == 0 or r.problem_id not in by_problem:
            by_problem.setdefault(r.problem_id, r)
    scored = [by_problem[k] for k in sorted(by_problem)]
    metrics = metrics_of(suite, scored)
    comparable = bool(metrics.get("timing_comparable"))
    rows = []
    for r in sorted(suite.results, key=lambda r: (r.problem_id, r.sample_id)):
        href, kind = _link(suite_dir, r.artifact, regenerate_runs)
        rows.append({"r": r, "href": href, "kind": kind, "scored": by_problem.get(r.problem_id) is r})
    bars = [Bar(r.label, r.speedup_vs_eager if r.correctness else None,
                r.speedup_vs_compile if r.correctness else None, r.correctness,
                "" if r.correctness else f"failed at {r.stage_failed or '?'}") for r in scored]
    thresholds = sorted({*metrics["vs_eager"]["fast_p"], *metrics["vs_compile"]["fast_p"]}, key=float)
    title = f"level {suite.level}" if suite.level is not None else suite_dir.name
    return environment().get_template("suite.html.j2").render(
        suite=suite, title=title, metrics=metrics, comparable=comparable, thresholds=thresholds,
        rows=rows, chart=Markup(speedup_bars(bars)) if bars else None, dir_name=suite_dir.name,
    )


def write_suite_report(suite_dir: str | Path, *, regenerate_runs: bool = True) -> Path:
    """Write ``OUT/report.html`` (and each problem's run report); returns its path."""
    path = Path(suite_dir) / "report.html"
    path.write_text(render_suite_html(suite_dir, regenerate_runs=regenerate_runs), encoding="utf-8")
    log.info("report.suite_html_written", path=str(path))
    return path
