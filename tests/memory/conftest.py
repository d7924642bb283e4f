"""Observations for memory tests, built the way the graph records them."""

from __future__ import annotations

from typing import Any

from egg.memory import Context, Observation

NORM = Context(op_classes=["normalization", "reduction"], bottleneck="memory", patterns=["rms_norm"],
               dtypes=["bfloat16"], device="NVIDIA H200")
SOFTMAX = Context(op_classes=["reduction", "softmax"], bottleneck="memory", patterns=["softmax"],
                  dtypes=["bfloat16"], device="NVIDIA H200")
GEMM = Context(op_classes=["matmul"], bottleneck="compute", dtypes=["bfloat16"], device="NVIDIA H200")


def obs(i: int, *, context: Context = NORM, run: str = "run-a", stage: str = "hardware_tuning", focus: str = "tiling",
        direction: str = "retile", strategy: str = "reduction.num_warps=8", gain: float | None = 1.2,
        accepted: bool = True, **extra: Any) -> Observation:
    return Observation(run_id=run, candidate_id=f"c{i}", problem="rms_norm", context=context, stage=stage,
                       focus=focus, direction=direction, strategy=strategy,
                       from_direction=extra.pop("from_direction", "fuse around library calls"),
                       accepted=accepted, gain=gain if accepted else None, seconds=extra.pop("seconds", 2.0),
                       **extra)
