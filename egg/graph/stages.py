"""The two stage subgraphs.

Stage 1, ``algorithm_design``: each round fans out one ``Send`` per designer agent; each proposes
structures, the harness judges them, and the next round's tasks carry the harness's feedback and
the compressed history. Stage 2, ``hardware_tuning``: each round fans out one ``Send`` per
(parent candidate, tuning agent) pair — parallel mapping, tiling, memory — where the parents are
the top-k of stage 1 in the first round and the best of each lineage afterwards.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from egg.context import compress_history, feedback_for
from egg.graph.records import CandidateRecord, best_of
from egg.graph.runtime import Runtime, run_agent_job
from egg.graph.state import AgentJob, StageInput, StageOutput, StageState
from egg.vocabulary import Focus, Stage


def _records(state: StageState, key: str = "candidates") -> list[CandidateRecord]:
    return [CandidateRecord.model_validate(c) for c in state.get(key, [])]


def _attempts(records: list[CandidateRecord]) -> list[dict[str, Any]]:
    """What was evaluated so far, as data (expert agents react to it without parsing prose)."""
    return [{"id": r.id, "agent": r.agent, "stage": r.stage, "source_sha256": r.source_sha256, "accepted": r.accepted,
             "stage_failed": r.stage_failed, "reasons": r.reasons[:2], "parent_id": r.parent_id} for r in records]


def _context(rt: Runtime, state: StageState) -> list[CandidateRecord]:
    """Everything evaluated so far that the agents may hear about (stage 1 results + this stage)."""
    return _records(state, "parent_records") + _records(state)


def build_design_stage(rt: Runtime) -> Any:
    def start_round(state: StageState) -> dict[str, Any]:
        round_no = state.get("round", 0) + 1
        stop = rt.over_budget(Stage.ALGORITHM_DESIGN)
        return {"round": round_no, "done": bool(stop), "stop_reasons": [stop] if stop else []}

    def fan_out(state: StageState) -> list[Send] | str:
        if state.get("done"):
            return END
        records = _context(rt, state)
        history = compress_history(records, rt.config.context_token_budget)
        sends = []
        for agent in rt.designers:
            if not rt.active(agent):
                continue
            job: AgentJob = {
                "agent": agent.name,
                "focus": Focus.STRUCTURE.value,
                "round": state["round"],
                "history": history,
                "feedback": feedback_for(records, agent.name),
                "attempts": _attempts(records),
            }
            sends.append(Send("design", job))
        return sends or END

    def design(job: AgentJob) -> dict[str, Any]:
        return run_agent_job(rt, dict(job), Stage.ALGORITHM_DESIGN, _analysis_of(rt))

    def after_round(state: StageState) -> str:
        # a budget that ends the stage is left to start_round, which records why
        more = state["round"] < rt.config.budget.stage1_rounds
        live = [a for a in rt.designers if rt.active(a)]
        return "start_round" if more and live else END

    return _round_loop("design", start_round, fan_out, design, after_round)


def _lineage_best(records: list[CandidateRecord], root: CandidateRecord) -> CandidateRecord:
    """Best accepted candidate among ``root`` and everything refined from it."""
    family = {root.id}
    for record in records:  # records are in creation order, so a child follows its parent
        if record.parent_id in family:
            family.add(record.id)
    return best_of([r for r in records if r.id in family and r.accepted]) or root


def build_tuning_stage(rt: Runtime) -> Any:
    def start_round(state: StageState) -> dict[str, Any]:
        round_no = state.get("round", 0) + 1
        stop = rt.over_budget()
        done = bool(stop) or not state.get("parents") or round_no > rt.config.budget.stage2_rounds
        return {"round": round_no, "done": done, "stop_reasons": [stop] if stop else []}

    def fan_out(state: StageState) -> list[Send] | str:
        if state.get("done"):
            return END
        stage1 = _records(state, "parent_records")
        mine = _records(state)
        everything = stage1 + mine
        summary = (state.get("stage1_summary") or {}).get("text")
        history = compress_history(mine, rt.config.context_token_budget) if mine else None
        sends = []
        for parent_id in state.get("parents", []):
            root = next(r for r in stage1 if r.id == parent_id)
            parent = _lineage_best(everything, root)
            for focus, agents in rt.tuners.items():
                for agent in agents:
                    if not rt.active(agent):
                        continue
                    job: AgentJob = {
                        "agent": agent.name,
                        "focus": focus.value,
                        "round": state["round"],
                        "parent_id": parent.id,
                        "history": history,
                        "feedback": feedback_for(mine, agent.name),
                        "stage_summary": summary,
                        "attempts": _attempts(everything),
                    }
                    sends.append(Send("refine", {**job, "parent_structure": parent.structure,
                                                 "parent_evidence": parent.evidence}))
        # a tuning job proposes one refinement, and on a GPU an expert tuner's proposal first screens
        # its configs (up to tiling/screen-seconds): jobs past the candidates left would screen for
        # nothing, so the first ones (parents in rank order, focuses in order) go
        return sends[:rt.candidates_left(Stage.HARDWARE_TUNING)] or END

    def refine(job: AgentJob) -> dict[str, Any]:
        return run_agent_job(rt, dict(job), Stage.HARDWARE_TUNING, _analysis_of(rt))

    def after_round(state: StageState) -> str:
        more = state["round"] < rt.config.budget.stage2_rounds and not rt.over_budget()
        live = [a for group in rt.tuners.values() for a in group if rt.active(a)]
        return "start_round" if more and live else END

    return _round_loop("refine", start_round, fan_out, refine, after_round)


def _round_loop(work_name: str, start_round: Any, fan_out: Any, work: Any, after_round: Any) -> Any:
    """start_round -> Send(work) per agent job -> collect (fan-in) -> next round or END."""
    graph = StateGraph(StageState, input_schema=StageInput, output_schema=StageOutput)
    graph.add_node("start_round", start_round)
    graph.add_node(work_name, work)
    graph.add_node("collect", lambda state: {})
    graph.add_edge(START, "start_round")
    graph.add_conditional_edges("start_round", fan_out, [work_name, END])
    graph.add_edge(work_name, "collect")
    graph.add_conditional_edges("collect", after_round, ["start_round", END])
    return graph.compile()


def _analysis_of(rt: Runtime) -> dict[str, Any]:
    return rt.analysis
