"""One optimisation run over a problem file, checkpointed and resumable.

A run directory is the unit of memory::

    RUN_DIR/config.json          the RunConfig (a resumed run reads it back)
    RUN_DIR/problem.py           the problem as it was when the run started
    RUN_DIR/checkpoints.sqlite   LangGraph checkpoints (thread "run")
    RUN_DIR/candidates/<id>/     candidate.py, draft.json, verdict.json, worker.log
    RUN_DIR/transcript.jsonl     every LLM exchange
    RUN_DIR/best.py              the best accepted candidate
    RUN_DIR/report.json          the run report
    RUN_DIR/report.html          the same, for people: self-contained, no network needed
    RUN_DIR/invocations.jsonl    each process that worked on the run (wall time over resumes)

With an LLM, the endpoint is checked first (:mod:`agents.llm.preflight`): a wrong URL, a bad key
or an unknown model is a one-line error before the run directory is created. An endpoint that
fails later, past its retries, stops every LLM agent; the run finishes with what it has and the
report's ``llm_failure`` says so.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import structlog
from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.sqlite import SqliteSaver

from agents.factory import build_agents, llm_setup
from agents.llm.preflight import preflight_setup
from agents.protocol import TokenUsage
from egg.config import RunConfig
from egg.device import default_facts, device_facts
from egg.errors import EggInputError
from egg.executor import Executor, ExecutorSpec, open_executor
from egg.graph.build import build_graph
from egg.graph.experience import run_identity
from egg.graph.invocations import InvocationLog
from egg.graph.runtime import ProgressFn, Runtime
from egg.memory import open_memory
from egg.problem import inspect_problem
from egg.report.html import write_html_report
from egg.report.model import RunReport, build_report, usage_summary
from principles import device_table, load_packs

log = structlog.get_logger(__name__)

THREAD = {"configurable": {"thread_id": "run"}}


def _read_config(problem_path: Path | None, config: RunConfig | None, run_dir: Path, resume: bool) -> RunConfig:
    """The run's configuration, with every check that needs no side effect (one-line errors)."""
    if resume:
        config_path = run_dir / "config.json"
        if not config_path.is_file():
            raise EggInputError(f"{run_dir}: not a run directory (no config.json) — nothing to resume")
        return RunConfig.model_validate_json(config_path.read_text())
    assert problem_path is not None and config is not None
    inspect_problem(problem_path)
    if run_dir.exists() and any(run_dir.iterdir()):
        raise EggInputError(f"{run_dir}: already exists and is not empty (use --resume {run_dir} to continue it)")
    return config


def _create(problem_path: Path, config: RunConfig, run_dir: Path) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(problem_path, run_dir / "problem.py")
    (run_dir / "config.json").write_text(config.model_dump_json(indent=2))


def spent_so_far(state: dict[str, Any]) -> TokenUsage:
    """The LLM usage a run's checkpointed state records, over every process that worked on it."""
    return sum((TokenUsage.model_validate(u) for u in state.get("llm_usage", [])), TokenUsage())


def _evaluations(run_dir: Path) -> int:
    """Harness evaluations over the whole run: each one is indexed once, by whichever process ran it."""
    index = run_dir / "candidates" / "index.jsonl"
    return sum(1 for line in index.read_text(encoding="utf-8").splitlines() if line.strip()) if index.is_file() else 0


def _run_notes(rt: Runtime, state: dict[str, Any], memory_note: str) -> list[str]:
    """What the report says about the device, the profiler evidence and the memory."""
    notes = [f"tuned for {rt.device.line()}", *(f"device: {n}" for n in rt.device.notes)]
    for name in ("stage1_summary", "stage2_summary"):
        summary = state.get(name) or {}
        if summary.get("evidence"):
            notes.append(f"profiler evidence for {summary['best_id']} ({summary['evidence_source']}): "
                         f"{summary['evidence']}")
    if rt.device.source == "device" and not any("profiler evidence" in n for n in notes) and state.get("best_id"):
        notes.append("no profiler evidence: no accepted candidate had comparable timings")
    if rt.memory is not None:
        memory_note += f"; this invocation recorded {rt.memory_recorded} evaluated candidates"
    notes.append(memory_note)
    if rt.memory_errors:
        notes.append(f"transition memory: {len(rt.memory_errors)} reads or writes failed (the run went on): "
                     f"{rt.memory_errors[0]}")
    return notes


