"""Every example script runs to completion as a user would run it (a subprocess, from the repo root).

Outputs go to a temporary folder (``EGG_EXAMPLE_OUT``). ``PYTHONPATH`` puts the checkout first so
the scripts import this tree's packages even when the editable install predates one of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def run_example(script: Path, tmp_path: Path, timeout: float, *args: str) -> str:
    env = {**os.environ, "EGG_EXAMPLE_OUT": str(tmp_path / "out"), "COLUMNS": "120",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run([sys.executable, str(script), *args], cwd=REPO, env=env, text=True,
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{script.name} ran past {timeout:.0f} s:\n{(exc.stdout or '')[-2000:]}")
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_show_pack_effect(tmp_path: Path) -> None:
    out = run_example(EXAMPLES / "custom_principles" / "show_pack_effect.py", tmp_path, 60)
    assert "With my-house-rules" in out and "memory/eviction-hints" in out


def test_rescore_kernelbench(tmp_path: Path) -> None:
    out = run_example(EXAMPLES / "rescore_kernelbench.py", tmp_path, 120)
    assert "3 problems: 1 correct" in out
    assert "rejected at static" in out and "rejected at missing" in out  # the fallback is caught
    assert "fast_p vs eager" in out
    pages = list((tmp_path / "out").glob("kb-rescore-*/report.html"))
    assert len(pages) == 1 and "fast_p" in pages[0].read_text()


@pytest.mark.slow
def test_optimize_your_module(tmp_path: Path) -> None:
    out = run_example(EXAMPLES / "optimize_your_module.py", tmp_path, 180)
    assert "after updating the live weights" in out and "report:" in out
    assert list((tmp_path / "out").glob("optimize_your_module-*/run/report.html"))


@pytest.mark.slow
def test_run_a_workload(tmp_path: Path) -> None:
    out = run_example(EXAMPLES / "run_a_workload.py", tmp_path, 180)
    assert "egg optimize" in out and "analysis:" in out and "report.html:" in out
    runs = list((tmp_path / "out").glob("rms_norm-*"))
    assert len(runs) == 1 and (runs[0] / "report.json").is_file() and (runs[0] / "report.html").is_file()
