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


def test_fp32_matmul_ceiling_is_3xtf32_where_tensor_cores_beat_cuda_cores() -> None:
    """KernelBench level 1 #1 on the H200 (2026-12-04): 4096^3 fp32 in 1.67 ms, 82 TFLOP/s, by 3xTF32 on
    tensor cores; against the 67 TFLOP/s CUDA-core peak that read "1.23 of the roofline". The
    fp32-accurate ceiling is the faster of the CUDA-core peak and a third of the TF32 peak."""
    evidence = roofline_evidence(analysis(3 * 4096 * 4096 * 4, 2 * 4096**3, ["matmul"]), 1.67, H200)
    peak = max(H200.peak_flops["fp32"], H200.peak_flops["tf32_tensor"] / 3)
    assert evidence.flops_fraction == pytest.approx(2 * 4096**3 / 1.67e-3 / peak)
    assert evidence.flops_fraction < 1.0 and f"{peak / 1e12:.0f} TFLOP/s fp32 tensor-core" in evidence.statement
    # elementwise work stays on the CUDA-core peak
    assert H200.flop_rate("float32", tensor_cores=False) == H200.peak_flops["fp32"]


@pytest.mark.parametrize(("cudnn_tf32", "allow_tf32", "peak"), [(True, False, "tf32_tensor"), (False, False, None),
                                                                 (False, True, "tf32_tensor")])
def test_fp32_convolutions_are_measured_against_the_precision_the_flags_give(cudnn_tf32: bool, allow_tf32: bool,
                                                                             peak: str | None) -> None:
    """cuDNN runs fp32 convolutions in TF32 under PyTorch's default flags (a channels-last conv on the
    H200 read "2.54 of 67 TFLOP/s", 2026-12-04); under --strict-fp32 the fp32-accurate ceiling holds."""
    data = analysis(10**9, 4 * 10**14, ["conv", "elementwise"])
    evidence = roofline_evidence(data, 2.0, H200, allow_tf32=allow_tf32, cudnn_tf32=cudnn_tf32)
    expected = H200.peak_flops[peak] if peak else max(H200.peak_flops["fp32"], H200.peak_flops["tf32_tensor"] / 3)
    assert evidence.flops_fraction == pytest.approx(4 * 10**14 / 2e-3 / expected)
