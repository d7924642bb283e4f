"""Launcher-side source helpers shared by the reduction templates: the ``[O, R, I]`` view helper,
casts on store, warp counts, the per-lane setup lines and the launcher's shape/dims lines."""

from __future__ import annotations

from agents.expert.kernels.reduce_common import TL_DTYPES


def as3_helper(launcher: str) -> str:
    """Launcher-side helper: a tensor as the ``[O, R, I]`` view of ``shape`` (strides, no copy)."""
    return f'''
def _{launcher}_as3(t, shape, O, R, I):
    """``t`` broadcast to ``shape`` and seen as [O, R, I]; a copy only when no view exists."""
    t = t.expand(shape)
    try:
        return t.view(O, R, I)
    except RuntimeError:
        return t.reshape(O, R, I)


def _{launcher}_as3_rows(t, shape, O, R, I):
    """(view, P): ``t`` broadcast to ``shape`` as [P, R, I], row o of [O, R, I] being row o % P.

    A tensor broadcast over leading dims (a [S, S] mask under [B, H, S, S] scores) has no
    [O, R, I] view; its rows repeat with period P, so it is read in place instead of copied.
    The leading-broadcast case is recognised before any view is tried, so the usual mask does
    not pay for a failed view (a C++ exception) on every call; anything else goes to ``_as3``.
    """
    t = t.expand(shape)
    j = 0
    while j < len(shape) and (t.stride(j) == 0 or shape[j] == 1):
        j += 1
    lead = math.prod(shape[:j])
    if 0 < j < len(shape) and lead > 1 and O % lead == 0:
        rows = t[(0,) * j]
        if rows.is_contiguous():
            return rows.view(O // lead, R, I), max(O // lead, 1)
    return _{launcher}_as3(t, shape, O, R, I), max(O, 1)
'''


def store_cast(expr: str, dtype: str) -> str:
    """The value stored into an output of ``dtype`` (bool outputs are ``!= 0``)."""
    if dtype == "bool":
        return f"({expr} != 0)"
    return f"({expr}).to({TL_DTYPES[dtype]})"


def num_warps_for(tile: int) -> int:
    """Warps by tile size: enough threads to hold the tile in registers without spilling."""
    if tile >= 8192:
        return 16
    if tile >= 2048:
        return 8
    if tile >= 512:
        return 4
    return 2 if tile >= 128 else 1


def lane_setup(row: bool, indent: str = "    ") -> list[str]:
    """Kernel prologue naming the program's output lanes on the ``[O, R, I]`` view.

    row (``I == 1``): lanes are ``BLOCK_M`` rows, the tile is ``[BLOCK_M, BLOCK_R]``, ``kk`` runs
    along axis 1. col: lanes are ``BLOCK_I`` inner positions of one ``o`` (program ``o * NIB +
    i_block``), the tile is ``[BLOCK_R, BLOCK_I]``, ``kk`` runs along axis 0. Both define ``m``
    (flat index of the lane in the reduced output), ``m_ok``, ``o`` (int64) and ``lane_ok``.
    """
    if row:
        body = [
            "m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)",
            "m_ok = m < M",
            "o = m.to(tl.int64)[:, None]",
            "lane_ok = m_ok[:, None]",
            "kk = tl.arange(0, BLOCK_R)[None, :]",
        ]
    else:
        body = [
            "pid = tl.program_id(0)",
            "ob = pid // NIB",
            "iv = (pid % NIB) * BLOCK_I + tl.arange(0, BLOCK_I)",
            "m_ok = iv < I",
            "o = ob.to(tl.int64)",
            "m = o * I + iv",
            "i = iv.to(tl.int64)[None, :]",
            "lane_ok = m_ok[None, :]",
            "kk = tl.arange(0, BLOCK_R)[:, None]",
        ]
    return [indent + line for line in body]


def launcher_shape(tensors: list[str]) -> str:
    """Launcher expression of the (broadcast) shape of the anchor's element-wise operands."""
    if len(tensors) == 1:
        return f"tuple(g_{tensors[0]}.shape)"
    return "tuple(_egg_broadcast_shapes(" + ", ".join(f"g_{t}.shape" for t in tensors) + "))"


def launcher_dims(dims: list[int] | None, rank: int, keepdim: bool, launcher: str) -> list[str]:
    """Launcher lines: rank check, ``O, R, I`` and the reduced ``out_shape``."""
    lines = [
        f"    if len(shape) != {rank}:",
        f"        raise ValueError(f'{launcher}: expected rank {rank}, got {{shape}}')",
    ]
    if dims is None:
        return lines + [
            "    O, R, I = math.prod(shape[:-1]), shape[-1], 1",
            f"    out_shape = {[1] * rank if keepdim else []}",
        ]
    d0, d1 = dims[0], dims[-1]
    mid = f" + [1] * {d1 - d0 + 1}" if keepdim else ""
    return lines + [
        f"    O = math.prod(shape[:{d0}])",
        f"    R = math.prod(shape[{d0}:{d1 + 1}])",
        f"    I = math.prod(shape[{d1 + 1}:])",
        f"    out_shape = list(shape[:{d0}]){mid} + list(shape[{d1 + 1}:])",
    ]
