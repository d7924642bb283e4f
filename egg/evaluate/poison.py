"""Poisoning freed memory between the reference run and the candidate run.

A kernel that allocates its output with ``torch.empty`` and never writes it would otherwise get
back the block the reference's output just freed, still holding the right answer. After the
reference's tensors are freed we allocate blocks of the freed sizes (and, on CUDA, every inactive
block the caching allocator holds), fill them with 0xFF bytes (NaN in every float format, -1 in
integers) and free them again: whatever the candidate allocates next reads as NaN until written.
"""

from __future__ import annotations

import torch

_POISON_BYTE = 0xFF


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
    """Fill freed memory with NaN bytes; ``freed_nbytes`` are the sizes just released."""
    if device.type == "cuda":
        # The freed tensors' blocks are inactive blocks of the caching allocator now: filling every
        # inactive block covers them. Adding their sizes again would allocate the freed memory a
        # second time (fresh cudaMalloc), doubling the peak on large problems.
        sizes = _inactive_cuda_blocks(device)
    else:
        sizes = list(freed_nbytes)
    # Largest first, so best-fit allocators hand back the big freed blocks to the big requests.
    _fill_and_free(sorted(sizes, reverse=True), device)
