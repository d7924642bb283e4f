"""Classifying a candidate's move: expert headers (from the real expert agents) and LLM code."""

from __future__ import annotations

import json
from pathlib import Path

from agents.expert.agents import ExpertDesigner
from agents.expert.tuner import ExpertTuner
from agents.protocol import AgentTask, Draft
from egg.memory import classify, read_header
from egg.memory.directions import config_strategy, parse_config_strategy
from egg.vocabulary import Backend, Focus, Stage

PROBLEM = Path(__file__).resolve().parents[1] / "fixtures" / "problems" / "add_relu.py"


def header(variant: str, kernels: list[dict]) -> str:
    return "# EGG-EXPERT-CONFIG: " + json.dumps({"variant": variant, "device": "cuda", "kernels": kernels}) + "\n"


def task(stage: Stage, focus: Focus, parent: Draft | None = None) -> AgentTask:
    return AgentTask(problem_path=str(PROBLEM), problem_source=PROBLEM.read_text(), problem_description="",
                     stage=stage, focus=focus, backend=Backend.TRITON, parent=parent, round=1, agent_name="expert")


def test_moves_of_the_real_expert_agents() -> None:
    (draft, *_) = ExpertDesigner(device="cpu").propose(task(Stage.ALGORITHM_DESIGN, Focus.STRUCTURE))
    move = classify("algorithm_design", "structure", draft.source)
    variant = read_header(draft.source)["variant"]
    assert move.strategy == f"variant {variant}"
    assert move.direction in ("fuse around library calls", "fuse the epilogue into a Triton matmul", "fuse less")
    draft.id = "s1r1-expert-0"
    tuned = ExpertTuner(Focus.TILING, device="cpu").propose(task(Stage.HARDWARE_TUNING, Focus.TILING, draft))
    for child in tuned:
        move = classify("hardware_tuning", "tiling", child.source, draft.source)
        assert move.direction == "retile"
        assert move.strategy != "no config change" and "=" in move.strategy


def test_tuning_moves_from_headers_of_either_version() -> None:
    parent = header("triton-matmul", [{"kernel": "k0", "template": "matmul", "config": {"BLOCK_N": 64, "num_warps": 4}}])
    child = header("triton-matmul", [{"kernel": "k0", "template": "matmul", "config": {"BLOCK_N": 128, "num_warps": 4}}])
    assert classify("hardware_tuning", "tiling", child, parent).model_dump() == {
        "direction": "retile for tensor cores", "strategy": "matmul.BLOCK_N=128"}
    old_parent = header("fused", [{"launcher": "l0", "template": "reduction", "config": {"PERSISTENT": True}}])
    old_child = header("fused", [{"launcher": "l0", "template": "reduction", "config": {"PERSISTENT": False}}])
    assert classify("hardware_tuning", "parallel_mapping", old_child, old_parent).model_dump() == {
        "direction": "remap work to programs", "strategy": "reduction.PERSISTENT=false"}
    assert classify("algorithm_design", "structure", header("triton-matmul-3xtf32", [])).direction == (
        "fuse the epilogue into a Triton matmul")


def test_llm_code_is_classified_by_stage_focus_and_principles() -> None:
    code = "import triton\n"
    assert classify("algorithm_design", "structure", code, principle_ids=["b/x", "a/y"]).model_dump() == {
        "direction": "restructure", "strategy": "llm: a/y, b/x"}
    assert classify("hardware_tuning", "memory", code, code).model_dump() == {
        "direction": "cut memory traffic", "strategy": "llm: no principle cited"}
    assert read_header("# EGG-EXPERT-CONFIG: {broken\n") is None


def test_config_strategy_names_parse_back_and_other_strategies_do_not() -> None:
    parse_move = parse_config_strategy
    assert parse_move("matmul.BLOCK_M=128") == [("matmul", "BLOCK_M", 128)]
    assert parse_move("matmul.BLOCK_M=128, matmul.num_warps=8") == [("matmul", "BLOCK_M", 128), ("matmul", "num_warps", 8)]
    assert parse_move('reduction.EVICT="evict_first"') == [("reduction", "EVICT", "evict_first")]
    for other in ("variant fused", "llm: memory/vectorize, tiling/autotune-narrowly", "no config change", "matmul.X=[1"):
        assert parse_move(other) is None
    changes = [("matmul", "num_warps", 8), ("matmul", "BLOCK_M", 128), ("reduction", "EVICT", "evict_first")]
    name = config_strategy(changes)
    assert name == 'matmul.BLOCK_M=128, matmul.num_warps=8, reduction.EVICT="evict_first"'
    assert sorted(parse_config_strategy(name) or []) == sorted(changes)
