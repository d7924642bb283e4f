"""The roofline path: achieved bandwidth and FLOP rate against the device's ceilings."""

from __future__ import annotations

from pathlib import Path

import pytest

from egg.device import default_facts
from egg.profile import roofline_evidence

H200 = default_facts()


def analysis(min_bytes: int, flops: int, op_classes: list[str], dtype: str = "float32") -> dict:
    return {"min_bytes": min_bytes, "flops": flops, "op_classes": op_classes,
            "inputs": [{"name": "x", "shape": [1024, 1024], "dtype": dtype}],
            "outputs": [{"name": "out", "shape": [1024, 1024], "dtype": dtype}]}


def test_memory_bound_against_the_memory_roofline() -> None:
    # 2.58 GB in 1 ms is 2.58 TB/s: 0.60 of the H200's 4.3 TB/s
    evidence = roofline_evidence(analysis(2_580_000_000, 10**9, ["reduction"]), 1.0, H200)
    assert evidence.bound == "memory" and evidence.source == "roofline"
    assert evidence.bandwidth_fraction == pytest.approx(0.6)
    assert evidence.statement.startswith("memory-bound at 0.60 of the 4.3 TB/s memory roofline (2.58 TB/s effective)")
    assert evidence.statement.endswith("(roofline estimate)")
    assert "effective" in evidence.notes[0]


def test_compute_bound_matmul_against_the_tensor_core_peak() -> None:
    # 2 * 8192^3 FLOP in 2 ms: 550 TFLOP/s, 0.70 of 790 bf16
    evidence = roofline_evidence(analysis(3 * 8192 * 8192 * 2, 2 * 8192**3, ["matmul"], "bfloat16"), 2.0, H200)
    assert evidence.bound == "compute"
    assert evidence.flops_fraction == pytest.approx(2 * 8192**3 / 2e-3 / 790e12)
    assert evidence.statement.startswith("compute-bound at 0.70 of 790 TFLOP/s bf16 tensor-core")


def test_tiny_problems_are_latency_bound() -> None:
    evidence = roofline_evidence(analysis(64 * 1024, 16 * 1024, ["elementwise"]), 0.008, H200)
    assert evidence.bound == "latency" and evidence.statement.startswith("latency-bound: 0.008 ms moving 0.0655 MB")


def test_unknown_gpu_has_no_compute_fraction() -> None:
    device = H200.model_copy(update={"peak_flops": {}, "name": "NVIDIA Future"})
    evidence = roofline_evidence(analysis(2_580_000_000, 10**9, ["reduction"]), 1.0, device)
    assert evidence.flops_fraction is None and "fraction unknown" in evidence.statement
    assert any("no peak FLOP rate for NVIDIA Future" in n for n in evidence.notes)


def test_on_a_real_analysis() -> None:
    from egg.analysis import analyze_problem

    data = analyze_problem(Path(__file__).resolve().parents[2] / "workloads" / "rms_norm.py").model_dump(mode="json")
    ms = data["roofline_ms"] * 2  # a candidate at half the roofline speed
    evidence = roofline_evidence(data, ms, H200)
    assert evidence.bandwidth_fraction == pytest.approx(data["min_bytes"] / (ms / 1e3) / H200.memory_bytes_per_s)
