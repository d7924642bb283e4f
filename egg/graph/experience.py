"""The graph's hooks into the transition memory and the profiler.

* :func:`roofline_for` — the roofline evidence of an accepted GPU verdict (cheap; every one);
* :func:`profile_winner` — the best evidence for a stage's winner: ncu in a process of its own
  where it works (``--profile auto``), else the roofline (never inside the judge's verdict path);
* :func:`remember` — one evaluated candidate into the memory: its move (direction, strategy, the
  direction it came from, read back from the run directory so a resumed run classifies the same),
  its gain over its starting point, its cost. A write that fails is logged and noted in the
  report; it never ends the run;
* :func:`experience_for` — the memory's prompt section for an agent's stage and focus;
* :func:`strategies_for` — the same retrieval as data (strategy, expected gain per attempt), by
  which the expert agents order their moves.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from agents.protocol import Draft, StrategyScore
from egg.evaluate.verdict import Verdict
from egg.graph.records import CandidateRecord, candidate_dir, find_verdict, read_source, source_sha
from egg.memory import START, Context, Observation, classify, directions, render_experience
from egg.profile import Evidence, profile_candidate, roofline_evidence

if TYPE_CHECKING:
    from egg.graph.runtime import Runtime

log = structlog.get_logger(__name__)

RUN_ID_FILE = "memory.json"


def run_identity(run_dir: Path, problem_name: str | None = None) -> tuple[str, str, str | None]:
    """This run's id in the memory, the problem's name (the run directory holds a copy named
    problem.py) and when the run first started (UTC, ISO seconds; None in a run directory written
    before 2026-12-05): made when the run starts, kept in the run directory, so a resume keeps all
    three, and reads from the memory only what was there when the run first started."""
    path = run_dir / RUN_ID_FILE
    if path.is_file():
        data = json.loads(path.read_text())
        return (str(data["run_id"]), str(data.get("problem") or problem_name or run_dir.name),
                data.get("since"))
    name = problem_name or run_dir.name
    rid = f"{name}-{uuid.uuid4().hex[:12]}"
    since = datetime.now(timezone.utc).isoformat(timespec="seconds")
    path.write_text(json.dumps({"run_id": rid, "problem": name, "since": since}))
    return rid, name, since


def _earlier(rt: Runtime, stage: str) -> list[Observation]:
    """What the memory held for ``stage`` when this run first started, other runs' only: its own
    agents see its attempts directly, and a resumed run must read what its first start read (a
    prompt, an order, a remembered config must not change because another run recorded meanwhile).
    Nothing with ``--memory-record-only``: the run records and reads nothing."""
    assert rt.memory is not None
    if not rt.config.read_memory:
        return []
    if stage in rt._earlier:
        return rt._earlier[stage]
    found = [o for o in rt.memory.observations(stage)
             if o.run_id != rt.run_id and (rt.memory_since is None or o.created < rt.memory_since)]
    if rt.memory_since is not None:  # fixed for the run: read once per stage, not at every agent call
        with rt._lock:
            rt._earlier[stage] = found
    return found


def roofline_for(rt: Runtime, verdict: Verdict) -> Evidence | None:
    if not (verdict.accepted and verdict.timing_comparable and verdict.candidate_ms and rt.analysis):
        return None
    return roofline_evidence(rt.analysis, verdict.candidate_ms, rt.device, allow_tf32=rt.allow_tf32,
                             cudnn_tf32=not rt.config.strict_fp32)


def profile_winner(rt: Runtime, record: CandidateRecord | None, shape_set: str) -> Evidence | None:
    """Evidence for a stage's best candidate; None on CPU (timings say nothing there)."""
    if record is None or not record.timing_comparable or not record.candidate_ms:
        return None
    import torch

    from egg.evaluate import device_lease
    from egg.evaluate.gpu_lock import GpuLock

    folder = candidate_dir(rt.run_dir, record.id)
    # The profile runs on this process's first GPU: it must not overlap a judge's timing there (a
    # suite's other runs keep evaluating), so it holds that GPU's lock as a timing does, and its
    # lease (shared: its inputs and outputs are memory an evaluation beside it cannot have).
    gpu = torch.device("cuda:0") if torch.cuda.is_available() else None
    lock = GpuLock.for_device(gpu) if gpu is not None else GpuLock(None)
    try:
        with device_lease.hold(device_lease.lease_path(gpu) if gpu is not None else None, alone=False), lock.exclusive():
            evidence = profile_candidate(rt.problem_path, folder / "candidate.py", analysis=rt.analysis,
                                         candidate_ms=record.candidate_ms, device=rt.device, out_dir=folder / "profile",
                                         shape_set=shape_set, seed=rt.config.seed, use_ncu=rt.config.profile == "auto",
                                         allow_tf32=rt.allow_tf32, cudnn_tf32=not rt.config.strict_fp32)
    finally:
        lock.close()
    log.info("graph.profiled", candidate=record.id, source=evidence.source, statement=evidence.statement)
    return evidence


