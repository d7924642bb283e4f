"""The H200 roofline: the fastest a problem could possibly run, and what limits it."""

from __future__ import annotations

from egg.device import DEFAULT_GPU
from egg.vocabulary import Bottleneck

# The H200's ceilings are egg.device's (one table: measured copy bandwidth and bf16 GEMM, datasheet
# tf32/fp32/fp64; its docstring gives the sources). The analysis always states the H200 roofline,
# whatever machine it runs on; profiler evidence measures against the device a run tunes for.
_H200 = DEFAULT_GPU.peak_flops
H200_ROOFLINE: dict[str, float] = {
    "memory_bytes_per_s": DEFAULT_GPU.memory_bytes_per_s,  # measured 4.3 TB/s; datasheet 4.8 TB/s
    "bf16_tensor_flops_per_s": _H200["bf16_tensor"],
    "fp16_tensor_flops_per_s": _H200["fp16_tensor"],
    "tf32_tensor_flops_per_s": _H200["tf32_tensor"],
    "fp32_flops_per_s": _H200["fp32"],  # CUDA cores (no tensor cores)
    "fp64_flops_per_s": _H200["fp64"],
    # Below this the GPU cannot be filled: launch overhead and latency dominate.
    "latency_floor_s": 5e-6,
}


def tensor_core_rate(dtype: str | None, allow_tf32: bool) -> float:
    """FLOP/s for matmul-like work (matmul, conv, attention) in ``dtype``."""
    if dtype in ("bfloat16", "float16"):
        return H200_ROOFLINE["bf16_tensor_flops_per_s"]
    if dtype == "float64":
        return H200_ROOFLINE["fp64_flops_per_s"]
    if dtype == "float32" and allow_tf32:
        return H200_ROOFLINE["tf32_tensor_flops_per_s"]
    return H200_ROOFLINE["fp32_flops_per_s"]


def vector_rate(dtype: str | None) -> float:
    """FLOP/s for everything else (elementwise, reductions), which runs on CUDA cores."""
    if dtype == "float64":
        return H200_ROOFLINE["fp64_flops_per_s"]
    return H200_ROOFLINE["fp32_flops_per_s"]


def roofline(compute_s: float, min_bytes: int) -> tuple[float, Bottleneck]:
    """(lower-bound milliseconds, bottleneck) given the compute time and the bytes moved."""
    memory_s = min_bytes / H200_ROOFLINE["memory_bytes_per_s"]
    floor_s = max(compute_s, memory_s)
    if floor_s < H200_ROOFLINE["latency_floor_s"]:
        bottleneck = Bottleneck.LATENCY
    elif compute_s > memory_s:
        bottleneck = Bottleneck.COMPUTE
    else:
        bottleneck = Bottleneck.MEMORY
    return floor_s * 1e3, bottleneck
