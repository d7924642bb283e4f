"""`egg optimize --llm none --principles PACK`: a user's pack changes what the expert agents do."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agents.expert.design import read_config

RMS_NORM = Path(__file__).parents[2] / "workloads" / "rms_norm.py"
PACK = """
name: off-pack
version: 1.0.0
description: No fallback structure, and short one-pass rows.
principles:
  - id: off-pack/no-fallback
    stage: algorithm_design
    focus: structure
    applies_to: [normalization, reduction]
    text: Never the less-fused fallback here; loop rows longer than 32.
    decisions:
      - variants: {less-fused: {enabled: false}}
        constants: {tiling/persistent-row-max: 32}
"""


def test_a_user_pack_switches_a_variant_off_and_sets_a_constant_in_a_run(tmp_path: Path) -> None:
    pack = tmp_path / "off.yaml"
    pack.write_text(PACK)
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "egg", "optimize", str(RMS_NORM), "--shapes", "small", "--llm", "none",
                           "--device", "cpu", "--principles", str(pack), "--no-memory", "--budget",
                           "candidates=3,stage2_rounds=1", "--out", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    assert report["best"] is not None and report["best"]["accepted"]
    configs = {c["id"]: read_config((out / "candidates" / c["id"] / "candidate.py").read_text())
               for c in report["candidates"]}
    assert configs and all(c is not None and c.variant != "less-fused" for c in configs.values())
    designed = [c for c in report["candidates"] if c["stage"] == "algorithm_design"]
    assert designed and all("off-pack/no-fallback" in c["principle_ids"] for c in designed)
    # stage 2 starts from stage 1's summary: its tuners refine the summary's best structure
    best1 = report["stage_summaries"]["algorithm_design"]["best_id"]
    tuned = [c for c in report["candidates"] if c["stage"] == "hardware_tuning"]
    assert tuned and all(c["parent_id"] == best1 for c in tuned)
    assert all(configs[c["id"]].variant == configs[best1].variant for c in tuned)
    for c in designed:  # the 384-wide rows loop: the pack's constant, not the built-in 16384
        assert [k.config["PERSISTENT"] for k in configs[c["id"]].kernels if k.template == "reduction"] == [False]
