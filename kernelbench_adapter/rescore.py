"""Re-scoring mode: judge a directory of existing KernelBench generations with EGG's harness.

Generations are named as KernelBench's scripts name them,
``level_{L}_problem_{ID}_sample_{S}_kernel.py``. Every sample found for a selected problem is
evaluated by one shared executor (:mod:`egg.executor`: the local harness, or Ray actors; as many
samples at once as it has workers), each sample by the harness's judge (static anti-cheat checks, then a
judge process that runs each candidate in a fresh runner: correctness on every shape set with
fresh inputs, kernel ablation, timing against eager and torch.compile); its verdict is archived
under ``OUT/level{L}/{id}_{name}/sample_{S}/``. Every selected problem is copied before the first
candidate runs. A selected problem without a sample 0
file is recorded as ``missing`` (a failure, as KernelBench's analysis counts it). A sample whose
evaluation hit an infrastructure failure (its worker lost twice) is evaluated again on
``--resume``: it has no verdict yet. ``report.html`` is written beside ``suite.json`` at the end.
"""

from __future__ import annotations

import threading
from pathlib import Path

import structlog

from egg.errors import EggInputError
from egg.evaluate.harness import INFRASTRUCTURE, EvalOptions
from egg.executor import Executor, ExecutorSpec, open_executor
from egg.executor.spread import map_ordered
from egg.problem import inspect_problem
from kernelbench_adapter.dataset import KBProblem, find_generations, generation_name, list_problems, select_problems
from kernelbench_adapter.results import MISSING, SampleResult, failure, failure_from_exception, from_verdict
from kernelbench_adapter.store import METRICS_SAMPLE, SuiteReport, SuiteStore
from kernelbench_adapter.suite import SuiteProgressFn, no_progress, write_suite_html

log = structlog.get_logger(__name__)


def rescore_suite(
    root: str | Path,
    level: int,
    candidates: str | Path,
    out: str | Path,
    options: EvalOptions | None = None,
    *,
    ids: str | None = None,
    limit: int | None = None,
    resume: bool = False,
    progress: SuiteProgressFn | None = None,
    executor: ExecutorSpec | None = None,
) -> SuiteReport:
    """Evaluate the generations in ``candidates`` for the selected problems; returns suite.json's content."""
    emit = progress or no_progress
    problems = select_problems(list_problems(root, level), ids, limit)
    generations = find_generations(candidates, level)
    store = SuiteStore(out, mode="rescore", level=level, root=root, resume=resume,
                       settings=(options or EvalOptions()).model_dump(mode="json"), candidates_dir=candidates)
    options = EvalOptions.model_validate(store.settings)
    store.selected = [p.problem_id for p in problems]
    store.write_summaries()
    work = [(p, s) for p in problems for s in sorted(set(generations.get(p.problem_id, {})) | {METRICS_SAMPLE})]
    emit({"event": "suite_start", "mode": "rescore", "total": len(work), "out": str(store.out)})
    saving = threading.Lock()

    def one(item: tuple[KBProblem, int]) -> None:
        problem, sample = item
        previous = store.done(problem, sample) if resume else None
        if previous is not None and previous.stage_failed != INFRASTRUCTURE:
            emit({"event": "problem_done", "problem": problem, "result": previous, "skipped": True})
            return
        emit({"event": "problem_start", "problem": problem, "sample_id": sample})
        result = _score(problem, sample, generations, candidates, level, store, options, harness)
        with saving:
            store.save(result, problem)
        emit({"event": "problem_done", "problem": problem, "result": result, "skipped": False})

    with open_executor(executor, options.device) as harness:
        # Every selected problem is copied (read-only, hashed) before any candidate runs: no
        # candidate can change a problem that a later candidate is judged against.
        harness.pin_problems([p.path for p in problems if _valid(p.path)])
        map_ordered(one, work, harness.capacity)
    report = store.write_summaries()
    write_suite_html(store.out)
    log.info("kernelbench.rescored", out=str(store.out), total=report.metrics.total, correct=report.metrics.correct)
    return report


def _score(problem: KBProblem, sample: int, generations: dict[int, dict[int, Path]], candidates: str | Path,
           level: int, store: SuiteStore, options: EvalOptions, harness: Executor) -> SampleResult:
    path = generations.get(problem.problem_id, {}).get(sample)
    if path is None:
        name = generation_name(level, problem.problem_id, sample)
        return failure(problem, sample, MISSING, f"no generation file {name} in {candidates}")
    archive = store.sample_dir(problem, sample)
    try:
        return from_verdict(problem, sample, harness.evaluate(problem.path, path, options, archive))
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - one sample's failure never stops the suite
        log.warning("kernelbench.sample_failed", problem=problem.name, sample=sample, error=str(exc))
        return failure_from_exception(problem, sample, exc, artifact=str(archive))


def _valid(path: Path) -> bool:
    """A problem file the harness can read (a broken one fails at its own turn, with its reason)."""
    try:
        inspect_problem(path)
    except EggInputError:
        return False
    return True
