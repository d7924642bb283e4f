"""Optimize mode on CPU with a scripted LLM: one problem after another, resumable, failures recorded.

The interruption after the first problem is simulated by running ids=1, then ids=1-2,5 with
resume=True; problem 2's run directory is left half-finished (config.json, no report) as a killed
run leaves it, and must be continued with run_optimization(resume=True)."""

from __future__ import annotations

import json
import shutil

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

import kernelbench_adapter.suite as suite_mod
from egg.config import Budget, RunConfig
from kernelbench_adapter import run_suite

from .conftest import ADD_SCALE_WRONG, RELU_TRITON


def scripted(*codes: str) -> GenericFakeChatModel:
    return GenericFakeChatModel(
        messages=iter(AIMessage(content=f"STRUCTURE: one kernel\n```python\n{code}\n```\n") for code in codes)
    )


def config(seed: int = 0) -> RunConfig:
    budget = Budget(designers=1, stage1_rounds=1, stage2_rounds=0)
    return RunConfig(llm="scripted", device="cpu", expert_seeds=False, budget=budget, timeout_s=120, seed=seed)


def test_suite_runs_resumes_and_records_failures(kb_root, tmp_path, monkeypatch):
    out = tmp_path / "out"
    events: list[str] = []
    first = run_suite(kb_root, 1, out, config(), ids="1", chat_model=scripted(RELU_TRITON),
                      progress=lambda e: events.append(e["event"]))
    relu_dir = out / "level1" / "1_ReLU"
    assert (relu_dir / "report.json").is_file() and (relu_dir / "best.py").is_file()
    assert first.metrics.total == 1 and first.metrics.correct == 1
    assert events[0] == "suite_start" and "problem_done" in events and "candidate" in events

    # problem 2 was killed mid-run: its run directory has a config but no report
    half = out / "level1" / "2_Add_and_scale"
    half.mkdir(parents=True)
    shutil.copyfile(kb_root / "KernelBench" / "level1" / "2_Add_and_scale.py", half / "problem.py")
    (half / "config.json").write_text(config().model_dump_json())

    calls: list[tuple[str | None, bool]] = []
    real = suite_mod.run_optimization

    def spy(problem_path, cfg, run_dir, **kwargs):
        calls.append((None if problem_path is None else str(problem_path), kwargs.get("resume", False)))
        return real(problem_path, cfg, run_dir, **kwargs)

    monkeypatch.setattr(suite_mod, "run_optimization", spy)
    report_mtime = (relu_dir / "report.json").stat().st_mtime_ns
    second = run_suite(kb_root, 1, out, config(seed=5), ids="1-2,5", resume=True,
                       chat_model=scripted(ADD_SCALE_WRONG))

    assert (relu_dir / "report.json").stat().st_mtime_ns == report_mtime  # problem 1 was not run again
    assert calls[0] == (None, True)  # the half-finished run was resumed
    assert len(calls) == 2 and calls[1][0].endswith("5_Broken.py") and calls[1][1] is False
    assert second.settings["seed"] == 0  # a resumed suite keeps the settings it started with

    by_id = {r.problem_id: r for r in second.results}
    assert by_id[1].correctness and by_id[1].compiled and by_id[1].runtime_stats["mean"] > 0
    assert by_id[2].stage_failed == "no_candidate_accepted" and by_id[2].compiled
    assert any("correctness" in reason for reason in by_id[2].reasons)
    assert by_id[5].stage_failed == "error" and "get_inputs()" in by_id[5].reasons[0]  # attempted, not skipped

    m = second.metrics
    assert (m.total, m.compiled, m.correct) == (3, 2, 1)
    assert m.correctness_rate == pytest.approx(1 / 3)
    assert m.vs_eager.fast_p["0.0"] == pytest.approx(1 / 3)
    assert m.vs_eager.geo_mean_speedup == pytest.approx(by_id[1].speedup_vs_eager)

    results = json.loads((out / "results.json").read_text())
    assert list(results) == ["1", "2", "5"]
    assert results["1"][0]["correctness"] is True and results["1"][0]["metadata"]["egg_artifact"] == str(relu_dir)
    assert results["5"][0]["stage_failed"] == "error" and results["5"][0]["runtime"] == -1.0
    suite = json.loads((out / "suite.json").read_text())
    assert suite["selected"] == [1, 2, 5] and suite["pending"] == [] and suite["metrics"]["total"] == 3