def _draft_info(run_dir: Path, candidate_id: str) -> dict[str, Any]:
    return json.loads((candidate_dir(run_dir, candidate_id) / "draft.json").read_text(encoding="utf-8"))


def direction_of(run_dir: Path, candidate_id: str) -> str:
    """The direction an archived candidate moved in (its parent's source decides a tuning move)."""
    info = _draft_info(run_dir, candidate_id)
    parent = info.get("parent_id")
    parent_source = read_source(run_dir, parent) if parent else None
    return classify(info["stage"], info["focus"], read_source(run_dir, candidate_id), parent_source,
                    info.get("principle_ids")).direction


def _candidate_ms(run_dir: Path, candidate_id: str) -> float | None:
    found = find_verdict(run_dir, source_sha(read_source(run_dir, candidate_id)))
    return found[1].candidate_ms if found and found[1].accepted and found[1].timing_comparable else None


def remember(rt: Runtime, record: CandidateRecord, draft: Draft, verdict: Verdict) -> None:
    """Record one evaluated candidate in the memory (see the module docstring)."""
    if rt.memory is None or not rt.analysis:
        return
    try:
        parent_source = read_source(rt.run_dir, draft.parent_id) if draft.parent_id else None
        move = classify(record.stage, record.focus, draft.source, parent_source, record.principle_ids)
        gain = None
        if verdict.accepted and verdict.timing_comparable and verdict.candidate_ms:
            start_ms = _candidate_ms(rt.run_dir, draft.parent_id) if draft.parent_id else verdict.eager_ms
            gain = start_ms / verdict.candidate_ms if start_ms else None
        observation = Observation(
            run_id=rt.run_id, candidate_id=record.id, problem=rt.problem_name,
            problem_sha=source_sha(rt.problem_source),
            context=Context.from_analysis(rt.analysis, rt.device), stage=record.stage, focus=record.focus,
            direction=move.direction, strategy=move.strategy,
            from_direction=direction_of(rt.run_dir, draft.parent_id) if draft.parent_id else START,
            principle_ids=record.principle_ids, accepted=record.accepted, stage_failed=record.stage_failed,
            gain=gain, speedup_vs_eager=record.speedup_vs_eager, seconds=verdict.wall_s, evidence=record.evidence,
        )
        added = rt.memory.record([observation])
    except Exception as exc:  # noqa: BLE001 - the memory is advice: a failed write must not end the run
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        log.warning("graph.memory_write_failed", candidate=record.id, error=reason)
        with rt._lock:
            rt.memory_errors.append(f"{record.id}: {reason}")
        return
    with rt._lock:
        rt.memory_recorded += added


def experience_for(rt: Runtime, stage: str, focus: str) -> str | None:
    if rt.memory is None or not rt.analysis:
        return None
    try:
        return render_experience(_earlier(rt, stage), Context.from_analysis(rt.analysis, rt.device), stage=stage,
                                 focus=focus, budget_tokens=rt.config.memory_token_budget)
    except Exception as exc:  # noqa: BLE001 - a memory that cannot be read gives no advice, and says so
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        log.warning("graph.memory_read_failed", error=reason)
        with rt._lock:
            rt.memory_errors.append(f"reading: {reason}")
        return None


def strategies_for(rt: Runtime, stage: str, focus: str | None = None) -> list[StrategyScore]:
    """Every strategy the memory knew for this stage and focus (None: every focus) on problems like
    this one when the run first started, best first ([] without a memory, as with
    ``--no-memory``; other runs' observations only: :func:`_earlier`)."""
    if rt.memory is None or not rt.analysis:
        return []
    try:
        found = directions(_earlier(rt, stage), Context.from_analysis(rt.analysis, rt.device), stage=stage, focus=focus)
    except Exception as exc:  # noqa: BLE001 - a memory that cannot be read gives no order, and says so
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        log.warning("graph.memory_read_failed", error=reason)
        with rt._lock:
            rt.memory_errors.append(f"reading: {reason}")
        return []
    out = [StrategyScore(direction=d.direction, strategy=s.strategy, score=s.stats.score, attempts=s.stats.attempts,
                         failure_rate=s.stats.failure_rate) for d in found for s in d.strategies]
    return sorted(out, key=lambda s: -s.score)
