"""Configs of the matmul template: the heuristic default per shape and device, and the tuning space.

GPU defaults target an H200 (132 SMs):

* matrix-vector (M or N = 1): memory-bound; a 16-wide thin side, enough programs along the long side;
* dequantising (int8 B read and converted per tile, weight-only quantisation): small M (decode,
  M <= 64) is bound by reading the weight, so small BLOCK_M, a BLOCK_N that gives at least one
  wave of programs, long BLOCK_K steps and deep pipelining; large M (prefill) is compute-bound and
  takes the 16-bit tensor-core tiles;
* fp32 ieee: CUDA-core FMA, moderate tiles; fp32 3xTF32 and 16-bit: tensor-core tiles.

Split-K (``SPLIT_K``, flat matmuls only): when the output tiles fill less than one wave and K is
long (>= 4096), K is cut into power-of-two slices until there are about two waves of programs,
keeping at least ``_MIN_STEPS`` BLOCK_K steps per slice (the workspace round trip must stay
small next to the slice's operand reads). The CPU interpreter always gets ``SPLIT_K = 1``.
"""

from __future__ import annotations

from typing import Any

SMS = 132  # H200
_MIN_STEPS = 8  # BLOCK_K steps per K slice at least
_MIN_K = 4096  # shorter K: the whole GEMM is a few microseconds, a second launch would cost more
SPLITS = [1, 2, 4, 8, 16, 32, 64]


def _p2(n: int, lo: int, hi: int) -> int:
    v = 1 << max(0, (max(1, n) - 1).bit_length())
    return max(lo, min(hi, v))


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def split_k(tiles: int, k: int, block_k: int) -> int:
    """K slices for a grid of ``tiles`` output tiles: about two waves when under one (1: no split)."""
    if tiles >= SMS or k < max(_MIN_K, 2 * _MIN_STEPS * block_k):
        return 1
    split = 1
    while split * 2 <= min(64, (2 * SMS) // max(1, tiles), k // (_MIN_STEPS * block_k)):
        split *= 2
    return split


def tuning_space(m: int, n: int, k: int, *, batched: bool, dequant: bool) -> dict[str, list[Any]]:
    narrow = [16] if min(m, n) == 1 or (dequant and m <= 64) else []  # the tile's thin side
    long_k = [128, *([256] if dequant else [])] if narrow else []
    space: dict[str, list[Any]] = {
        "GROUP_M": [1, 4, 8, 16],  # parallel mapping: L2 swizzle width
        "BLOCK_M": [*narrow, 32, 64, 128],  # tiling
        "BLOCK_N": [*([16] if min(m, n) == 1 else []), 32, 64, 128, 256],
        "BLOCK_K": [32, 64, *long_k],
        "num_warps": [4, 8],
        "num_stages": [2, 3, 4, *([5] if dequant else [])],
        "EVICT_EPILOGUE": ["", "evict_first"],  # memory: epilogue tensors are read once
    }
    if not batched and k >= 1024:  # parallel mapping: K slices for under-filled grids
        space["SPLIT_K"] = [s for s in SPLITS if s == 1 or k // s >= 256]
    return space


def _tiles(batch: int, m: int, n: int, k: int, dtype: str, precision: str, device: str,
           dequant: bool) -> dict[str, Any]:
    base = {"GROUP_M": 8, "EVICT_EPILOGUE": ""}
    if device == "cpu":  # the interpreter pays per program and per tl.dot: few, large tiles
        return {**base, "BLOCK_M": _p2(m, 16, 64), "BLOCK_N": _p2(n, 16, 64), "BLOCK_K": _p2(k, 16, 64),
                "num_warps": 4, "num_stages": 1}
    if min(m, n) == 1:  # matrix-vector: memory-bound, a 16-wide thin side, enough programs
        long_side = max(m, n)
        block = next((b for b in (64, 32) if batch * _cdiv(long_side, b) >= SMS), 16)
        bm, bn = (block, 16) if n == 1 else (16, block)
        return {**base, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 128, "num_warps": 4, "num_stages": 3}
    if dequant and m <= 64:  # decode: bound by the weight read; BLOCK_N small enough for a full wave
        bm = _p2(m, 16, 64)
        bn = next((b for b in (128, 64) if batch * _cdiv(m, bm) * _cdiv(n, b) >= SMS), 32)
        return {**base, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 128 if dtype != "float32" else 64,
                "num_warps": 4, "num_stages": 4}
    if dtype == "float32" and precision == "ieee":  # no tensor cores: moderate tiles
        return {**base, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3}
    if dtype == "float32":  # 3xTF32: tensor-core tiles; fp32 operands halve BLOCK_K
        bm, bn = _p2(m, 32, 128), _p2(n, 32, 128)
        if batch * _cdiv(m, bm) * _cdiv(n, bn) < SMS:  # too few 128-tiles to fill the SMs: halve them
            bm, bn = min(bm, 64), min(bn, 64)
        big = bm == 128 and bn == 128
        return {**base, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 32, "num_warps": 8 if big else 4, "num_stages": 3}
    big = m >= 128 and n >= 128
    return {**base, "BLOCK_M": 128 if big else 64, "BLOCK_N": 128 if n >= 128 else _p2(n, 32, 128),
            "BLOCK_K": 64, "num_warps": 8 if big else 4, "num_stages": 3 if big else 4}


def default_config(batch: int, m: int, n: int, k: int, *, dtype: str, precision: str, device: str,
                   batched: bool, dequant: bool) -> dict[str, Any]:
    """The heuristic config of a (batch, M, N, K) matmul on ``device``."""
    cfg = _tiles(batch, m, n, k, dtype, precision, device, dequant)
    tiles = batch * _cdiv(m, cfg["BLOCK_M"]) * _cdiv(n, cfg["BLOCK_N"])
    cfg["SPLIT_K"] = 1 if device == "cpu" or batched else split_k(tiles, k, cfg["BLOCK_K"])
    return cfg
