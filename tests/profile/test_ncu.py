"""Bottleneck statements from recorded ``ncu --csv`` output (both layouts ncu prints)."""

from __future__ import annotations

from pathlib import Path

import pytest

from egg.profile import NcuFailed, ncu_evidence, parse_ncu_csv
from egg.profile.ncu import DRAM_PCT, DURATION, L2_HIT_PCT, OCCUPANCY_PCT, SM_PCT

FIXTURES = Path(__file__).parent / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_raw_page_with_base_units() -> None:
    (kernel,) = parse_ncu_csv(read("ncu_raw_rms_norm.csv"))
    assert kernel.name == "_rms_norm_fwd_kernel"
    assert kernel.metrics[DURATION] == 41216.0  # "41,216" nsecond
    assert kernel.metrics["dram__bytes_read.sum"] == 134217728.0
    evidence = ncu_evidence([kernel])
    stalls = {s.reason: s.share for s in evidence.stalls}
    assert "selected" not in stalls and "not_selected" not in stalls  # issuing is not stalling
    assert evidence.stalls[0].reason == "long_scoreboard"
    assert evidence.statement == (f"memory-bound at 0.82 of DRAM peak; occupancy 71%; L2 hit 12%; top stall: long "
                                  f"scoreboard ({stalls['long_scoreboard']:.0%} of stalls) (ncu)")
    assert evidence.bound == "memory" and evidence.source == "ncu"
    assert evidence.achieved_bytes_per_s == pytest.approx((134217728 + 33556480) / 41216e-9)


def test_details_page_with_scaled_units_and_two_kernels() -> None:
    kernels = parse_ncu_csv(read("ncu_details_matmul_epilogue.csv"))
    assert [k.name for k in kernels] == ["matmul_kernel", "triton_poi_fused_add_gelu_0"]
    assert kernels[0].metrics[DURATION] == pytest.approx(186460.0)  # 186.46 usecond
    assert kernels[1].metrics["dram__bytes_write.sum"] == pytest.approx(16.78e6)  # Mbyte
    evidence = ncu_evidence(kernels)
    weights = [k.metrics[DURATION] for k in kernels]

    def mean(metric: str) -> float:
        return sum(k.metrics[metric] * w for k, w in zip(kernels, weights)) / sum(weights)

    assert evidence.bound == "compute"  # the matmul dominates the time and is SM-bound
    assert evidence.flops_fraction == pytest.approx(mean(SM_PCT) / 100)
    assert evidence.bandwidth_fraction == pytest.approx(mean(DRAM_PCT) / 100)
    assert evidence.statement.startswith(f"compute-bound at {mean(SM_PCT) / 100:.2f} of SM peak; "
                                         f"occupancy {mean(OCCUPANCY_PCT):.0f}%; L2 hit {mean(L2_HIT_PCT):.0f}%; "
                                         "top stall: wait")
    share = weights[0] / sum(weights)
    assert f"2 kernels, the longest (matmul_kernel) {share:.0%} of the time" in evidence.statement


def test_latency_bound_when_neither_ceiling_is_near() -> None:
    text = read("ncu_raw_rms_norm.csv").replace('"81.73"', '"21.30"')
    evidence = ncu_evidence(parse_ncu_csv(text))
    assert evidence.bound == "latency"
    assert evidence.statement.startswith("latency-bound: 0.21 of DRAM peak, 0.24 of SM peak")


def test_no_permission_is_ncu_own_words() -> None:
    with pytest.raises(NcuFailed, match="^==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"):
        parse_ncu_csv(read("ncu_no_permission.txt"))


def test_no_table_at_all() -> None:
    with pytest.raises(NcuFailed, match="no metrics table"):
        parse_ncu_csv("==PROF== Disconnected from process 1\n==WARNING== No kernels were profiled.\n")
