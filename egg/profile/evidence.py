"""Profiler evidence: what limits an accepted candidate, as numbers and as one line.

Two paths give it. The *roofline* path needs only the analysis (FLOPs, minimum bytes) and the
verdict's time: achieved bandwidth and FLOP rate against the device's ceilings. It always works
and says what it is: bytes counted once each (inputs, outputs, parameters), so the bandwidth is
an effective one, a floor on the real traffic. The *ncu* path (:mod:`egg.profile.ncu`) measures
what the kernels did (DRAM throughput, SM throughput, occupancy, L2 hit rate, stall reasons)
and is preferred where Nsight Compute works. ``Evidence.source`` says which one was used.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from egg.device import DeviceFacts

Bound = Literal["memory", "compute", "latency"]
# Below this time a kernel cannot fill the GPU whatever it does: launch and latency dominate.
LATENCY_FLOOR_MS = 0.02
# Under this fraction of both ceilings a kernel is not limited by either: latency or occupancy is.
LOW_FRACTION = 0.4
_MATMUL_LIKE = {"matmul", "conv", "attention"}


class Stall(BaseModel):
    reason: str  # ncu's name: long_scoreboard, barrier, ...
    share: float  # of all stall cycles counted (not_selected and selected excluded)


class Evidence(BaseModel):
    source: Literal["ncu", "roofline"]
    bound: Bound
    statement: str = Field(description="one line: the bottleneck, with numbers")
    candidate_ms: float | None = None
    achieved_bytes_per_s: float | None = None
    bandwidth_fraction: float | None = None  # of the device's memory roofline (roofline) or DRAM peak (ncu)
    achieved_flops_per_s: float | None = None
    flops_fraction: float | None = None  # of the peak for the problem's dtype (roofline) or SM peak (ncu)
    occupancy: float | None = None  # achieved, 0..1 (ncu)
    l2_hit_rate: float | None = None  # 0..1 (ncu)
    stalls: list[Stall] = Field(default_factory=list)  # largest first (ncu)
    kernels: int | None = None
    notes: list[str] = Field(default_factory=list)


def _main_dtype(analysis: dict) -> str | None:  # type: ignore[type-arg]
    """The floating dtype most of the output bytes have (what the arithmetic is done in)."""
    weights: dict[str, int] = {}
    for t in analysis.get("outputs", []) + analysis.get("inputs", []):
        if t.get("is_tensor", True) and str(t.get("dtype", "")).startswith(("float", "bfloat")):
            numel = 1
            for size in t.get("shape", []):
                numel *= size
            weights[t["dtype"]] = weights.get(t["dtype"], 0) + numel
    return max(weights, key=lambda d: weights[d]) if weights else None


def roofline_evidence(analysis: dict, candidate_ms: float, device: DeviceFacts,  # type: ignore[type-arg]
                      allow_tf32: bool = False, cudnn_tf32: bool = True) -> Evidence:
    """Achieved bandwidth and FLOP rate of a candidate against the device's ceilings.

    ``analysis``: the problem analysis as JSON (``flops``, ``min_bytes``, ``op_classes``, tensor
    specs). Matmul-like work is measured against the tensor-core peak of its dtype, the rest
    against the CUDA-core peak. fp32 convolutions run in TF32 under PyTorch's default flags
    (``cudnn_tf32``; False under ``--strict-fp32``), so a problem with one is measured against the
    TF32 peak, as one that allows TF32 (``allow_tf32``) is.
    """
    seconds = candidate_ms / 1e3
    min_bytes = int(analysis.get("min_bytes") or 0)
    flops = int(analysis.get("flops") or 0)
    dtype = _main_dtype(analysis)
    classes = set(analysis.get("op_classes", []))
    tensor = bool(_MATMUL_LIKE & classes)
    peak = device.flop_rate(dtype, tensor_cores=tensor, allow_tf32=allow_tf32 or (cudnn_tf32 and "conv" in classes))
    bw = min_bytes / seconds if seconds > 0 else None
    bw_frac = bw / device.memory_bytes_per_s if bw is not None else None
    rate = flops / seconds if seconds > 0 and flops else None
    flop_frac = rate / peak if rate is not None and peak else None
    notes = ["bytes counted once each (inputs, outputs, parameters): the bandwidth is effective, a floor on "
             "the real traffic"]
    if peak is None:
        notes.append(f"no peak FLOP rate for {device.name} in the device table: the compute fraction is unknown")
    unit = {"bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}.get(dtype or "", "fp32")
    peak_text = f"{peak / 1e12:.0f} TFLOP/s {unit}{' tensor-core' if tensor else ''}" if peak else "compute peak"
    mem_text = f"{device.memory_bytes_per_s / 1e12:.1f} TB/s memory roofline"
    bw_part = f"{bw_frac:.2f} of the {mem_text}" if bw_frac is not None else "bandwidth unknown"
    flop_part = f"{flop_frac:.2f} of {peak_text}" if flop_frac is not None else f"{peak_text} fraction unknown"
    frac_m, frac_c = bw_frac or 0.0, flop_frac or 0.0
    if candidate_ms < LATENCY_FLOOR_MS or max(frac_m, frac_c) < LOW_FRACTION:
        bound: Bound = "latency"
        statement = (f"latency-bound: {candidate_ms:.4g} ms moving {min_bytes / 1e6:.3g} MB reaches {bw_part} "
                     f"and {flop_part}")
    elif frac_m >= frac_c:
        bound = "memory"
        statement = f"memory-bound at {bw_part} ({(bw or 0) / 1e12:.2f} TB/s effective); {flop_part}"
    else:
        bound = "compute"
        statement = f"compute-bound at {flop_part} ({(rate or 0) / 1e12:.1f} TFLOP/s); {bw_part}"
    return Evidence(source="roofline", bound=bound, statement=statement + " (roofline estimate)",
                    candidate_ms=candidate_ms, achieved_bytes_per_s=bw, bandwidth_fraction=bw_frac,
                    achieved_flops_per_s=rate, flops_fraction=flop_frac, notes=notes)
