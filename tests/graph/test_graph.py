"""The whole graph on CPU, driven by a scripted chat model (langchain-core's fake chat model)
returning real Triton code: good, wrong, malformed and cheating answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from egg.config import Budget, RunConfig
from egg.run import run_optimization

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
GOOD = (FIXTURES / "candidates" / "add_relu_triton.py").read_text()
GOOD_256 = GOOD.replace("triton.cdiv(n, 1024)", "triton.cdiv(n, 256)").replace("BLOCK=1024", "BLOCK=256")
WRONG = (FIXTURES / "candidates" / "harness" / "wrong_values.py").read_text()
CHEAT = (FIXTURES / "candidates" / "cheats" / "try_fallback.py").read_text()
MALFORMED = "Fusing add and relu into one kernel is the way to go; I'll write it next time."


def answer(code: str, structure: str = "fused add+relu", principles: str = "") -> AIMessage:
    text = f"STRUCTURE: {structure}\n```python\n{code}\n```\n"
    if principles:
        text += f"PRINCIPLES: {principles}\n"
    return AIMessage(content=text)


def scripted(*messages: AIMessage | str) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(AIMessage(content=m) if isinstance(m, str) else m for m in messages))


def transcript(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]


def config(**budget) -> RunConfig:
    return RunConfig(llm="scripted", device="cpu", expert_seeds=False, budget=Budget(**budget))


def test_rejections_are_fed_back_and_stage2_sees_the_stage1_summary(tmp_path):
    model = scripted(
        MALFORMED,  # round 1, designer 1: no code -> repair turn
        answer(CHEAT, "fused, with a PyTorch fallback"),  # repair answer: a cheat
        answer(WRONG, "add only"),  # round 1, designer 2: wrong result
        answer(GOOD, "one fused kernel, 1024 per program"),  # round 2, designer 1
        answer(GOOD_256, "one fused kernel, 256 per program"),  # round 2, designer 2
        answer(GOOD_256, "256 per program"),  # stage 2: parallel mapping
        answer(WRONG, "tiling that lost the relu"),  # stage 2: tiling
        answer(GOOD, "1024 per program"),  # stage 2: memory
    )
    run_dir = tmp_path / "run"
    cfg = config(designers=2, stage1_rounds=2, stage2_rounds=1, top_k=1)
    report = run_optimization(PROBLEM, cfg, run_dir, chat_model=model)

    by_id = {c.id: c for c in report.candidates}
    assert by_id["s1r1-llm-designer-1-0"].stage_failed == "static"
    assert any("fallback" in r for r in by_id["s1r1-llm-designer-1-0"].reasons)
    assert by_id["s1r1-llm-designer-2-0"].stage_failed == "correctness"
    assert by_id["s1r2-llm-designer-1-0"].accepted and by_id["s1r2-llm-designer-2-0"].accepted
    assert report.best is not None and (run_dir / "best.py").is_file()
    rejected_ids = {r["id"] for r in report.rejected}
    assert {"s1r1-llm-designer-1-0", "s1r1-llm-designer-2-0"} <= rejected_ids

    calls = transcript(run_dir)
    # the malformed answer got a repair turn carrying the precise parse error
    repair = calls[1]["messages"][-1]["content"]
    assert calls[1]["attempt"] == 1 and "no code" in repair
    # round 2 prompts carry each designer's own rejection reasons
    round2 = {c["agent"]: c["messages"][-1]["content"] for c in calls if c["round"] == 2 and c["stage"] == "algorithm_design"}
    assert "static check" in round2["llm-designer-1"]
    assert "outside atol" in round2["llm-designer-2"]
    # stage 2 prompts contain stage 1's summary and the parent's source, not stage 1 transcripts
    stage2 = [c for c in calls if c["stage"] == "hardware_tuning"]
    assert len(stage2) == 3
    summary = report.stage_summaries["algorithm_design"]["text"]
    for call in stage2:
        prompt = call["messages"][-1]["content"]
        assert summary.splitlines()[0] in prompt
        assert MALFORMED not in prompt
    assert report.stage_summaries["algorithm_design"]["accepted"] == 2


def test_candidate_budget_stops_the_run(tmp_path):
    model = scripted(*[answer(GOOD)] * 10)
    report = run_optimization(PROBLEM, config(max_candidates=2, designers=2, stage1_rounds=3), tmp_path / "run",
                              chat_model=model)
    assert len(report.candidates) == 2
    assert any("candidate budget" in r for r in report.stop_reasons)
    assert report.best is not None


def test_stage1_leaves_stage2_its_share_of_the_candidates(tmp_path):
    """Two designers over three rounds would fill a budget of 3 with structures alone: stage 1 stops
    at 2 (top_k = 1 kept) and the best structure is still refined."""
    model = scripted(*[answer(GOOD)] * 10)
    budget = config(max_candidates=3, designers=2, stage1_rounds=3, stage2_rounds=1, top_k=1)
    report = run_optimization(PROBLEM, budget, tmp_path / "run", chat_model=model)
    stages = [c.stage for c in report.candidates]
    assert stages.count("algorithm_design") == 2 and stages.count("hardware_tuning") == 1, stages
    assert any("stage 1's share of the candidate budget reached (2 of 3; 1 kept for stage 2)" in r
               for r in report.stop_reasons), report.stop_reasons
    # one candidate left: one tuner is asked (three would each have proposed, two for nothing)
    assert [c["stage"] for c in transcript(tmp_path / "run")].count("hardware_tuning") == 1
    # without stage 2 rounds, stage 1 may use the whole budget
    model = scripted(*[answer(GOOD)] * 10)
    report = run_optimization(PROBLEM, config(max_candidates=3, designers=2, stage1_rounds=3, stage2_rounds=0),
                              tmp_path / "structures", chat_model=model)
    assert [c.stage for c in report.candidates] == ["algorithm_design"] * 3


def test_calls_whose_answers_stay_malformed_still_count(tmp_path):
    # three calls (the answer, then two repair turns) produce no draft; they cost calls all the same,
    # so the report counts them and a budget of 3 stops the next round
    model = scripted(*[MALFORMED] * 10)
    report = run_optimization(PROBLEM, config(max_llm_calls=3, designers=1, stage1_rounds=3), tmp_path / "run",
                              chat_model=model)
    assert report.candidates == [] and report.llm_usage["calls"] == 3
    assert any("LLM call budget" in r for r in report.stop_reasons)


def test_llm_call_budget_stops_the_run(tmp_path):
    model = scripted(*[answer(WRONG)] * 10)
    report = run_optimization(PROBLEM, config(max_llm_calls=1, designers=1, stage1_rounds=3), tmp_path / "run",
                              chat_model=model)
    assert len(report.candidates) == 1 and report.llm_usage["calls"] == 1
    assert any("LLM call budget" in r for r in report.stop_reasons)
    assert report.best is None and "reference remains" in report.outcome


def test_a_model_that_runs_out_ends_the_run_cleanly(tmp_path):
    model = scripted(answer(GOOD))
    report = run_optimization(PROBLEM, config(designers=1, stage1_rounds=2, stage2_rounds=1), tmp_path / "run",
                              chat_model=model)
    assert [c.id for c in report.candidates] == ["s1r1-llm-designer-1-0"]
    assert report.best is not None
    assert any(f["stage_failed"] == "agent" for f in report.rejected)
