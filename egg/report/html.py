"""``RUN_DIR/report.html``: a self-contained page (inline CSS and SVG, no scripts, no network).

Built from ``report.json`` (a :class:`~egg.report.model.RunReport`) plus files of the run
directory: each candidate's ``verdict.json`` (correctness trials), ``best.py`` (the best kernel,
highlighted server-side) and ``problem.py`` (its docstring names the problem). Candidate code,
structures and rejection reasons are untrusted text: the Jinja environment autoescapes everything,
and the only markup inserted as-is is built here from escaped pieces (code, SVG).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from egg import pyast
from egg.evaluate.verdict import TrialResult, Verdict
from egg.graph.records import CandidateRecord
from egg.report.charts import STAGE_COLORS, STAGE_NAMES, ChartPoint, progress_chart
from egg.report.highlight import highlight_python, line_numbers
from egg.report.model import RunReport

log = structlog.get_logger(__name__)

TEMPLATES = Path(__file__).parent / "templates"
NOT_COMPARABLE = "not comparable (CPU interpreter)"
STAGE_SHORT = {"algorithm_design": "1 · design", "hardware_tuning": "2 · tuning"}


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["ms"] = lambda v: "—" if v is None else f"{v:.4g} ms"
    env.filters["x"] = lambda v: "—" if not v else (f"{v:.2f}x" if v >= 0.1 else f"{v:.2g}x")
    env.filters["num"] = lambda v: "—" if v is None else f"{v:,}"
    env.filters["err"] = lambda v: "—" if v is None else f"{v:.3g}"
    return env


@dataclass
class TrialSummary:
    total: int = 0
    passed: int = 0
    shape_sets: list[str] = field(default_factory=list)
    max_abs_err: float | None = None
    max_rel_err: float | None = None

    @classmethod
    def of(cls, trials: list[TrialResult]) -> TrialSummary:
        abs_errs = [t.max_abs_err for t in trials if t.max_abs_err is not None]
        rel_errs = [t.max_rel_err for t in trials if t.max_rel_err is not None]
        return cls(total=len(trials), passed=sum(t.passed for t in trials),
                   shape_sets=list(dict.fromkeys(t.shape_set for t in trials)),
                   max_abs_err=max(abs_errs) if abs_errs else None,
                   max_rel_err=max(rel_errs) if rel_errs else None)

    @property
    def text(self) -> str:
        return f"{self.passed}/{self.total}" if self.total else "—"


def read_verdict(run_dir: Path, record: CandidateRecord) -> Verdict | None:
    """The verdict behind a record (a reused verdict lives with the candidate first evaluated)."""
    path = run_dir / "candidates" / (record.reused_verdict_of or record.id) / "verdict.json"
    try:
        return Verdict.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.debug("report.no_verdict", candidate=record.id, path=str(path), error=str(exc))
        return None


def roofline_fraction(report: RunReport, verdict: Verdict | None) -> tuple[float | None, str]:
    """Roofline time / best time, and a sentence: only for comparable (GPU) timings of the same shapes."""
    best = report.best
    if best is None:
        return None, "no accepted candidate"
    if not (report.timing_comparable and best.timing_comparable):
        return None, NOT_COMPARABLE
    roof = report.analysis.get("roofline_ms")
    if not roof or not best.candidate_ms:
        return None, "not available (no roofline or no timing)"
    analysed = report.analysis.get("shape_set")
    timed = verdict.timed_shape_set if verdict else None
    if analysed and timed and analysed != timed:
        return None, f"not available (roofline for shape set {analysed!r}, timed on {timed!r})"
    fraction = roof / best.candidate_ms
    return fraction, f"{fraction:.0%} of the H200 roofline ({roof:.4g} ms bound, best {best.candidate_ms:.4g} ms)"


def _problem_title(run_dir: Path) -> str:
    try:
        doc = ast.get_docstring(pyast.parse((run_dir / "problem.py").read_text(encoding="utf-8")))
    except (OSError, SyntaxError, ValueError):
        return ""
    return doc.strip().splitlines()[0] if doc else ""


def _title(run_dir: Path) -> str:
    """The run directory's name; ``egg.optimize`` runs live in ``<name>/run``, so name the parent too."""
    run_dir = run_dir.resolve()
    return f"{run_dir.parent.name}/{run_dir.name}" if run_dir.name == "run" else run_dir.name


def _best_source(report: RunReport, run_dir: Path) -> str | None:
    if report.best is None:
        return None
    for path in (run_dir / "best.py", run_dir / "candidates" / report.best.id / "candidate.py"):
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None


