"""benchmarks/memory_transfer.py --resume: a benchmark that spans device calls keeps what it measured."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "memory_transfer.py"


def _mode(to_95: int, best: float) -> dict:
    return {"candidates": 4, "speedups": [best], "moves": [], "to_95": to_95, "final_best": best, "timing_comparable": True}


def test_a_resumed_call_keeps_finished_rows_and_the_warm_figures(tmp_path: Path) -> None:
    memory = tmp_path / "warm.sqlite"
    sqlite3.connect(memory).close()
    out = tmp_path / "transfer.json"
    out.write_text(json.dumps({
        "warm": [{"workload": "rms_norm", "candidates": 4}],
        "rows": [{"workload": "swiglu", "memory": _mode(1, 2.0), "no_memory": _mode(2, 2.0)}],
    }))
    # swiglu is finished, so this call measures nothing
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--warm", "rms_norm", "--unseen", "swiglu",
                    "--memory-in", str(memory), "--skip-warm", "--resume", "--device", "cpu"],
                   check=True, capture_output=True, text=True, timeout=300)
    result = json.loads(out.read_text())
    assert result["complete"] and [r["workload"] for r in result["rows"]] == ["swiglu"]
    assert result["warm"] == [{"workload": "rms_norm", "candidates": 4}]
    assert result["summary"]["to_95_relative_change"] == -0.5 and result["summary"]["problems_compared"] == 1


def _script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("memory_transfer", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_common_retiming_compares_the_order_not_the_noise() -> None:
    """The same three kernels proposed in two orders: on common times the mode that proposed the
    best one first needs 1 candidate, the other 3, and both reach the same final best."""
    mt = _script()
    times = {"a": 2.0, "b": 1.5, "c": 1.0}  # ms: c is the best kernel
    memory = ["c", "a", None, "b"]  # a rejected candidate (None) still counts as one proposed
    no_memory = ["a", "b", "c"]
    assert mt.common_to_95(memory, times, eager_ms=4.0) == (1, 4.0)
    assert mt.common_to_95(no_memory, times, eager_ms=4.0) == (3, 4.0)
    # a kernel within 5% of the best is enough
    assert mt.common_to_95(["a", "b", "c"], {"a": 2.0, "b": 1.04, "c": 1.0}, eager_ms=4.0)[0] == 2
    assert mt.common_to_95([None, "x"], {}, eager_ms=4.0) == (None, None)  # nothing accepted on retiming


def test_runs_in_a_work_folder_resume_instead_of_starting_again(tmp_path: Path) -> None:
    """``--work``: a later call (a device call after one the limit cut) resumes each run from its
    checkpoint; a finished run only reports again, with the same candidates."""
    memory = tmp_path / "warm.sqlite"
    sqlite3.connect(memory).close()
    work = tmp_path / "work"
    args = [sys.executable, str(SCRIPT), "--warm", "rms_norm", "--unseen", "swiglu", "--memory-in", str(memory),
            "--skip-warm", "--device", "cpu", "--shapes", "small", "--budget", "candidates=1,rounds=1,stage2_rounds=0",
            "--work", str(work)]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    rows = []
    for call in ("first", "second"):
        out = tmp_path / f"{call}.json"
        subprocess.run([*args, "--out", str(out)], check=True, capture_output=True, text=True, timeout=600, env=env)
        rows.append(json.loads(out.read_text())["rows"][0])
    assert rows[0]["memory"]["speedups"] == rows[1]["memory"]["speedups"]
    assert rows[0]["no_memory"]["speedups"] == rows[1]["no_memory"]["speedups"]
    for mode in ("memory", "no-memory"):
        events = [json.loads(line)["event"] for line in (work / mode / "swiglu" / "invocations.jsonl").read_text().splitlines()]
        assert events.count("start") == 2 and events[-2:] == ["start", "end"]  # the second process took no step


def test_one_target_per_problem_does_not_charge_a_run_for_finding_more() -> None:
    """The supplementary reading: against 95% of the better mode's best, a run that found a better
    kernel later reaches the target and the other run never does (to_target None)."""
    mt = _script()
    memory, plain = [2.8, 1.4, 3.0], [2.8, 1.4]  # speedups: the memory run's third candidate is 7% better
    assert mt.to_95(memory) == (3, 3.0) and mt.to_95(plain) == (1, 2.8)  # own bests: memory looks worse
    assert mt.to_target(memory, 0.95 * 3.0) == 3 and mt.to_target(plain, 0.95 * 3.0) is None
