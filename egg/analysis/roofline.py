"""The H200 roofline: the fastest a problem could possibly run, and what limits it."""

from __future__ import annotations

from egg.vocabulary import Bottleneck

# Sources. "Measured" = the project's H200 SXM measurements: device-to-device copy counting
# read+write bytes, and a dense bf16 GEMM. A spot check (torch 2.11, 8192^3 GEMM, 1 GiB copy) gave
# copy 4.25 TB/s, bf16 805, fp16 766, tf32 414 and fp32 cuBLAS SGEMM 51 TFLOP/s: the table is a
# bound, so the datasheet rates are kept where they are higher. "Datasheet" = NVIDIA H200 SXM
# datasheet, dense (its headline tensor-core numbers assume 2:4 sparsity).
H200_ROOFLINE: dict[str, float] = {
    "memory_bytes_per_s": 4.3e12,  # measured; datasheet 4.8 TB/s
    "bf16_tensor_flops_per_s": 790e12,  # measured dense bf16 GEMM; datasheet 989 dense
    "fp16_tensor_flops_per_s": 790e12,  # same tensor cores as bf16
    "tf32_tensor_flops_per_s": 495e12,  # datasheet dense (989 with sparsity)
    "fp32_flops_per_s": 67e12,  # datasheet, CUDA cores (no tensor cores)
    "fp64_flops_per_s": 34e12,  # datasheet, CUDA cores
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
