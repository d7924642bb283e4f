"""Device facts: from the device's properties where torch reports them, the table where it does not."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from egg.device import KNOWN_GPUS, GpuSpec, default_facts, device_facts, facts_from_properties, find_gpu, merge_tables


def props(**over):
    """The attributes ``torch.cuda.get_device_properties`` reports, as an H200 reports them."""
    base = dict(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132, memory_bus_width=6144,
                memory_clock_rate=3_201_000, L2_cache_size=52_428_800, shared_memory_per_block=49152,
                shared_memory_per_block_optin=232448)
    base.update(over)
    return SimpleNamespace(**{k: v for k, v in base.items() if v is not None})


def test_cpu_runs_use_the_h200_defaults_and_say_so() -> None:
    facts = device_facts("cpu")
    assert facts.source == "defaults"
    assert (facts.name, facts.sm_count, facts.arch) == ("NVIDIA H200", 132, "sm_90")
    assert facts.memory_bytes_per_s == 4.3e12 and facts.peak_flops["bf16_tensor"] == 790e12
    assert "no CUDA device" in facts.notes[0] and "[defaults" in facts.line()


def test_properties_win_and_the_table_gives_the_ceilings() -> None:
    facts = facts_from_properties(props(multi_processor_count=130, L2_cache_size=60 * 2**20))
    assert facts.source == "device" and facts.arch == "sm_90"
    assert facts.sm_count == 130 and facts.l2_bytes == 60 * 2**20 and facts.shared_memory_per_block == 232448
    # bus width x memory clock x 2 (double data rate), in bytes per second
    assert facts.memory_spec_bytes_per_s == pytest.approx(6144 / 8 * 3.201e9 * 2)
    assert facts.memory_bytes_per_s == 4.3e12  # the measured copy bandwidth is the roofline
    assert facts.flop_rate("bfloat16", tensor_cores=True) == 790e12


def test_an_unknown_gpu_gets_its_bus_bandwidth_and_no_flop_peaks() -> None:
    facts = facts_from_properties(props(name="NVIDIA Future GPU", memory_bus_width=4096, memory_clock_rate=2_000_000))
    assert facts.memory_bytes_per_s == pytest.approx(4096 / 8 * 2e9 * 2)
    assert facts.peak_flops == {} and facts.flop_rate("float32", tensor_cores=False) is None
    assert any("not in the device table" in n for n in facts.notes)


def test_an_older_torch_without_bus_properties_falls_back_to_the_table() -> None:
    facts = facts_from_properties(props(name="NVIDIA A100-SXM4-80GB", major=8, memory_bus_width=None,
                                        memory_clock_rate=None, L2_cache_size=None))
    assert facts.memory_bytes_per_s == 2.039e12 and facts.l2_bytes == 40 * 2**20
    assert any(n.startswith("bus bandwidth: not reported") for n in facts.notes)


def test_the_most_specific_row_matches_first() -> None:
    assert find_gpu("NVIDIA H100 PCIe").match == "H100 PCIe"
    assert find_gpu("NVIDIA H100 80GB HBM3").match == "H100"
    assert find_gpu("Radeon") is None


def test_flop_rates_by_dtype() -> None:
    facts = default_facts()
    # TF32 is off unless allowed: fp32-accurate matmul work runs on CUDA cores or as 3xTF32 (a third of TF32)
    assert facts.flop_rate("float32", tensor_cores=True) == max(67e12, 495e12 / 3)
    assert facts.flop_rate("float32", tensor_cores=True, allow_tf32=True) == 495e12
    assert facts.flop_rate("float16", tensor_cores=False) == 67e12
    assert facts.flop_rate("float64", tensor_cores=True) == 34e12


def test_a_pack_row_replaces_the_builtin_one() -> None:
    mine = GpuSpec(match="h200", arch="sm_90", sm_count=132, shared_memory_per_block=232448, l2_bytes=50 * 2**20,
                   memory_bytes_per_s=4.5e12, peak_flops={"bf16_tensor": 800e12}, source="my lab")
    table = merge_tables([mine])
    assert table[0] is mine and len(table) == len(KNOWN_GPUS)
    assert default_facts(table).memory_bytes_per_s == 4.5e12
