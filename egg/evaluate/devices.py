"""Which devices an evaluation runs on: the user's ``--device`` resolved, the GPUs this process
may use, and the judge slots a harness starts on them."""

from __future__ import annotations

import os

from egg.errors import EggInputError

JUDGES_PER_GPU = 2  # one loads/compiles while the other runs on the GPU; more would only queue for the GPU


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise EggInputError("--device cuda: no CUDA device is available on this machine (use --device cpu)")
    if device not in ("cpu", "cuda"):
        raise EggInputError(f"--device: expected auto, cpu or cuda, got {device!r}")
    return device


def visible_gpus() -> list[str]:
    """The entries of ``CUDA_VISIBLE_DEVICES`` this process may use (indices, UUIDs or MIG ids), or
    ``0..N-1`` when it is unset."""
    import torch

    count = torch.cuda.device_count()
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    entries = [e.strip() for e in given.split(",") if e.strip()] if given else [str(i) for i in range(count)]
    return entries[:count]


def device_slots(device: str, workers: int | None) -> list[tuple[str, str | None]]:
    """(device, GPU to pin to) per judge: ``workers`` judges on CPU, ``workers`` per visible GPU."""
    if device == "cpu":
        return [("cpu", None)] * (workers or 1)
    per_gpu = workers or JUDGES_PER_GPU
    return [(f"cuda:{i}", gpu) for _ in range(per_gpu) for i, gpu in enumerate(visible_gpus())]
