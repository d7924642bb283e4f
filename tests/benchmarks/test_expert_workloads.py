"""benchmarks/expert_workloads.py --resume: what an earlier call finished stays in --out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "expert_workloads.py"


def _row(name: str) -> dict:
    return {"workload": name, "accepted": True, "best_ms": 1.0, "eager_ms": 2.0, "compile_ms": 1.5,
            "speedup_vs_eager": 2.0, "speedup_vs_compile": 1.5, "commit": "abc1234"}


def test_a_resumed_call_with_a_shorter_only_list_keeps_the_other_finished_rows(tmp_path: Path) -> None:
    out = tmp_path / "workloads.json"
    out.write_text(json.dumps({"rows": [_row("rms_norm"), _row("swiglu"), {"workload": "gelu_mlp", "skipped": "deadline"}]}))
    # rms_norm is finished, so this call runs nothing; swiglu is not in --only but finished earlier
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--only", "rms_norm", "--resume", "--device", "cpu"],
                   check=True, capture_output=True, text=True, timeout=300)
    rows = json.loads(out.read_text())["rows"]
    assert sorted(r["workload"] for r in rows) == ["rms_norm", "swiglu"]


def test_the_memory_options_choose_where_experience_goes(tmp_path: Path) -> None:
    """--memory PATH records there; --no-memory records nowhere; --memory-record-only records there
    without reading (the sweep's lanes run with it: a problem's figures do not depend on what ran
    before it, and the sweep warms a memory for the transfer benchmark)."""
    import os

    from egg.memory import TransitionMemory

    env = {**os.environ, "EGG_CACHE_DIR": str(tmp_path / "cache")}
    common = ["--only", "rms_norm", "--device", "cpu", "--shapes", "small", "--budget",
              "candidates=1,stage2_rounds=0"]
    memory = tmp_path / "mine.sqlite"
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "a.json"), *common, "--memory", str(memory)],
                   check=True, capture_output=True, text=True, timeout=600, env=env)
    assert TransitionMemory(memory).count() == 1
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "b.json"), *common, "--no-memory"],
                   check=True, capture_output=True, text=True, timeout=600, env=env)
    assert TransitionMemory(memory).count() == 1
    assert not list((tmp_path / "cache").rglob("*.sqlite"))
    assert all(r["accepted"] for r in json.loads((tmp_path / "b.json").read_text())["rows"])
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "c.json"), *common, "--memory", str(memory),
                    "--memory-record-only", "--runs", str(tmp_path / "runs")],
                   check=True, capture_output=True, text=True, timeout=600, env=env)
    assert TransitionMemory(memory).count() == 2
    notes = json.loads((tmp_path / "runs" / "rms_norm" / "report.json").read_text())["notes"]
    assert any("--memory-record-only: recorded, never read" in n for n in notes), notes
