"""`egg prompt` shows a user pack's principle for the matching stage/focus and not for others."""

from __future__ import annotations

from pathlib import Path

import pytest

from egg.cli.main import main

PROBLEM = Path(__file__).parents[1] / "fixtures" / "problems" / "add_relu.py"

PACK = """
name: held-out-rules
version: 1.2.3
description: a pack the tests make up
principles:
  - id: held-out-rules/structure-rule
    stage: algorithm_design
    focus: structure
    applies_to: [elementwise]
    text: >-
      ZEBRA-STRUCTURE fuse the whole chain into one kernel; it hurts when outputs are reused.
  - id: held-out-rules/memory-rule
    stage: hardware_tuning
    focus: memory
    applies_to: [elementwise]
    text: >-
      OKAPI-MEMORY stream activations with evict_first; it hurts when data is re-read.
  - id: held-out-rules/tiling-rule
    stage: hardware_tuning
    focus: tiling
    applies_to: [elementwise]
    text: >-
      LLAMA-TILING use 1024-element blocks; it hurts on tiny tensors.
"""


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    path = tmp_path / "held-out.yaml"
    path.write_text(PACK)
    return path


@pytest.mark.parametrize(
    ("stage", "focus", "shown"),
    [
        ("algorithm_design", "structure", "ZEBRA-STRUCTURE"),
        ("hardware_tuning", "memory", "OKAPI-MEMORY"),
        ("hardware_tuning", "tiling", "LLAMA-TILING"),
    ],
)
def test_prompt_shows_only_the_matching_principle(pack, capsys, stage, focus, shown):
    code = main(["prompt", str(PROBLEM), "--stage", stage, "--focus", focus, "--principles", str(pack)])
    out = capsys.readouterr().out
    assert code == 0
    assert shown in out
    for other in {"ZEBRA-STRUCTURE", "OKAPI-MEMORY", "LLAMA-TILING"} - {shown}:
        assert other not in out
    assert "x: float32[37, 129]" in out  # sizes are stated explicitly


def test_prompt_rejects_a_focus_of_the_other_stage(capsys):
    code = main(["prompt", str(PROBLEM), "--stage", "algorithm_design", "--focus", "memory"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "not a focus of stage" in err


def test_bad_pack_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(PACK.replace("stage: hardware_tuning\n    focus: memory", "stage: warp_speed\n    focus: memory"))
    code = main(["prompt", str(PROBLEM), "--stage", "algorithm_design", "--focus", "structure", "--principles", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "held-out-rules/memory-rule" in err and "stage" in err
