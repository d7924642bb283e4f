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
nothing is saved); ``K_PHASES`` = 1 in a config switches it off (the tuner may try that). Where
A is a plain load contiguous in k (an activation), its tile is loaded whole, as without phases (a
16-byte, pipelined copy), and split into the phases in registers (``tl.reshape`` + ``tl.split``).

N phases are the same substitution on the other side, for outputs that interleave: a strided
transposed convolution's output ``ow = stride * qw + f`` takes, for each phase ``f``, its own
weight taps (``lower_conv_gemm``), so A depends on the column through ``n % p``. Stored one phase
a program, each store wrote every ``p``-th element, no 32-byte sector whole (an H100 spent 9.7 of
#16's 10.1 ms bound by L2 on those stores, 2026-12-06). With ``n = p*j + r`` each phase's A is
column-free and its B walks ``j``: the kernel keeps ``p`` accumulators of ``BLOCK_N / p`` columns,
one dot each per K step, and interleaves them in registers (``tl.join``, ``tl.reshape``) into the
``[BLOCK_M, BLOCK_N]`` tile the epilogue stores contiguously.

A dequantised B that is a small integer (|q| <= 256) times a scale constant over the K tile (``to(q) * s[n,
k // g]`` with ``g`` a multiple of the step, or a per-channel ``s[n]``) is factored
(:func:`column_scale`): the dots read the integers, exact in bf16/fp16, and the scale multiplies
each step's fp32 partial sums (``acc += part * s``), or the accumulator once after the loop where
it does not depend on k. The dequantisation then neither waits on the scale load (a 2-byte gather
Triton's pipeliner leaves synchronous, ahead of every step's dots; a step's scale is now loaded a
step ahead, in registers) nor multiplies and rounds every weight; the sums are those of the exact
weights (closer to an fp32 run than the reference's bf16-rounded ``q * s``). ``SCALE_AFTER_DOT`` = False in a config switches it off.

Two more rules shape the tile loop, phases or not: a group index ``k // g`` whose group the K tile
divides is the same for the whole tile (read at the tile's start, :func:`step_uniform`), and a load
along one tile dim alone (a scale row ``[1, BLOCK_N]``) is a vector load expanded into the tile
(``Writer.vectors``): in the tile's 2-D layout Triton loads such a row once per replica.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from agents.expert.ir.dtypes import HALVES, TL
from agents.expert.ir.expr import Expr, IndexValue, Load, Op, Ref, cast, substitute, walk
from agents.expert.ir.fold import fold
from agents.expert.ir.index import Affine, DivMod, Var
from agents.expert.ir.ranges import INT_DTYPES, int_range
from agents.expert.writer import Writer

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


def n_period(mm: Any) -> int:
    """The ``p`` of A's ``n % p`` (output phases interleaved along N), 1 where A does not read the
    column. A column read any other way is no GEMM this template renders."""
    mods: set[int] = set()
    for e in walk(mm.a):
        if not isinstance(e, (Load, IndexValue)) or mm.nvar not in e.index.vars():
            continue
        reading = [d for d in _divmods(e.index) if mm.nvar in d.base.vars()]
        found = {d.mod for d in reading if d.div == 1 and d.mod}
        direct = any(atom == mm.nvar for atom, _ in e.index.terms)
        if direct or not found or any(d.div != 1 for d in reading):
            raise ValueError(f"{mm.name}: A reads the column other than through n % p")
        mods |= found
    period = math.lcm(*mods) if mods else 1
    if period > 1 and (period & (period - 1) or mm.n % period):
        raise ValueError(f"{mm.name}: {period} output phases: not a power of two dividing N = {mm.n}")
    return period


def column_var(mm: Any, period: int) -> Var:
    return Var(f"{mm.nvar.name}_phase", mm.n // period)


def n_phase_operands(mm: Any, period: int) -> list[tuple[Expr, Expr]]:
    """(A, B) of each output phase ``r``: the operands at ``n = period * j + r``, tests folded; A is
    then free of the column."""
    j = Affine.of(column_var(mm, period))
    out = []
    for r in range(period):
        env = {mm.nvar: j * period + r}
        a, b = fold(substitute(mm.a, env)), fold(substitute(mm.b, env))
        if any(isinstance(e, (Load, IndexValue)) and column_var(mm, period) in e.index.vars() for e in walk(a)):
            raise ValueError(f"{mm.name}: phase {r}'s A still reads the column")
        out.append((a, b))
    return out


def interleaved(accs: list[str]) -> str:
    """The expression joining ``accs`` (phase ``r``'s columns ``j``) into columns ``p*j + r``: each
    ``tl.join`` adds a last dim of 2, the even phases first, so the flat order is the output's."""
    if len(accs) == 1:
        return accs[0]
    return f"tl.join({interleaved(accs[0::2])}, {interleaved(accs[1::2])})"


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


def _exact_int(e: Expr) -> Expr | None:
    """The integer ``e`` converts (through float casts only) where its values are exact in bf16 and
    fp16 (|v| <= 256: 8 significant bits; :func:`int_range` bounds them), or None."""
    while isinstance(e, Op) and e.op == "to" and e.dtype not in INT_DTYPES:
        e = e.args[0]
        if e.dtype in (*INT_DTYPES, "bool"):
            lo, hi = int_range(e) if e.dtype != "bool" else (0, 1)
            return e if -256 <= lo <= hi <= 256 else None
    return None


def column_scale(bs: list[Expr], kv: Var) -> tuple[list[Expr], Expr] | None:
    """``(q_r, s)`` where every phase's B is ``q_r * s`` (float casts around the product or the
    integer aside) with ``q_r`` a small integer (:func:`_exact_int`) and ``s`` the same for all phases and free of
    ``kv`` (a group index already read at the tile's start, :func:`step_uniform`); else None."""
    out, scale = [], None
    for b in bs:
        while isinstance(b, Op) and b.op == "to" and b.dtype not in INT_DTYPES:
            b = b.args[0]
        if not (isinstance(b, Op) and b.op == "mul" and len(b.args) == 2):
            return None
        for q, s in (b.args, b.args[::-1]):
            q = _exact_int(q)
            if q is not None and not any(isinstance(x, Ref) or isinstance(x, (Load, IndexValue)) and kv in x.index.vars()
                                         for x in walk(s)):
                break
        else:
            return None
        if scale is not None and s is not scale:
            return None
        out.append(q)
        scale = s
    return (out, scale) if scale is not None else None


def scale_factors(mm: Any) -> bool:
    """Whether B has a column scale :func:`column_scale` factors out at the smallest K step (16)."""
    kt = Var(f"{mm.kvar.name}_tile", mm.kvar.size)
    return column_scale([step_uniform(mm.b, mm.kvar, MIN_PHASE_K, kt)], mm.kvar) is not None


def phases_for(mm: Any, max_period: int) -> int:
    """The K phases the matmul template renders by default (1: plain K)."""
    period = k_period(mm, max_period)
    return period if period > 1 and shares_loads(phase_operands(mm, period), phase_var(mm, period)) else 1


@dataclass
class TileLoop:
    """What the operand tiles of a matmul kernel's K loop are rendered against."""

    mm: Any  # the MatmulNode
    phases: int
    n_phases: int  # output phases interleaved along N (1: plain columns)
    block_k: int
    benv: dict[Var, Affine]  # batch vars -> pid_b
    ptrs: dict[str, str]
    names: dict[str, str]  # m, n, pid_b -> their Triton names (rm / rm_t ...)
    masks: dict[str, str]  # "m" / "n" / "r" -> mask names, where masks apply
    swap: bool
    wide: bool
    dot_dtype: str
    cpu: bool
    factor_scale: bool = True  # SCALE_AFTER_DOT: factor an exact integer's column scale out of B
    k_start: str = "0"  # the K loop's first k0 (a split-K slice's start)


@dataclass
class OperandTiles:
    before: list[str]  # lines before the K loop (hoisted)
    loop: list[str]  # lines in the K loop
    dots: list[tuple[str, str, str]]  # (accumulator, A, B) names of each dot per K step
    whole_a: bool  # A is loaded as a [BLOCK_M, BLOCK_K] tile (rka spans BLOCK_K) and split into the phases
    scale: str | None = None  # a [1, BLOCK_N] fp32 column scale factored out of B (column_scale)
    scale_step: bool = False  # it changes with the K step: each step's partial sums are scaled
    ptx: bool = False  # the tiles call a helper with inline PTX: the kernel takes the PTX flag


class _Operand(NamedTuple):
    before: list[str]  # lines before the K loop
    loop: list[str]
    names: list[str]  # the tile of each expression
    scale: str | None
    scale_step: bool
    ptx: bool


def _splits(source: str, phases: int, rows: str) -> tuple[list[str], list[str]]:
    """Lines splitting ``source`` ([rows, BLOCK_K], k = phases * j + r) into the phase tiles ``<source><r>``."""
    bits = phases.bit_length() - 1
    lines = [f"{source}_p = tl.reshape({source}, [{rows}, BLOCK_K // {phases}{', 2' * bits}])"]
    parts = {0: f"{source}_p"}  # low bits of r fixed so far -> the tensor holding those phases
    for level in range(bits):  # the last dim is r's lowest remaining bit
        nxt = {}
        for low, name in parts.items():
            zero, one = f"{source}_s{level}_{low}_0", f"{source}_s{level}_{low}_1"
            lines.append(f"{zero}, {one} = tl.split({name})")
            nxt[low] = zero
            nxt[low | (1 << level)] = one
        parts = nxt
    names = []
    for r in range(phases):
        lines.append(f"{source}{r} = {parts[r]}")
        names.append(f"{source}{r}")
    return lines, names


def _whole_a(mm: Any, phases: int) -> bool:
    """A is one load walking k with stride 1, k in no other atom: loaded whole, split in registers."""
    a = mm.a
    return (phases > 1 and phases & (phases - 1) == 0 and isinstance(a, Load)
            and dict(a.index.terms).get(mm.kvar) == 1
            and all(atom == mm.kvar or mm.kvar not in _atom_vars(atom) for atom, _ in a.index.terms))


def _atom_vars(atom: Any) -> set[Var]:
    return {atom} if isinstance(atom, Var) else atom.base.vars() if isinstance(atom, DivMod) else set()


def operand_tiles(spec: TileLoop) -> OperandTiles:
    """The A and B tiles of each K step (each phase), each operand in one writer so the phases
    share their loads."""
    mm, phases, cols = spec.mm, spec.phases, spec.n_phases
    if cols > 1 and (phases > 1 or spec.swap):
        raise ValueError(f"{mm.name}: output phases with K phases or a swapped dot")
    kv = phase_var(mm, phases) if phases > 1 else mm.kvar
    nv = column_var(mm, cols) if cols > 1 else mm.nvar  # what B's columns walk: j of n = cols * j + r
    kt = Var(f"{kv.name}_tile", kv.size)  # the tile's first position: group indexes uniform over it
    step = spec.block_k // phases
    pairs = phase_operands(mm, phases) if phases > 1 else n_phase_operands(mm, cols) if cols > 1 else [(mm.a, mm.b)]
    whole = _whole_a(mm, phases)
    a_exprs = [mm.a] if whole else [a for a, _ in pairs]
    a_exprs = [step_uniform(a, mm.kvar if whole else kv, spec.block_k if whole else step, kt) for a in a_exprs]
    b_exprs = [step_uniform(b, kv, step, kt) for _, b in pairs]
    factored = column_scale(b_exprs, kv) if spec.factor_scale and cols == 1 and not spec.swap else None
    if factored is not None:  # the dots read the exact integers; the scale multiplies their sums
        b_exprs = [cast(q, spec.dot_dtype) for q in factored[0]]
    names = {**spec.names, kt.name: f"(k0 // {phases})" if phases > 1 else "k0"}
    k_a = "BLOCK_K" if whole or phases == 1 else f"BLOCK_K // {phases}"
    k_b = "BLOCK_K" if phases == 1 else f"BLOCK_K // {phases}"
    a = _tiles(spec, a_exprs, "a", {mm.mvar.name: "m", (mm.kvar if whole else kv).name: "r", kt.name: "k"},
               {**names, (mm.kvar if whole else kv).name: "rka"}, "m", "kmask_a",
               f"[{k_a}, BLOCK_M]" if spec.swap else f"[BLOCK_M, {k_a}]",
               ("rm1", "mmask1" if "m" in spec.masks else None, "[None, :]" if spec.swap else "[:, None]"))
    if cols > 1:  # B's tile walks j: BLOCK_N // cols columns of each phase (rnj, its own mask)
        spec_b = dataclasses.replace(spec, masks={**spec.masks, **({"n": "nmask_j"} if "n" in spec.masks else {})})
        b = _tiles(spec_b, b_exprs, "b", {kv.name: "r", nv.name: "n", kt.name: "k"},
                   {**names, kv.name: "rkb", nv.name: "rnj"}, "n", "kmask_b", f"[{k_b}, BLOCK_N // {cols}]",
                   ("rnj1", "nmask_j1" if "n" in spec.masks else None, "[None, :]"))
    else:
        b = _tiles(spec, b_exprs, "b", {kv.name: "r", nv.name: "n", kt.name: "k"}, {**names, kv.name: "rkb"}, "n",
                   "kmask_b", f"[BLOCK_N, {k_b}]" if spec.swap else f"[{k_b}, BLOCK_N]",
                   ("rn1", "nmask1" if "n" in spec.masks else None, "[:, None]" if spec.swap else "[None, :]"),
                   factored[1] if factored is not None else None)
    a_names = a.names
    if whole:
        lines, a_names = _splits("a", phases, "BLOCK_M")
        a.loop.extend(lines)
    accs = [f"acc{r}" for r in range(cols)] if cols > 1 else ["part" if b.scale_step else "acc"] * len(a_names)
    return OperandTiles(a.before + b.before, a.loop + b.loop, list(zip(accs, a_names, b.names)), whole, b.scale,
                        b.scale_step, a.ptx or b.ptx)


def _tiles(spec: TileLoop, exprs: list[Expr], prefix: str, tags: dict[str, str], names: dict[str, str], dim: str,
           kmask: str, shape: str, vector: tuple[str, str | None, str], scale: Expr | None = None) -> _Operand:
    """One operand's tile per expression, and a factored ``scale``'s fp32 vector."""
    masks = {k: v for k, v in spec.masks.items() if k == dim}
    if "r" in spec.masks:
        masks["r"] = kmask
    w = Writer(spec.ptrs, names, masks, {**tags, "pid_b": "b"}, spec.wide, prefix=f"{prefix}_", cpu=spec.cpu)
    w.vectors = {dim: vector}
    w.nibbles = True  # an int4 weight's nibbles, four bytes a register (helpers._egg_nibble_half)
    w.begin_loop()
    full = frozenset(tags.values()) - {"k"}  # the tile's dims ("k": uniform over the tile)
    out = []
    for i, expr in enumerate(exprs):
        e = substitute(expr, spec.benv)
        v = w.value(e)
        if not full <= w.deps(e):
            v = w.assign(f"tl.broadcast_to({v}, {shape})", full | {"r"})
        if "r" in masks and not isinstance(e, Load):  # a prologue of a padded lane need not be 0
            v = w.assign(f"tl.where({kmask}, {v}, 0.0)", full | {"r"})
        name = prefix if len(exprs) == 1 else f"{prefix}{i}"
        w.emit(f"{name} = {v}.to({TL[spec.dot_dtype]})", full | {"r"})
        out.append(name)
    scaled, before = (None, False), []
    if scale is not None:
        e = substitute(scale, spec.benv)
        if "k" not in w.deps(e):  # per channel: loaded before the loop (the writer's float values are fp32)
            scaled = (w.value(e), False)
        else:  # a step's scale, loaded a step ahead: the pipeliner leaves such a gather synchronous
            tile = next(v for v, t in tags.items() if t == "k")
            ahead = {**names, tile: names[tile].replace("k0", "k_next")}
            texts = []
            for i in range(2):  # before the loop (the first step's) and in it (the next step's), own temporaries
                sw = Writer(spec.ptrs, ahead, masks, {**tags, "pid_b": "b"}, spec.wide, prefix=f"{prefix}_s{i}_",
                            cpu=spec.cpu)
                sw.vectors = w.vectors
                v = sw.value(e)
                texts.append([*sw.lines, f"{prefix}_scale_next = {v}"])
            before = [f"k_next = {spec.k_start}", *texts[0]]
            w.emit(f"{prefix}_scale = {prefix}_scale_next", full | {"r"})
            w.emit("k_next = tl.minimum(k0 + BLOCK_K, K - 1)  # in bounds past the last step", full | {"r"})
            for line in texts[1]:
                w.emit(line, full | {"r"})
            scaled = (f"{prefix}_scale", True)
    loop = w.end_loop()
    return _Operand(w.lines + before, loop, out, *scaled, w.ptx)


def dot_form(mm: Any, precision: str | None) -> tuple[str, bool, str]:
    """How a GEMM's tiles meet in ``tl.dot``: the operand dtype (its 16-bit dtype, else fp32); whether
    the CPU interpreter multiplies them as fp32 instead (it multiplies bf16 wrongly, and an fp32 product
    of 16-bit values, ``lower_matmul.exact_halves``, is judged at fp32's tolerance: exact products
    either way); and the dot's precision argument (fp32 dots only: ``precision``, else ieee)."""
    dtype = mm.dot_dtype if mm.dot_dtype in HALVES else "float32"
    as_fp32 = dtype == "bfloat16" or (dtype in HALVES and mm.layout.dtype == "float32")
    return dtype, as_fp32, f', input_precision="{precision or "ieee"}"' if dtype == "float32" else ""
