"""`egg eval`: exit 0 whenever a verdict was reached, 2 on bad usage; --help documents the shape-set
default and the precision flags."""

from __future__ import annotations

import json
from pathlib import Path

import egg.cli.main as cli

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"


def test_help_says_every_shape_set_is_checked_by_default(capsys):
    try:
        cli.main(["eval", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "every set the problem declares" in shown and "--strict-fp32" in shown


def test_a_rejected_candidate_is_a_verdict_with_exit_0(tmp_path, capsys):
    argv = ["eval", str(PROBLEM), str(FIXTURES / "candidates" / "harness" / "wrong_values.py"), "--device", "cpu",
            "--json", "--trials", "1", "--timing-runs", "2", "--seed", "3", "--out", str(tmp_path / "a")]
    assert cli.main(argv) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["accepted"] is False and verdict["stage_failed"] == "correctness"
    assert verdict["shape_sets"] == ["default", "small", "wide"]


def test_conflicting_precision_flags_are_bad_usage(tmp_path, capsys):
    argv = ["eval", str(PROBLEM), str(FIXTURES / "candidates" / "add_relu_triton.py"), "--device", "cpu",
            "--allow-tf32", "--strict-fp32", "--out", str(tmp_path / "b")]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err.startswith("egg: error: --allow-tf32 and --strict-fp32")
