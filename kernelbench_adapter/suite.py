"""Optimize mode: run EGG on each selected KernelBench problem, spread over the executor, resumable.

One executor serves the suite (its workers start once); as many problems run at once as it has
workers (the local executor on one GPU: two; eight GPUs: sixteen; a Ray cluster: its actors'
judges), and each run spreads its rounds' candidates over the same workers.

Each problem gets a normal run directory (``OUT/level{L}/{id}_{name}/``, see :mod:`egg.run`). On
``resume``: a problem whose run directory has ``report.json`` is not run again; one with a
``config.json`` but no report (killed mid-run) is continued with ``run_optimization(resume=True)``;
any other problem is started. A problem whose run raises is recorded as a failure with the reason
and the suite goes on. ``suite.json`` and ``results.json`` are rewritten after every problem, and
``report.html`` is written beside them at the end (:func:`write_suite_html`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog
from langchain_core.language_models import BaseChatModel

from egg.config import RunConfig
from egg.executor import Executor, ExecutorSpec, open_executor
from egg.executor.spread import map_ordered
from egg.report.model import RunReport
from egg.run import run_optimization
from kernelbench_adapter.dataset import KBProblem, list_problems, select_problems
from kernelbench_adapter.results import SampleResult, failure_from_exception, from_report
from kernelbench_adapter.store import SuiteReport, SuiteStore

log = structlog.get_logger(__name__)

SuiteProgressFn = Callable[[dict[str, Any]], None]


def no_progress(event: dict[str, Any]) -> None:
    return None


def run_suite(
    root: str | Path,
    level: int,
    out: str | Path,
    config: RunConfig,
    *,
    ids: str | None = None,
    limit: int | None = None,
    resume: bool = False,
    chat_model: BaseChatModel | None = None,
    progress: SuiteProgressFn | None = None,
    executor: ExecutorSpec | None = None,
) -> SuiteReport:
    """Optimise every selected problem of ``ROOT``'s level ``level`` into ``out``; returns suite.json's content.

    ``executor``: where candidates are judged (default: the local executor on ``config.device``).

    Events passed to ``progress``: ``suite_start`` (total), ``problem_start`` / ``problem_done``
    (problem, result, skipped) and every event of the runs themselves (``stage``, ``agent``,
    ``candidate``).
    """
    emit = progress or no_progress
    problems = select_problems(list_problems(root, level), ids, limit)  # one-line errors before OUT is touched
    store = SuiteStore(out, mode="optimize", level=level, root=root, resume=resume,
                       settings=config.model_dump(mode="json"))
    config = RunConfig.model_validate(store.settings)
    store.selected = [p.problem_id for p in problems]
    store.write_summaries()
    emit({"event": "suite_start", "mode": "optimize", "total": len(problems), "out": str(store.out)})
    saving = threading.Lock()
    with open_executor(executor, config.device) as harness:  # started once for the suite, not per problem
        map_ordered(lambda p: _suite_step(p, store, config, resume, chat_model, emit, harness, saving), problems,
                    1 if chat_model is not None else harness.capacity)  # a scripted model answers in order
    report = store.write_summaries()
    write_suite_html(store.out)
    log.info("kernelbench.done", out=str(store.out), total=report.metrics.total, correct=report.metrics.correct)
    return report


def write_suite_html(out: Path) -> None:
    """``OUT/report.html`` beside ``suite.json``; a failure is logged, never raised (the results stand)."""
    from egg.report.suite import write_suite_report

    try:
        write_suite_report(out, regenerate_runs=False)  # each run wrote its own report.html
    except Exception as exc:  # noqa: BLE001 - the report is a view of suite.json, which is written
        log.warning("kernelbench.report_html_failed", out=str(out), error=f"{type(exc).__name__}: {exc}")


def _suite_step(problem: KBProblem, store: SuiteStore, config: RunConfig, resume: bool,
                chat_model: BaseChatModel | None, emit: SuiteProgressFn, harness: Executor,
                saving: threading.Lock) -> None:
    """One problem: skipped when resuming and its report exists, continued or started otherwise."""
    run_dir = store.problem_dir(problem)
    if resume and (run_dir / "report.json").is_file():
        result = store.done(problem) or from_report(problem, RunReport.model_validate_json((run_dir / "report.json").read_text()))
        with saving:
            store.save(result, problem)
        log.info("kernelbench.skip", problem=problem.name, reason="report.json exists")
        emit({"event": "problem_done", "problem": problem, "result": result, "skipped": True})
        return
    emit({"event": "problem_start", "problem": problem, "sample_id": 0})
    result = _run_one(problem, run_dir, config, store, chat_model, emit, harness)
    with saving:
        store.save(result, problem)
    emit({"event": "problem_done", "problem": problem, "result": result, "skipped": False})


def _run_one(problem: KBProblem, run_dir: Path, config: RunConfig, store: SuiteStore,
             chat_model: BaseChatModel | None, emit: SuiteProgressFn, harness: Executor) -> SampleResult:
    try:
        if (run_dir / "config.json").is_file():
            log.info("kernelbench.resume_problem", problem=problem.name, run_dir=str(run_dir))
            report = run_optimization(None, None, run_dir, resume=True, chat_model=chat_model, progress=emit,
                                      harness=harness)
        else:
            store.forget(problem)  # a failure recorded before the run directory existed
            report = run_optimization(problem.path, config, run_dir, chat_model=chat_model, progress=emit,
                                      harness=harness)
        return from_report(problem, report)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - one problem's failure never stops the suite
        log.warning("kernelbench.problem_failed", problem=problem.name, error=f"{type(exc).__name__}: {exc}")
        return failure_from_exception(problem, 0, exc, artifact=str(run_dir) if run_dir.exists() else None)
