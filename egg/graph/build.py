"""The main graph: analyze -> algorithm_design -> summarize -> hardware_tuning -> finalize."""

from __future__ import annotations

import threading
from typing import Any

import structlog
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from egg.analysis import analyze_problem
from egg.context import summarize_stage
from egg.graph.experience import profile_winner
from egg.graph.records import CandidateRecord, best_of, candidate_dir
from egg.graph.runtime import Runtime
from egg.graph.stages import build_design_stage, build_tuning_stage
from egg.graph.state import RunState
from egg.problem import inspect_problem, select_shape_sets

log = structlog.get_logger(__name__)
# A suite runs several problems' graphs in threads of one process; the capture (torch.export,
# decomposition tables, Dynamo's global config) is not known to be thread-safe, so one at a time.
_ANALYSIS_LOCK = threading.Lock()


def _records(state: RunState) -> list[CandidateRecord]:
    return [CandidateRecord.model_validate(c) for c in state.get("candidates", [])]


def build_graph(rt: Runtime, checkpointer: BaseCheckpointSaver | None = None) -> Any:
    def analyze(state: RunState) -> dict[str, Any]:
        info = inspect_problem(rt.problem_path)
        shape_set = select_shape_sets(info, rt.config.shapes)[0]
        rt.progress({"event": "stage", "stage": "analyze"})
        with _ANALYSIS_LOCK:
            analysis = analyze_problem(rt.problem_path, shape_set=shape_set)
        data = analysis.model_dump(mode="json")
        data["description"] = analysis.describe()
        rt.analysis = data
        baseline_verdict = rt.harness.profile_reference(rt.problem_path, rt.eval_options())
        baseline = {
            "eager_ms": baseline_verdict.eager_ms,
            "compile_ms": baseline_verdict.compile_ms,
            "device": baseline_verdict.device,
            "timing_comparable": baseline_verdict.device == "cuda",
            "shape_set": shape_set,
            "reasons": baseline_verdict.reasons,
            "notes": baseline_verdict.notes,
        }
        rt.baseline = baseline  # candidates' speedups use the faster of it and their job's (records.references)
        log.info("graph.analyzed", op_classes=data["op_classes"], bottleneck=data["bottleneck"],
                 eager_ms=baseline["eager_ms"], compile_ms=baseline["compile_ms"])
        return {"analysis": data, "baseline": baseline}

    def profiled(records: list[CandidateRecord], stage: str, state: RunState) -> tuple[str, str] | None:
        """(statement, source) of a profile of ``stage``'s best candidate (GPU runs only)."""
        best = best_of([r for r in records if r.stage == stage])
        evidence = profile_winner(rt, best, (state.get("baseline") or {}).get("shape_set") or "default")
        return (evidence.statement, evidence.source) if evidence is not None else None

    def summarize(state: RunState) -> dict[str, Any]:
        records = _records(state)
        summary = summarize_stage(records, "algorithm_design", rt.config.context_token_budget,
                                  profiled(records, "algorithm_design", state))
        accepted = [r for r in records if r.accepted and r.stage == "algorithm_design"]
        ranked = [r for r in accepted if r.id == summary.best_id] + [r for r in accepted if r.id != summary.best_id]
        if summary.timing_comparable:
            ranked = sorted(accepted, key=lambda r: r.candidate_ms or float("inf"))
        parents = [r.id for r in ranked[: rt.config.budget.top_k]]
        rt.progress({"event": "stage", "stage": "hardware_tuning", "summary": summary.text})
        return {
            "stage1_summary": summary.model_dump(mode="json"),
            "parents": parents,
            "parent_records": [r.model_dump(mode="json") for r in records],
        }

    def finalize(state: RunState) -> dict[str, Any]:
        records = _records(state)
        best = best_of(records)
        stage2 = summarize_stage(records, "hardware_tuning", rt.config.context_token_budget,
                                 profiled(records, "hardware_tuning", state))
        if best is not None:
            source = (candidate_dir(rt.run_dir, best.id) / "candidate.py").read_text(encoding="utf-8")
            (rt.run_dir / "best.py").write_text(source, encoding="utf-8")
        rt.progress({"event": "stage", "stage": "finalize"})
        return {"stage2_summary": stage2.model_dump(mode="json"), "best_id": best.id if best else None}

    def enter_stage1(state: RunState) -> dict[str, Any]:
        rt.progress({"event": "stage", "stage": "algorithm_design"})
        return {}

    graph = StateGraph(RunState)
    graph.add_node("analyze", analyze)
    graph.add_node("enter_stage1", enter_stage1)
    graph.add_node("algorithm_design", build_design_stage(rt))
    graph.add_node("summarize", summarize)
    graph.add_node("hardware_tuning", build_tuning_stage(rt))
    graph.add_node("finalize", finalize)
    graph.add_edge(START, "analyze")
    graph.add_edge("analyze", "enter_stage1")
    graph.add_edge("enter_stage1", "algorithm_design")
    graph.add_edge("algorithm_design", "summarize")
    graph.add_edge("summarize", "hardware_tuning")
    graph.add_edge("hardware_tuning", "finalize")
    graph.add_edge("finalize", END)
    return graph.compile(checkpointer=checkpointer)