def run_optimization(
    problem_path: str | Path | None,
    config: RunConfig | None,
    run_dir: str | Path,
    *,
    resume: bool = False,
    chat_model: BaseChatModel | None = None,
    progress: ProgressFn | None = None,
    harness: Executor | None = None,
    executor: ExecutorSpec | None = None,
) -> RunReport:
    """Run (or resume) the two-stage graph on a problem file; returns the report it writes.

    ``harness``: an open executor to evaluate with (a suite shares one, so its workers are started
    once); by default the run opens the one ``executor`` names (local by default: a resumed run may
    use another, with the same verdicts) on ``config.device`` and closes it at the end.
    """
    run_dir = Path(run_dir).resolve()
    config = _read_config(Path(problem_path) if problem_path else None, config, run_dir, resume)
    setup = llm_setup(config, chat_model)
    preflight = preflight_setup(setup.cfg, setup.model) if setup is not None else None
    memory, memory_note = open_memory(config.memory, config.use_memory)  # a bad --memory fails here
    if memory is not None and not config.read_memory:
        memory_note += " (--memory-record-only: recorded, never read)"
    # the executor too (a Ray cluster that does not answer), before the run directory is created
    evaluator = nullcontext(harness) if harness is not None else open_executor(executor, config.device)
    if not resume:
        assert problem_path is not None
        _create(Path(problem_path), config, run_dir)
    rid, problem_name, since = run_identity(run_dir, Path(problem_path).stem if problem_path else None)
    problem = run_dir / "problem.py"
    invocations = InvocationLog(run_dir)
    invocations.start(preflight)
    user_progress = progress or (lambda event: None)

    def on_progress(event: dict[str, Any]) -> None:
        invocations.step()
        user_progress(event)

    packs = load_packs(config.pack_paths())
    designers, tuners = build_agents(config, run_dir, setup)
    connection = sqlite3.connect(run_dir / "checkpoints.sqlite", check_same_thread=False)
    with evaluator as harness:
        # a CPU run tunes for the H200 defaults (and says so); a GPU run for the GPU it runs on
        table = device_table(packs)
        device = default_facts(table) if harness.device == "cpu" else device_facts("cuda", table)
        rt = Runtime(
            run_dir=run_dir,
            config=config,
            problem_path=problem,
            problem_source=problem.read_text(encoding="utf-8"),
            harness=harness,
            packs=packs,
            designers=designers,
            tuners=tuners,
            progress=on_progress,
            device=device,
            allow_tf32=inspect_problem(problem).allow_tf32,
            memory=memory,
            run_id=rid,
            memory_since=since,
            problem_name=problem_name,
        )
        graph = build_graph(rt, SqliteSaver(connection))
        # One agent job at a time where order matters (a replay, a scripted model) or where only one
        # evaluation can run anyway; a job's drafts are still spread over the workers.
        sequential = config.llm.startswith("replay:") or chat_model is not None or harness.capacity == 1
        invoke_config = {**THREAD, "recursion_limit": 500, **({"max_concurrency": 1} if sequential else {})}
        snapshot = graph.get_state(THREAD)
        preflights = sum((i.preflight for i in invocations.read()), TokenUsage())
        if resume and snapshot.values:
            rt.analysis = snapshot.values.get("analysis") or {}
            rt.baseline = snapshot.values.get("baseline") or {}
            rt.prior_candidates = len(snapshot.values.get("candidates", []))
            # the budgets count the calls made before the crash, and every preflight
            rt.usage = spent_so_far(snapshot.values) + preflights
            log.info("run.resume", run_dir=str(run_dir), candidates=rt.prior_candidates, next=list(snapshot.next))
            if snapshot.next:
                graph.invoke(None, invoke_config, durability="sync")
        else:
            rt.usage = preflights
            # durability="sync": every finished task is on disk before the next starts, so a crash
            # loses at most the task in flight.
            graph.invoke({"problem_path": str(problem)}, invoke_config, durability="sync")
        state = graph.get_state(THREAD).values
        usage = spent_so_far(state) + preflights
        report = build_report(
            state,
            run_dir=str(run_dir),
            device=harness.device,
            config=config.model_dump(mode="json"),
            packs=[v.model_dump(mode="json") for v in packs.versions()],
            llm_usage=usage_summary(usage.model_dump(), preflights.model_dump(), setup.cfg.label() if setup else None),
            evaluations=_evaluations(run_dir),
            llm_notes=setup.notes if setup else [],
            run_notes=_run_notes(rt, state, memory_note),
        )
    connection.close()
    invocations.end()
    runs = invocations.read()
    report.invocations = [i.model_dump(exclude={"preflight"}) for i in runs]
    report.wall_s = round(sum(i.wall_s for i in runs), 3)
    (run_dir / "report.json").write_text(report.model_dump_json(indent=2))
    write_html_report(report, run_dir)  # self-contained report.html; a failure is logged, never raised
    log.info("run.done", run_dir=str(run_dir), outcome=report.outcome, evaluations=rt.evaluations,
             llm_failure=report.llm_failure)
    return report
