"""``RUN_DIR/report.json``: everything a person or a script needs to judge a run."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, Field

from egg import __version__
from egg.graph.records import CPU_TIE_BREAK, CandidateRecord


class RunReport(BaseModel):
    egg_version: str = __version__
    created: str
    problem: str
    run_dir: str
    device: str
    timing_comparable: bool
    config: dict[str, Any]
    packs: list[dict[str, Any]] = Field(default_factory=list)
    analysis: dict[str, Any] = Field(default_factory=dict)
    baseline: dict[str, Any] = Field(default_factory=dict)
    best: CandidateRecord | None = None
    best_source_path: str | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    candidates: list[CandidateRecord] = Field(default_factory=list)
    rejected: list[dict[str, Any]] = Field(default_factory=list)  # candidates and agent failures, with reasons
    stage_summaries: dict[str, Any] = Field(default_factory=dict)
    llm_usage: dict[str, Any] = Field(
        default_factory=dict,
        description="model; calls (every request sent), failed_calls, successful_calls, tokens as the "
        "server reported them; preflight: the part spent checking the endpoint",
    )
    llm_failure: str | None = Field(default=None, description="why the LLM part of the run failed, if it did")
    evaluations_run: int = Field(default=0, description="harness evaluations, over every invocation of the run")
    wall_s: float | None = Field(default=None, description="seconds the run took, over every invocation")
    invocations: list[dict[str, Any]] = Field(default_factory=list, description="each process that worked on the run")
    stop_reasons: list[str] = Field(default_factory=list)
    outcome: str = ""
    notes: list[str] = Field(default_factory=list)


def slower_than_eager(best: CandidateRecord | None) -> str | None:
    """Why a run's drop-in module is the reference although a candidate was accepted, or None.

    A GPU run can accept only candidates that are slower than eager PyTorch (a lone fp32 matmul
    against cuBLAS, say). For a user who wants a faster drop-in module, the reference is the
    better answer. ``best.py`` is still the fastest correct kernel: it is kept for inspection,
    and KernelBench scoring uses it. On a CPU, timings are not comparable, so this never applies.
    """
    if best is None or not best.timing_comparable or best.speedup_vs_eager is None or best.speedup_vs_eager >= 1.0:
        return None
    return (f"the best accepted candidate ({best.id}) runs at {best.speedup_vs_eager:.2f}x of eager PyTorch, so "
            "egg.optimize returns the reference module; best.py is kept for inspection and KernelBench scoring")


def usage_summary(total: dict[str, Any], preflight: dict[str, Any] | None = None,
                  model: str | None = None) -> dict[str, Any]:
    """The report's ``llm_usage``: attempted, failed and successful requests and their tokens."""
    calls, failed = int(total.get("calls", 0)), int(total.get("failed_calls", 0))
    summary: dict[str, Any] = {**({"model": model} if model else {}), **total, "successful_calls": calls - failed}
    if preflight and preflight.get("calls"):
        summary["preflight"] = preflight
    return summary


def build_report(state: dict[str, Any], *, run_dir: str, device: str, config: dict[str, Any],
                 packs: list[dict[str, Any]], llm_usage: dict[str, Any], evaluations: int,
                 llm_notes: list[str] | None = None, run_notes: list[str] | None = None) -> RunReport:
    records = [CandidateRecord.model_validate(c) for c in state.get("candidates", [])]
    best_id = state.get("best_id")
    best = next((r for r in records if r.id == best_id), None)
    rejected: list[dict[str, Any]] = [
        {"id": r.id, "stage": r.stage, "agent": r.agent, "stage_failed": r.stage_failed, "reasons": r.reasons}
        for r in records
        if not r.accepted
    ]
    rejected += [
        {"id": None, "stage": f["stage"], "agent": f["agent"], "stage_failed": "agent",
         "reasons": f["reasons"], "round": f.get("round")}
        for f in state.get("failures", [])
    ]
    if best is not None:
        outcome = f"best candidate {best.id}: {best.structure}"
    else:
        outcome = "no candidate was accepted: the reference remains the result"
    failures = state.get("service_failures") or []
    llm_failure = f"--llm {failures[0]['service']}: {failures[0]['reason']}" if failures else None
    notes = []
    if llm_failure:
        outcome += " (the LLM part of the run failed)"
        notes.append(f"the LLM part of the run failed, every LLM agent stopped: {llm_failure}")
    notes += list(llm_notes or [])
    notes += list(run_notes or [])  # device, profiler evidence, transition memory
    if llm_usage.get("failed_calls"):
        notes.append(f"{llm_usage['failed_calls']} LLM requests failed; they count as calls, and the server "
                     "reported no tokens for them (a provider may still bill their input)")
    if records and not all(r.timing_comparable for r in records if r.accepted):
        notes.append("CPU run: candidate timings come from the Triton interpreter and are not comparable; "
                     f"the best candidate was chosen by rule, not speed: {CPU_TIE_BREAK}")
    if (slower := slower_than_eager(best)) is not None:
        notes.append(slower)
    return RunReport(
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        problem=state.get("problem_path", ""),
        run_dir=run_dir,
        device=device,
        timing_comparable=device == "cuda",
        config=config,
        packs=packs,
        analysis={k: v for k, v in (state.get("analysis") or {}).items() if k != "ops"},
        baseline=state.get("baseline", {}),
        best=best,
        best_source_path=f"{run_dir}/best.py" if best else None,
        speedup_vs_eager=best.speedup_vs_eager if best else None,
        speedup_vs_compile=best.speedup_vs_compile if best else None,
        candidates=records,
        rejected=rejected,
        stage_summaries={
            "algorithm_design": state.get("stage1_summary", {}),
            "hardware_tuning": state.get("stage2_summary", {}),
        },
        llm_usage=llm_usage,
        llm_failure=llm_failure,
        evaluations_run=evaluations,
        stop_reasons=list(dict.fromkeys(state.get("stop_reasons", []))),
        outcome=outcome,
        notes=notes,
    )
