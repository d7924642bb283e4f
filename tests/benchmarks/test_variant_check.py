"""benchmarks/variant_check.py: every variant of a problem judged in the interpreter, one line each;
a missing file is a one-line error with exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "variant_check.py"
PROBLEM = '''import torch
import torch.nn as nn

ROWS = 6
COLS = 40
SHAPES = {"small": {"ROWS": 3, "COLS": 24}}


class Model(nn.Module):
    def __init__(self, cols: int) -> None:
        super().__init__()
        self.proj = nn.Linear(cols, cols)

    def forward(self, x):
        return torch.softmax(self.proj(x) * 0.5, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [COLS]
'''


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=600,
                          cwd=SCRIPT.parents[1])


def test_every_variant_is_judged_and_reported(tmp_path: Path) -> None:
    problem = tmp_path / "linear_softmax.py"
    problem.write_text(PROBLEM)
    out = tmp_path / "rows.json"
    done = _run(str(problem), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(out.read_text())
    variants = [r["variant"] for r in rows]
    # the GEMM's Triton variants are judged too, not only the first candidate
    assert variants[0] == "fused" and "triton-matmul-ieee" in variants and len(variants) >= 3, variants
    assert all(r["accepted"] is True for r in rows), rows
    lines = [line for line in done.stdout.splitlines() if line.startswith("linear_softmax ")]
    assert len(lines) == len(rows) and all(": accepted (" in line for line in lines), done.stdout


def test_a_missing_problem_is_a_one_line_error(tmp_path: Path) -> None:
    done = _run(str(tmp_path / "nope.py"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {tmp_path / 'nope.py'}: no such problem file"]
