"""Row reduction (sum / mean / max / min over the last dimension) with several rows per program.

Why: with one row per program, short rows (say 64 floats = 256 bytes) give each program too little
work: most of its time is launch and index math, and a warp's lanes idle. Packing
``ROWS_PER_PROGRAM`` rows into a 2-D block ``[ROWS_PER_PROGRAM, BLOCK_N]`` gives each program
enough bytes in flight while keeping the grid at ``ceil(rows / ROWS_PER_PROGRAM)`` programs. Long
rows loop over ``BLOCK_N`` chunks, accumulating per lane in fp32 and reducing across lanes once at
the end. Keep ``ceil(rows / ROWS_PER_PROGRAM)`` at several times the SM count (132 on H200),
otherwise the GPU is underfilled and one row per program (or splitting rows) is better.

Launcher ``row_reduce(x, *, op="sum", ROWS_PER_PROGRAM=1, BLOCK_N=None, num_warps=4,
eviction_policy="evict_first")``. Parameters:

- ``x``: input tensor; reduced over the last dimension (output shape ``x.shape[:-1]``).
- ``op`` (str, default "sum"): sum, mean, max or min.
- ``ROWS_PER_PROGRAM`` (int, constexpr, default 1): rows handled by one program, a power of two.
- ``BLOCK_N`` (int, constexpr, default None): columns per chunk, a power of two; None picks
  ``next_power_of_2(n_cols)`` capped so that ``ROWS_PER_PROGRAM * BLOCK_N <= 8192``.
- ``num_warps`` (int, default 4): warps per program.
- ``eviction_policy`` (str, default "evict_first"): the input is read exactly once, so it should
  not push reusable data out of L2.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

OPS = ("sum", "mean", "max", "min")


@triton.jit
def _row_reduce_kernel(
    x_ptr, out_ptr, n_rows, n_cols,
    OP: tl.constexpr, ROWS_PER_PROGRAM: tl.constexpr, BLOCK_N: tl.constexpr, EVICTION: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * ROWS_PER_PROGRAM + tl.arange(0, ROWS_PER_PROGRAM)
    cols = tl.arange(0, BLOCK_N)
    row_mask = rows < n_rows
    if OP == "max":
        neutral = float("-inf")
    elif OP == "min":
        neutral = float("inf")
    else:
        neutral = 0.0
    # per-lane accumulators; lanes are combined once after the loop (one cross-warp reduction)
    acc = tl.full((ROWS_PER_PROGRAM, BLOCK_N), neutral, tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = row_mask[:, None] & (start + cols[None, :] < n_cols)
        ptrs = x_ptr + rows[:, None] * n_cols + start + cols[None, :]
        x = tl.load(ptrs, mask=mask, other=neutral, eviction_policy=EVICTION).to(tl.float32)
        if OP == "max":
            acc = tl.maximum(acc, x)
        elif OP == "min":
            acc = tl.minimum(acc, x)
        else:
            acc += x
    if OP == "max":
        result = tl.max(acc, axis=1)
    elif OP == "min":
        result = tl.min(acc, axis=1)
    elif OP == "mean":
        result = tl.sum(acc, axis=1) / n_cols
    else:
        result = tl.sum(acc, axis=1)
    tl.store(out_ptr + rows, result.to(out_ptr.dtype.element_ty), mask=row_mask)


def row_reduce(
    x: torch.Tensor,
    *,
    op: str = "sum",
    ROWS_PER_PROGRAM: int = 1,
    BLOCK_N: int | None = None,
    num_warps: int = 4,
    eviction_policy: str = "evict_first",
) -> torch.Tensor:
    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, got {op!r}")
    n_cols = x.shape[-1]
    x2 = x.contiguous().reshape(-1, n_cols)
    n_rows = x2.shape[0]
    out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)
    if n_rows == 0:
        return out
    if n_cols == 0:
        raise ValueError("cannot reduce over an empty last dimension")
    if BLOCK_N is None:
        BLOCK_N = min(triton.next_power_of_2(n_cols), max(16, 8192 // ROWS_PER_PROGRAM))
    grid = (triton.cdiv(n_rows, ROWS_PER_PROGRAM),)
    _row_reduce_kernel[grid](
        x2, out, n_rows, n_cols, OP=op, ROWS_PER_PROGRAM=ROWS_PER_PROGRAM, BLOCK_N=BLOCK_N,
        EVICTION=eviction_policy, num_warps=num_warps,
    )
    return out
