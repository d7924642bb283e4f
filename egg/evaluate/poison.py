"""Poison: memory a candidate must not be able to read a right answer from.

Two uses, both in the runner:

* :func:`poison_freed_memory` before a correctness trial: every block the caching allocator holds
  free is filled with 0xFF bytes (NaN in every float format, -1 in integers), so a kernel that
  returns ``torch.empty`` without writing it reads NaN, not a previous call's bytes;
* the helpers of the kernel-ablation call (:mod:`egg.evaluate.ablation`): snapshots and bitwise
  views.
"""

from __future__ import annotations

from typing import Any

import torch

_POISON_BYTE = 0xFF
_SAME_SIZE_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _fill_and_free(sizes: list[int], device: torch.device) -> None:
    blocks = []
    for size in sizes:
        if size <= 0:
            continue
        block = torch.empty(size, dtype=torch.uint8, device=device)
        block.fill_(_POISON_BYTE)
        blocks.append(block)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    del blocks


def _inactive_cuda_blocks(device: torch.device) -> list[int]:
    sizes: list[int] = []
    for segment in torch.cuda.memory_snapshot():
        if segment.get("device") != (device.index or 0):
            continue
        for block in segment.get("blocks", []):
            if block.get("state") == "inactive":
                sizes.append(int(block["size"]))
    return sizes


def poison_freed_memory(freed_nbytes: list[int], device: torch.device) -> None:
    """Fill freed memory with NaN bytes; ``freed_nbytes`` are the sizes just released (CPU)."""
    if device.type == "cuda":
        # Every inactive block of the caching allocator: filling them covers whatever was freed.
        sizes = _inactive_cuda_blocks(device)
    else:
        sizes = list(freed_nbytes)
    # Largest first, so best-fit allocators hand back the big freed blocks to the big requests.
    _fill_and_free(sorted(sizes, reverse=True), device)


def tensors_in(values: list[Any]) -> list[torch.Tensor]:
    """The tensors among a launch's arguments (Triton tensor descriptors count by their base)."""
    found: list[torch.Tensor] = []
    for v in values:
        if isinstance(v, torch.Tensor):
            found.append(v)
        elif isinstance(getattr(v, "base", None), torch.Tensor):
            found.append(v.base)
        elif isinstance(v, (tuple, list)):
            found.extend(tensors_in(list(v)))
    return found


def snapshot_tensors(values: list[Any]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``(tensor, copy)`` for every distinct tensor among ``values``."""
    seen: set[int] = set()
    out = []
    for t in tensors_in(values):
        if t.numel() and id(t) not in seen:
            seen.add(id(t))
            out.append((t, t.detach().clone()))
    return out


def bits(t: torch.Tensor) -> torch.Tensor:
    """``t`` viewed as integers of its element size: bitwise comparisons, NaN included."""
    size = t.element_size()
    if t.dtype == torch.bool:
        return t.view(torch.uint8)
    return t.view(_SAME_SIZE_INT[size]) if size in _SAME_SIZE_INT else t


def poison_outputs(tree: Any) -> None:
    """Overwrite every tensor a CUDA-extension call returned (NaN, 0 for integers, False)."""
    for t in tensors_in([tree]):
        with torch.no_grad():
            if t.is_floating_point() or t.is_complex():
                t.fill_(float("nan"))
            else:
                t.zero_()