def _verdict_text(record: CandidateRecord) -> str:
    return "accepted" if record.accepted else f"rejected at {record.stage_failed or '?'}"


def _usage(report: RunReport) -> dict[str, Any]:
    usage = dict(report.llm_usage)
    llm = str(report.config.get("llm", "none"))
    used = bool(usage.get("calls")) or llm != "none"
    return {"used": used, "llm": llm, **usage}


def build_context(report: RunReport, run_dir: Path) -> dict[str, Any]:
    """Everything the template shows, computed once (the template only lays it out)."""
    rows = []
    points = []
    all_trials = TrialSummary()
    verdicts: dict[str, Verdict | None] = {}
    for number, record in enumerate(report.candidates, start=1):
        verdict = read_verdict(run_dir, record)
        verdicts[record.id] = verdict
        trials = TrialSummary.of(verdict.trials) if verdict else TrialSummary()
        if verdict is not None and record.reused_verdict_of is None:
            all_trials.total += trials.total
            all_trials.passed += trials.passed
        rows.append({"n": number, "r": record, "verdict": _verdict_text(record), "trials": trials,
                     "is_best": report.best is not None and record.id == report.best.id,
                     "stage_short": STAGE_SHORT.get(record.stage, record.stage),
                     "color": STAGE_COLORS.get(record.stage, "#6b7280")})
        note = _verdict_text(record) + (f": {record.reasons[0]}" if record.reasons else "")
        points.append(ChartPoint(record.id, record.stage, record.accepted, record.speedup_vs_eager, note[:200]))
    best_verdict = verdicts.get(report.best.id) if report.best else None
    fraction, roofline_text = roofline_fraction(report, best_verdict)
    source = _best_source(report, run_dir)
    accepted = sum(r.accepted for r in report.candidates)
    stages = []
    for key, summary in report.stage_summaries.items():
        if summary:
            stages.append({"key": key, "name": STAGE_NAMES.get(key, key), "s": summary,
                           "color": STAGE_COLORS.get(key, "#6b7280")})
    return {
        "report": report,
        "title": _title(run_dir),
        "problem_title": _problem_title(run_dir),
        "comparable": report.timing_comparable,
        "not_comparable": NOT_COMPARABLE,
        "best": report.best,
        "best_trials": TrialSummary.of(best_verdict.trials) if best_verdict else None,
        "best_verdict": best_verdict,
        "roofline_fraction": fraction,
        "roofline_text": roofline_text,
        "counts": {"evaluated": len(report.candidates), "accepted": accepted,
                   "rejected": len(report.candidates) - accepted,
                   "agent_failures": sum(1 for r in report.rejected if r.get("id") is None)},
        "all_trials": all_trials,
        "chart": Markup(progress_chart(points, comparable=report.timing_comparable,
                                       best_id=report.best.id if report.best else None)) if points else None,
        "rows": rows,
        "agent_failures": [r for r in report.rejected if r.get("id") is None],
        "code": Markup(highlight_python(source)) if source is not None else None,
        "gutter": line_numbers(source) if source is not None else "",
        "stages": stages,
        "usage": _usage(report),
        "config_json": json.dumps(report.config, indent=2, sort_keys=True),
        "analysis": report.analysis,
        "baseline": report.baseline,
    }


def render_run_html(report: RunReport, run_dir: str | Path) -> str:
    """The report page for one run, as a string."""
    return environment().get_template("run.html.j2").render(**build_context(report, Path(run_dir)))


def write_html_report(report: RunReport, run_dir: str | Path, *, strict: bool = False) -> Path | None:
    """Write ``RUN_DIR/report.html``; returns its path.

    After a run (``strict=False``) a rendering failure is logged, not raised: report.json, the
    run's real result, is already on disk. ``egg report`` passes ``strict=True``.
    """
    run_dir = Path(run_dir)
    path = run_dir / "report.html"
    try:
        path.write_text(render_run_html(report, run_dir), encoding="utf-8")
    except Exception as exc:  # noqa: BLE001 - see the docstring
        if strict:
            raise
        log.warning("report.html_failed", run_dir=str(run_dir), error=repr(exc))
        return None
    log.info("report.html_written", path=str(path))
    return path


def regenerate(run_dir: str | Path) -> Path:
    """Re-render ``report.html`` from ``RUN_DIR/report.json`` (``egg report RUN_DIR``)."""
    run_dir = Path(run_dir)
    report = RunReport.model_validate_json((run_dir / "report.json").read_text(encoding="utf-8"))
    path = write_html_report(report, run_dir, strict=True)
    assert path is not None
    return path
