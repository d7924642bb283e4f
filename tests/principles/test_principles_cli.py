"""`egg principles list/show/validate` through egg.cli.main.main, with COMMANDS patched in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import egg.cli.main as cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "custom_principles"


@pytest.fixture(autouse=True)
def _principles_command(monkeypatch: pytest.MonkeyPatch) -> None:
    if "principles" not in cli.COMMANDS:
        monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, "principles"))


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["--log-level", "warning", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_list(capsys) -> None:
    code, out, _ = _run(capsys, "principles", "list")
    assert code == 0
    assert "memory/coalesce-last-dim" in out and "algorithm-structure/fuse-elementwise-chain" in out
    assert "hopper-h200 0.1.0 (builtin)" in out


def test_list_json_with_user_pack(capsys) -> None:
    code, out, _ = _run(capsys, "principles", "list", "--json", "--principles", str(EXAMPLE / "my-house-rules"))
    assert code == 0
    payload = json.loads(out)
    packs = {p["name"]: p for p in payload["packs"]}
    assert packs["my-house-rules"]["version"] == "1.2.0"
    assert packs["my-house-rules"]["overrides"] == ["memory/eviction-hints"]
    owners = {p["id"]: p["pack"] for p in payload["principles"]}
    assert owners["memory/eviction-hints"] == "my-house-rules"


def test_list_filtered(capsys) -> None:
    code, out, _ = _run(capsys, "principles", "list", "--focus", "tiling", "--op-class", "matmul")
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith(("tiling/", "hopper-h200/"))]
    assert lines and all("hardware_tuning/tiling" in line for line in lines)


def test_show_principle_and_template(capsys) -> None:
    code, out, _ = _run(capsys, "principles", "show", "algorithm-structure/split-k-for-small-mn")
    assert code == 0
    assert "splitk_matmul.py" in out and "If M x N yields" in out
    code, out, _ = _run(capsys, "principles", "show", "parallel-mapping/row-reduction")
    # a template shows the kernel it cites: the expert's own, rendered
    assert code == 0 and "_egg_red0_sum_launch()" in out and "@triton.jit" in out and "Generated, do not edit" in out
    code, out, _ = _run(capsys, "principles", "show", "memory/eviction-hints", "--json",
                        "--principles", str(EXAMPLE / "my-house-rules"))
    assert code == 0 and json.loads(out)["pack"] == "my-house-rules"


def test_show_unknown_id(capsys) -> None:
    code, out, err = _run(capsys, "principles", "show", "memory/nope")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("egg: error: unknown principle id 'memory/nope'")


def test_validate_ok(capsys) -> None:
    code, out, _ = _run(capsys, "principles", "validate", str(EXAMPLE / "my-house-rules"),
                        str(REPO / "principles" / "builtin" / "algorithm-structure"))
    assert code == 0
    assert "OK" in out and "my-house-rules 1.2.0: 3 principles (1 overriding other packs)" in out
    assert "algorithm-structure 0.8.15: 34 principles" in out


@pytest.mark.parametrize("mutate", [
    lambda d: d["principles"][0].pop("stage"),
    lambda d: d["principles"][0].__setitem__("stage", "design"),
    lambda d: d["principles"].append(dict(d["principles"][0])),
])
def test_validate_bad_pack_is_one_line_exit_2(capsys, write_pack, pack_data, mutate) -> None:
    mutate(pack_data)
    path = write_pack(pack_data)
    code, out, err = _run(capsys, "principles", "validate", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"egg: error: {path / 'pack.yaml'}: principle test-pack/first-rule: ")


def test_validate_bad_yaml(capsys, write_pack) -> None:
    path = write_pack("name: [oops\n", name="broken")
    code, _, err = _run(capsys, "principles", "validate", str(path))
    assert code == 2 and err.count("\n") == 1 and "bad YAML" in err


def test_bad_pack_via_principles_option(capsys, tmp_path) -> None:
    code, _, err = _run(capsys, "principles", "list", "--principles", str(tmp_path / "missing"))
    assert code == 2 and err.count("\n") == 1 and "no such principle pack" in err


def test_example_script_shows_the_pack_changing_retrieval() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, str(EXAMPLE / "show_pack_effect.py")], capture_output=True,
                            text=True, env=env, timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Added:      ['my-house-rules/reproducible-reductions']" in result.stdout
    assert "Rewritten:  ['memory/eviction-hints']" in result.stdout


def test_list_by_op_class_covers_both_stages(capsys) -> None:
    code, out, _ = _run(capsys, "principles", "list", "--op-class", "scan")
    assert code == 0
    assert "algorithm-structure/scan-with-associative-scan" in out and "memory/coalesce-last-dim" in out
    code, _, err = _run(capsys, "principles", "list", "--stage", "algorithm_design", "--focus", "memory")
    assert code == 2 and err.count("\n") == 1 and "not a focus of stage" in err


EXPLAIN_PACK = """
name: explain-pack
version: 0.1.0
description: Decisions for the explain test.
principles:
  - id: explain-pack/warps
    stage: hardware_tuning
    focus: tiling
    applies_to: [reduction]
    text: More warps for our reductions.
    decisions:
      - tuning: {reduction: {num_warps: {add: [16], remove: [2]}}}
        constants: {tiling/persistent-row-max: 4096}
      - when: {dtypes: [bfloat16]}
        variants: {less-fused: {enabled: false}}
"""


def test_explain_names_the_principle_behind_each_decision(capsys, tmp_path) -> None:
    pack = tmp_path / "explain.yaml"
    pack.write_text(EXPLAIN_PACK)
    problem = REPO / "workloads" / "rms_norm.py"
    code, out, _ = _run(capsys, "principles", "explain", str(problem), "--shapes", "small", "--principles", str(pack))
    assert code == 0
    assert "dtypes float32" in out and "device NVIDIA H200" in out
    assert "tuning reduction.num_warps: removes [2]  [explain-pack/warps]" in out
    assert "tuning reduction.num_warps: adds [16]  [explain-pack/warps]" in out
    assert "tiling/persistent-row-max = 4096 (default 16384)  [explain-pack/warps]" in out
    assert "explain-pack/warps (block 1): when.dtypes [bfloat16]: the problem has [float32]" in out
    assert "the expert agents apply these decisions" in out
    # the effect, not only the decision: rms_norm in fp32 has no less-fused switch applying (bf16 only)
    assert "designer offers, in order: fused" in out
    assert "tuner tries" in out and "num_warps in [4, 8, 16, 16]" not in out
    assert "[explain-pack/warps]" in out.split("What the expert agents do with them")[1]
    code, out, _ = _run(capsys, "principles", "explain", str(problem), "--shapes", "small", "--principles", str(pack),
                        "--gpu", "A100", "--json")
    payload = json.loads(out)
    assert payload["device"]["sm_count"] == 108 and payload["decisions"]["facts"]["arch"] == "sm_80"
    assert payload["decisions"]["applied"] == ["explain-pack/warps"]
    assert payload["device"]["notes"] == ["--gpu A100: the device table's A100 row (NVIDIA A100 80GB SXM datasheet (not measured here))"]


def test_explain_unknown_gpu_is_one_line(capsys) -> None:
    code, _, err = _run(capsys, "principles", "explain", str(REPO / "workloads" / "rms_norm.py"), "--gpu", "TPU")
    assert code == 2 and err.count("\n") == 1 and "--gpu TPU: not in the device table (known: H200" in err
