"""Poison: memory a candidate must not be able to read a right answer from.

Two uses, both in the runner:

* :func:`poison_freed_memory` before a correctness trial: every block the caching allocator holds
  free is filled with 0xFF bytes (NaN in every float format, -1 in integers), so a kernel that
  returns ``torch.empty`` without writing it reads NaN, not a previous call's bytes;
* :func:`poison_changed` for the kernel-ablation call (:mod:`egg.evaluate.launches`): the
  elements a launch changed are overwritten, so its writes are lost.
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


def _tensors(values: list[Any]) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    for v in values:
        if isinstance(v, torch.Tensor):
            found.append(v)
        elif isinstance(getattr(v, "base", None), torch.Tensor):  # a Triton TensorDescriptor
            found.append(v.base)
        elif isinstance(v, (tuple, list)):
            found.extend(_tensors(list(v)))
    return found


def snapshot_tensors(values: list[Any]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``(tensor, copy)`` for every tensor among ``values`` (a launch's arguments)."""
    return [(t, t.detach().clone()) for t in _tensors(values) if t.numel()]


def _bits(t: torch.Tensor) -> torch.Tensor:
    size = t.element_size()
    if t.dtype == torch.bool:
        return t.view(torch.uint8)
    return t.view(_SAME_SIZE_INT[size]) if size in _SAME_SIZE_INT else t


def poison_changed(before: list[tuple[torch.Tensor, torch.Tensor]]) -> int:
    """Overwrite every element that differs from its snapshot; returns how many were poisoned."""
    total = 0
    for tensor, old in before:
        with torch.no_grad():
            if tensor.is_complex():
                changed = (_bits(torch.view_as_real(tensor)) != _bits(torch.view_as_real(old))).any(-1)
            else:
                changed = _bits(tensor) != _bits(old)
            n = int(changed.sum())
            if not n:
                continue
            total += n
            if tensor.is_floating_point() or tensor.is_complex():
                tensor.masked_fill_(changed, float("nan"))
            elif tensor.dtype == torch.bool:
                tensor.copy_(old)
            else:
                tensor.masked_fill_(changed, 0)
    return total


def poison_outputs(tree: Any) -> None:
    """Overwrite every tensor a CUDA-extension call returned (NaN, 0 for integers, False)."""
    for t in _tensors([tree]):
        with torch.no_grad():
            if t.is_floating_point() or t.is_complex():
                t.fill_(float("nan"))
            else:
                t.zero_()
