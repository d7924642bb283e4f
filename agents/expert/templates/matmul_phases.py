"""K phases: a GEMM whose operand packs several K positions into one element, read once.

A weight-only int4 linear unpacks ``w[n, k]`` from ``q[n, k // 2]``, the low nibble where ``k``
is even and the high one where it is odd (any spelling: ``torch.stack([low, high], -1)``, a
``where`` on ``k % 2``, shifts by ``4 * (k % 8)`` of an int32 word). Tiled over plain ``k``, the B
tile evaluates that per element: every byte is loaded twice (once per nibble, each load masked to
its parity), one byte per lane, so there is no 16-byte load and no ``cp.async`` pipeline; the
weight read that bounds a decode GEMM runs at a small fraction of the memory roofline (H200,
2026-12-05: 0.06).

With period ``p`` (the ``k % p`` the operands use), ``sum_k A[m, k] B[k, n]`` is the sum over the
phases ``r < p`` of ``sum_j A[m, p*j + r] B[p*j + r, n]``. Substituting ``k = p*j + r`` for a
fixed ``r``, the index algebra turns ``k % p`` into ``r`` and ``k // p`` into ``j``, and
:func:`~agents.expert.ir.fold.fold` decides the parity tests: every phase reads the same
unmasked ``q[n, j]``, which the writer emits once per K step, contiguous along ``j``. The kernel
then runs ``p`` dots of ``BLOCK_K / p`` each per step (A read at stride ``p``: a small activation
tile that stays in L1). Taken only where phases share loads (otherwise the strided A costs and
nothing is saved); ``K_PHASES`` = 1 in a config switches it off (the tuner may try that).
"""

from __future__ import annotations

import math
from typing import Any

from agents.expert.ir.expr import Expr, IndexValue, Load, substitute, walk
from agents.expert.ir.fold import fold
from agents.expert.ir.index import Affine, DivMod, Var

MIN_PHASE_K = 16  # each phase's tl.dot needs K >= 16
MAX_PERIOD = 16  # the most phases a K step unrolls (a tuning space offers no more)


def _divmods(index: Affine) -> list[DivMod]:
    out: list[DivMod] = []
    for atom in index.atoms():
        if isinstance(atom, DivMod):
            out.append(atom)
            out += _divmods(atom.base)
    return out


def k_period(mm: Any, max_period: int) -> int:
    """The lcm of the moduli ``m`` of the ``k % m`` atoms in the operands' indexes (1 if none, if
    it exceeds ``max_period``, or if it does not divide K)."""
    mods: set[int] = set()
    for root in (mm.a, mm.b):
        for e in walk(root):
            if isinstance(e, (Load, IndexValue)):
                mods |= {d.mod for d in _divmods(e.index)
                         if d.div == 1 and d.mod and d.mod > 1 and mm.kvar in d.base.vars()}
    period = math.lcm(*mods) if mods else 1
    return period if 1 < period <= max_period and mm.k % period == 0 else 1


def phase_var(mm: Any, period: int) -> Var:
    return Var(f"{mm.kvar.name}_phase", mm.k // period)


def phase_operands(mm: Any, period: int) -> list[tuple[Expr, Expr]]:
    """(A, B) of each phase ``r``: the operands at ``k = period * j + r``, tests folded."""
    j = Affine.of(phase_var(mm, period))
    out = []
    for r in range(period):
        env = {mm.kvar: j * period + r}
        out.append((fold(substitute(mm.a, env)), fold(substitute(mm.b, env))))
    return out


def shares_loads(phases: list[tuple[Expr, Expr]], j: Var) -> bool:
    """Whether every phase unpacks the same elements: a load walking ``j`` itself (not a group
    index ``j // g``, which any tiling reads once per group) common to all phases."""
    common: set[int] | None = None
    for a, b in phases:
        mine = {id(e) for root in (a, b) for e in walk(root)
                if isinstance(e, Load) and any(atom == j for atom, _ in e.index.terms)}
        common = mine if common is None else common & mine
    return bool(common)


def step_uniform(expr: Expr, kv: Var, step: int, tile: Var) -> Expr:
    """``expr`` with each group index ``(kv // g) % m`` whose group ``g`` is a multiple of the K
    tile's ``step`` read at the tile's first position ``tile`` instead: a K tile starts at a multiple
    of ``step``, so no group boundary falls inside it and the index is the same for all its lanes.
    A group scale (``scales[n, k // 128]`` under BLOCK_K 128) is then one ``[1, BLOCK_N]`` load per
    step, not a ``[BLOCK_K, BLOCK_N]`` tile of loads and index arithmetic."""
    def retile(e: Load, index: Affine) -> Expr:
        out = Affine.of(index.const)
        for atom, c in index.terms:
            if isinstance(atom, DivMod) and atom.base == Affine.of(kv) and atom.div % step == 0:
                atom = DivMod(Affine.of(tile), atom.div, atom.mod)
            out = out + Affine.of(atom) * c
        return Load(e.buffer, out, e.dtype)

    return substitute(expr, {}, retile)


def phases_for(mm: Any, max_period: int) -> int:
    """The K phases the matmul template renders by default (1: plain K)."""
    period = k_period(mm, max_period)
    return period if period > 1 and shares_loads(phase_operands(mm, period), phase_var(mm, period)) else 1
