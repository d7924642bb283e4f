"""Crash mid-stage, then `egg optimize --resume`: nothing already evaluated is evaluated again, and
nothing already spent (LLM calls, tokens, evaluations, wall time) is forgotten."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from egg.config import Budget, RunConfig
from egg.run import run_optimization

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
GOOD = (FIXTURES / "candidates" / "add_relu_triton.py").read_text()
# Correct, but each forward burns ~0.2 s of Python, so its evaluation is still running when killed.
SLOW = GOOD.replace("        x = x.contiguous()", "        sum(range(3_000_000))\n        x = x.contiguous()")


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, "the run ended before it could be interrupted"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_resume_after_a_crash_re_evaluates_nothing(tmp_path):
    replay = tmp_path / "answers.jsonl"
    with replay.open("w") as fh:
        for code in (GOOD, SLOW):
            fh.write(json.dumps({"response": f"STRUCTURE: fused\n```python\n{code}\n```"}) + "\n")
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "egg", "optimize", str(PROBLEM), "--llm", f"replay:{replay}",
           "--device", "cpu", "--out", str(run_dir), "--budget", "designers=2,rounds=1,stage2_rounds=0", "--no-expert-seeds"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = run_dir / "candidates" / "s1r1-llm-designer-1-0" / "verdict.json"
    try:
        _wait_for(first, proc)
        _wait_for(run_dir / "candidates" / "s1r1-llm-designer-2-0" / "candidate.py", proc)
        time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the crash: the run and its worker die at once
        proc.wait()
    assert not (run_dir / "report.json").exists()
    first_verdict = first.read_text()
    first_mtime = first.stat().st_mtime_ns
    answers_before = len((run_dir / "transcript.jsonl").read_text().splitlines())

    t_resume = time.monotonic()
    report = run_optimization(None, None, run_dir, resume=True)
    resumed_s = time.monotonic() - t_resume

    assert first.stat().st_mtime_ns == first_mtime and first.read_text() == first_verdict
    # the whole run: two candidates, each evaluated once (the interrupted one in the resumed process)
    assert report.evaluations_run == 2
    first_run, resumed = report.invocations
    assert not first_run["finished"] and resumed["finished"]
    assert first_run["wall_s"] > 0 and 0 < resumed["wall_s"] < resumed_s + 1
    assert report.wall_s == round(first_run["wall_s"] + resumed["wall_s"], 3) > resumed["wall_s"]
    assert sorted(c.id for c in report.candidates) == ["s1r1-llm-designer-1-0", "s1r1-llm-designer-2-0"]
    assert all(c.accepted for c in report.candidates)
    # LLM usage spans both processes: the finished designer's call is not forgotten, so the
    # resumed run's budget and report both count it
    assert report.llm_usage["calls"] == 2
    # no answer was asked for twice: the resumed agent was served from the transcript
    assert len((run_dir / "transcript.jsonl").read_text().splitlines()) == answers_before
    assert (run_dir / "report.json").is_file() and (run_dir / "best.py").is_file()


def test_resuming_a_finished_run_keeps_its_llm_usage(tmp_path):
    # the checkpoint, not the process, holds what was spent: a resumed run (here one that had
    # already finished) reports every LLM call made for it, and its budgets count them
    replay = tmp_path / "answers.jsonl"
    replay.write_text(json.dumps({"response": f"STRUCTURE: fused\n```python\n{GOOD}\n```"}) + "\n")
    config = RunConfig(llm=f"replay:{replay}", device="cpu", expert_seeds=False, trials=2, timing_runs=3,
                       budget=Budget(designers=1, stage1_rounds=1, stage2_rounds=0, top_k=1))
    first = run_optimization(PROBLEM, config, tmp_path / "run")
    assert first.llm_usage["calls"] == 1
    again = run_optimization(None, None, tmp_path / "run", resume=True)
    assert again.evaluations_run == first.evaluations_run == 1 and again.llm_usage == first.llm_usage
    assert len(again.invocations) == 2 and again.wall_s >= first.wall_s
