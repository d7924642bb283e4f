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
