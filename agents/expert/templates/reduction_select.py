"""Order statistics in a reduction kernel: the k-th largest (or smallest) value of each row.

Each value becomes an order-preserving ``uint32`` key (a float's bits with the sign bit set for
non-negatives and every bit flipped for negatives; NaN as the largest, as torch.topk and
torch.kthvalue rank it; flipped once more for the k-th smallest). The answer is the largest key
``T`` with at least ``k`` elements ``>= T``, found by bisection over its 32 bits, most significant
first; ties count with their multiplicity, as in a sort. Keys turn back into floats exactly.

* **persistent** (the row in registers): 32 counting steps over the resident tile.
* **looped**: one sweep keeps each lane's largest keys (four by default: the pack constant
  ``order-statistic-keys-per-lane``; an insertion network, 7 min/max per element for four), then
  the bisection runs over those ``4 x RBLOCK`` keys per row in registers. That is exact when
  every lane's last kept key is below ``T``: each lane then kept all of its elements
  ``>= T``, so the counts the bisection saw are the row's. Where a lane's last kept key reaches ``T``
  (ties across the top, few lanes holding many of the top values) the kernel counts over the row
  instead, one sweep per bit; rare on real logits, exact always.
* **kept-key reductions**: where that bisection was exact, every element at or above the threshold
  is one of the lanes' kept keys, so a reduction that only the kept elements feed (a top-k
  softmax's max and sum over ``where(x < kth, -inf, x)``: every other element adds the identity)
  reads those ``keep`` tiles in registers instead of the row: one pass over the row fewer
  (:func:`kept_only`, :func:`from_kept`). Rows the bisection was unsure of, and thresholds whose
  float comparison differs from the key's (NaN; 0, where -0.0 ties +0.0), take the pass.

Why not a radix select with ``tl.histogram``: compiled for sm_90a (Triton 3.6, 2026-12-04 on a CPU),
a 256-bin histogram over 2048 values took ~1100 PTX instructions per 8 values a thread (bit ballots
per value, then every bin per warp), near 0.3 ms of issue for four passes over a 256 x 128256
logits tensor; the sweep above is ~15 instructions per value.
"""

from __future__ import annotations

import math
from typing import Any

from agents.expert.ir.dtypes import HALVES
from agents.expert.ir.expr import Const, Expr, Load, Masked, Op, Ref
from agents.expert.kernel import Reduction

SIGN, ALL, NAN = "0x80000000", "0xFFFFFFFF", "0x7FC00000"
CAND = "<candidate>"  # stands for the bisection's candidate in the lines that count against it


def is_select(r: Reduction) -> bool:
    """``r`` is an order statistic (k-th largest or smallest), a group and passes of its own."""
    return r.rtype.startswith("kth_")


def largest(r: Reduction) -> bool:
    return r.rtype == "kth_largest"


def _keys(render: Any, r: Reduction) -> str:
    """The row's elements as order-preserving keys ([XBLOCK, RBLOCK]); masked lanes key 0 (below
    every real key: 0 would be the key of a negative NaN, and NaNs are made positive first)."""
    w, xr = render.w, frozenset({"x", "r"})
    v = render.full(r.body)  # fp32: the lowering casts the values
    bits = w.assign(f"{v}.to(tl.uint32, bitcast=True)", xr)
    bits = w.assign(f"tl.where({v} != {v}, {NAN}, {bits})", xr)
    # flip every bit of a negative, the sign bit of the rest: the XOR mask is the sign spread by an
    # arithmetic shift, with the sign bit set (a shift and one LOP3 on sm_90a, where the compare,
    # its predicate and two logic ops of a select cost four)
    key = w.assign(f"{bits} ^ (({bits}.to(tl.int32, bitcast=True) >> 31).to(tl.uint32, bitcast=True) | {SIGN})", xr)
    if not largest(r):
        key = w.assign(f"{key} ^ {ALL}", xr)
    mask = render.lane_mask(r)
    return key if mask is None else w.assign(f"tl.where({mask}, {key}, 0)", xr)


def _float_of(key: str) -> str:
    """The float whose (k-th largest) key is ``key``."""
    # the inverse of _keys' XOR: a key with its sign bit clear came from a negative (every bit flips back)
    return (f"({key} ^ (((({key}) ^ {ALL}).to(tl.int32, bitcast=True) >> 31).to(tl.uint32, bitcast=True) | {SIGN}))"
            ".to(tl.float32, bitcast=True)")


def _bind(render: Any, r: Reduction, key: str) -> None:
    """Bind the reduction's result: the float whose key is ``key`` ([XBLOCK, 1])."""
    w, x = render.w, frozenset({"x"})
    if not largest(r):
        key = w.assign(f"{key} ^ {ALL}", x)
    w.bind(r.name, w.assign(_float_of(key), x), r.dtype, x)


def _bisection(render: Any, k: int, counting: list[str], count: str) -> tuple[str, list[str]]:
    """The bisection's lines and the name of its per-row answer: for each bit, most significant
    first, the candidate ``answer | bit`` is kept where ``count`` (after the ``counting`` lines;
    ``CAND`` in either stands for the candidate) reaches ``k``."""
    w = render.w
    best, bit, cand = w.fresh("_kth"), w.fresh("_bit"), w.fresh("_cand")
    return best, [f"{best} = tl.zeros([XBLOCK, 1], tl.uint32)",
                  f"for {bit} in range(31, -1, -1):",
                  f"    {cand} = {best} | (tl.full([XBLOCK, 1], 1, tl.uint32) << {bit})",
                  *(f"    {line.replace(CAND, cand)}" for line in counting),
                  f"    {best} = tl.where({count.replace(CAND, cand)} >= {k}, {cand}, {best})"]


def _bisect(render: Any, counted: list[str], k: int) -> str:
    """Emit the bisection over keys ``counted`` ([XBLOCK, RBLOCK] tiles in registers); the answer."""
    compares = " + ".join(f"({c} >= {CAND}).to(tl.int32)" for c in counted)
    best, lines = _bisection(render, k, [], f"tl.sum({compares}, 1)[:, None]")
    for line in lines:
        render.w.emit(line, frozenset({"x"}))
    return best


def persistent(render: Any, r: Reduction) -> None:
    """The row is in registers: bisect over its keys."""
    _bind(render, r, _bisect(render, [_keys(render, r)], r.k))


def looped(render: Any, r: Reduction, loop_head: list[str], xmask: bool, keep: int,
           positions: bool = False) -> dict[str, Any]:
    """One sweep keeping each lane's ``keep`` largest keys (the pack's ``order-statistic-keys-per-lane``),
    the bisection over them, and the per-bit sweeps where that is not exact; a phase of the reduction
    template (before / loop / after lines). ``loop_head`` opens a ``for roffset`` sweep (rindex, rmask).
    ``positions``: each kept key also keeps the ``roffset`` of the block it came from (a lane's element
    at a block is one position of the row), for stores that need no read (:func:`to_kept_stores`)."""
    w, x, xr = render.w, frozenset({"x"}), frozenset({"x", "r"})
    mark = len(w.lines)
    w.begin_loop()
    kept = [w.fresh("_top") for _ in range(keep)]
    pos = [w.fresh("_pos") for _ in range(keep)] if positions else []
    for c in kept:
        w.emit(f"{c} = tl.zeros([XBLOCK, RBLOCK], tl.uint32)", x)  # loop-carried
    for p in pos:  # an empty slot's key is 0, below every threshold: its position is never read
        w.emit(f"{p} = tl.zeros([XBLOCK, RBLOCK], {'tl.int64' if w.idx64 else 'tl.int32'})", x)
    e, ep = _keys(render, r), "roffset"
    for i, c in enumerate(kept):  # insert e: each slot keeps the larger, passes the smaller on
        if pos:  # the larger key's position goes with it (ties keep the slot's: either is kept)
            sw = w.fresh("_sw")
            w.emit(f"{sw} = {e} > {c}", xr)
        if i == keep - 1:
            w.emit(f"{c} = tl.maximum({c}, {e})", xr)
            if pos:
                w.emit(f"{pos[i]} = tl.where({sw}, {ep}, {pos[i]})", xr)
            break
        hi, lo = w.fresh("_hi"), w.fresh("_lo")
        w.emit(f"{hi} = tl.maximum({c}, {e})", xr)
        w.emit(f"{lo} = tl.minimum({c}, {e})", xr)
        w.emit(f"{c} = {hi}", xr)
        if pos:
            hp, lp = w.fresh("_hp"), w.fresh("_lp")
            w.emit(f"{hp} = tl.where({sw}, {ep}, {pos[i]})", xr)
            w.emit(f"{lp} = tl.where({sw}, {pos[i]}, {ep})", xr)
            w.emit(f"{pos[i]} = {hp}", xr)
            ep = lp
        e = lo
    body = w.end_loop()
    before = w.take(mark)
    best = _bisect(render, kept, r.k)
    # a lane whose last kept key reaches the answer may have dropped an element >= it
    unsure = w.assign(f"tl.max((({kept[-1]} >= {best})" + (" & xmask" if xmask else "") + ").to(tl.int32), 1)"
                      "[:, None]", x)
    count = w.fresh("_cnt")
    w.begin_loop()  # rendered first: row values it hoists land before the branch
    key = _keys(render, r)
    w.emit(f"{count} += ({key} >= {CAND}).to(tl.int32)", xr)
    sweep = w.end_loop()
    w.emit(f"if tl.max({unsure}) > 0:", x)
    exact, lines = _bisection(render, r.k, [f"{count} = tl.zeros([XBLOCK, RBLOCK], tl.int32)", *loop_head,
                                            *(f"    {s}" for s in sweep)], f"tl.sum({count}, 1)[:, None]")
    for line in [*lines, f"{best} = tl.where({unsure} > 0, {exact}, {best})"]:
        w.emit(f"    {line}", x)
    _bind(render, r, best)
    return {"before": before, "loop": body, "after": w.take(mark),
            "doc": f"{r.name} (the {keep} largest keys of each lane, then a bisection over them)",
            "kept": kept, "pos": pos, "key": best, "unsure": unsure}


# -- reductions over the kept keys ----------------------------------------------------------------
_IDENTITY = {"max": float("-inf"), "sum": 0.0}
_UNKEPT = {"lt": True, "ge": False}  # X < kth / X >= kth of an element below the threshold
_FLIPPED = {"gt": True, "le": False}  # kth > X / kth <= X


def _values(sel: Reduction) -> tuple[Expr, ...]:
    """The expressions that are ``sel``'s values: its body, and the 16-bit value an fp32 body upcasts
    (exactly: ``x < kth`` on bf16 logits compares the same numbers; the Writer holds both in fp32)."""
    x = sel.body
    if isinstance(x, Op) and x.op == "to" and x.dtype == "float32" and x.args[0].dtype in HALVES:
        return x, x.args[0]
    return (x,)


def _test(e: Expr, xs: tuple[Expr, ...], kth: str) -> bool | None:
    """What ``e`` gives at an element below the threshold where it is a threshold test of the
    select's values (``x < kth``, ``kth <= x`` ...); None for anything else."""
    if not isinstance(e, Op):
        return None
    a = e.args
    if e.op in _UNKEPT and a[0] in xs and isinstance(a[1], Ref) and a[1].name == kth:
        return _UNKEPT[e.op]
    if e.op in _FLIPPED and a[1] in xs and isinstance(a[0], Ref) and a[0].name == kth:
        return _FLIPPED[e.op]
    return None


def _sure(sel: Reduction) -> bool:
    """``sel``'s kept keys can stand for the row at and above its threshold: a k-th largest of fp32
    values over every element of the row (a select with a mask leaves others >= the threshold out
    of its tiles)."""
    return largest(sel) and sel.body.dtype == "float32" and sel.mask is None


def _stand_for(w: Any, sel: Reduction, v: str) -> None:
    """Let ``v`` (a tile in the Writer's innermost scope) stand for ``sel``'s values there (its body
    and the 16-bit value it upcasts, both held in fp32)."""
    for x in _values(sel):
        w.scopes[-1].cache[(x, ())] = v


def _unkept(e: Expr, xs: tuple[Expr, ...], kth: str, maxima: set[str]) -> float | bool | None:
    """The value ``e`` takes at an element the select did not keep (its values ``xs`` below the row's ``kth``),
    where that is a constant: the threshold tests decide, then -inf propagates through the few ops a
    masked softmax applies to it; else None. A shift by a row value is by one of ``maxima`` (the
    group's max of kept elements, at least the threshold: ``-inf - m`` is -inf, or NaN where a NaN
    was kept and every term is NaN either way) or by a finite constant."""
    if isinstance(e, Const):
        return e.value
    if (t := _test(e, xs, kth)) is not None:
        return t
    if not isinstance(e, Op):
        return None
    a = e.args
    if e.op == "where":
        c = _unkept(a[0], xs, kth, maxima)
        return None if not isinstance(c, bool) else _unkept(a[1] if c else a[2], xs, kth, maxima)
    v = [_unkept(arg, xs, kth, maxima) for arg in a]
    ninf = float("-inf")
    finite = [isinstance(u, (int, float)) and not isinstance(u, bool) and math.isfinite(u) for u in v]
    if v and v[0] == ninf:
        if e.op == "sub" and ((isinstance(a[1], Ref) and a[1].name in maxima) or finite[1]):
            return ninf
        if e.op == "add" and finite[1]:
            return ninf
        if e.op in ("div", "mul") and finite[1] and v[1] > 0:
            return ninf
        if e.op == "exp":
            return 0.0
        if e.op == "to" and e.dtype in ("float32", *HALVES):
            return ninf
    return None


def _reads_only(e: Expr, xs: tuple[Expr, ...]) -> bool:
    """``e`` reads the row through ``xs`` alone (its other loads are row values) and masks nothing."""
    stack = [e]
    while stack:
        n = stack.pop()
        if n in xs:
            continue
        if isinstance(n, Masked) or (isinstance(n, Load) and "rindex" in {v.name for v in n.index.vars()}):
            return False
        stack.extend(n.children())
    return True


def kept_only(groups: list[Any], sel: Reduction) -> bool:
    """Every member of ``groups`` (one level's plain or online groups, no stores in its pass) reduces
    only elements ``sel`` (a k-th largest) keeps: each adds its reduction's identity wherever ``sel``'s
    values are below the threshold, and reads the row through those values alone."""
    xs = _values(sel)
    if not _sure(sel) or not groups:
        return False
    for g in groups:
        if g.kind not in ("plain", "online"):
            return False
        maxima = {m.name for m in g.members if m.rtype == "max"} if g.kind == "online" else set()
        for m in g.members:
            if m.mask is not None or m.rtype not in _IDENTITY or not _reads_only(m.body, xs):
                return False
            if _unkept(m.body, xs, sel.name, maxima) != _IDENTITY[m.rtype]:
                return False
    return True


def kept_select(levels: Any, level: int) -> Reduction | None:
    """The k-th largest selected before ``level`` (of the reduction template's ``Levels``) whose
    lanes' kept keys can feed that level's reductions instead of a pass over the row (no store in
    that pass)."""
    groups = [g for g in levels.groups if g.level == level and g.kind != "select"]
    if levels.full.get(level):
        return None
    return next((g.members[0] for g in levels.groups if g.kind == "select" and g.level < level
                 and kept_only(groups, g.members[0])), None)


def _slow(render: Any, sel: Reduction, found: dict[str, Any], xmask: bool) -> str:
    """Nonzero where some row of the block must take the pass over the row instead of its kept keys."""
    w = render.w
    thr = w.refs[sel.name][0]
    rows = " & xmask" if xmask else ""
    # the float test x < thr is the key test key(x) < key(thr) but at thr = 0 (-0.0 < 0.0 is false,
    # its key is lower) and thr = NaN (nothing is below it); an unsure row's kept keys miss some
    return w.assign(f"tl.max((({found['unsure']} > 0) | ((({thr} != {thr}) | ({thr} == 0.0)){rows}))"
                    ".to(tl.int32))", frozenset({"x"}), key=("kept-keys-slow", sel.name))


def from_kept(render: Any, sel: Reduction, found: dict[str, Any], groups: list[Any], accs: list[Any],
              xmask: bool) -> tuple[list[str], list[str], str]:
    """The updates of ``groups``' accumulators ``accs`` from ``sel``'s kept keys (``found``: what
    :func:`looped` returned), instead of a pass over the row: (row values they need, written before
    the branch; the updates; the branch's condition for taking the pass instead). A kept tile's
    element below the threshold (and a masked lane, key 0) enters as -inf, which each member turns
    into its identity (:func:`kept_only`); the rest are the row's kept elements, each exactly once."""
    w, xr = render.w, frozenset({"x", "r"})
    key = found["key"]
    mark = len(w.lines)
    slow = _slow(render, sel, found, xmask)
    lines: list[str] = []
    saved, render.rmask = render.rmask, False  # a masked lane's key is 0: it enters as -inf
    try:
        for c in found["kept"]:
            w.begin_loop()  # a scope of its own: each tile's values are its own
            v = w.assign(f'tl.where({c} >= {key}, {_float_of(c)}, float("-inf"))', xr)
            _stand_for(w, sel, v)
            for g, a in zip(groups, accs):
                render.update(g, a)
            lines += w.end_loop()
    finally:
        render.rmask = saved
    return w.take(mark), lines, f"if {slow} > 0:"


# -- stores over the kept keys --------------------------------------------------------------------
def _blind(e: Expr, xs: tuple[Expr, ...], kth: str) -> bool:
    """``e``'s value at an element below the threshold does not depend on which element it is: the
    select's values ``xs`` reach it only through a threshold test that masks them out there (a top-k
    softmax's ``where(x < kth, -inf, x)``), whatever the row values it also reads."""
    if e in xs:
        return False
    if _test(e, xs, kth) is not None:
        return True  # the test itself: the same answer at every unkept element
    if isinstance(e, Op) and e.op == "where" and isinstance(c := _unkept(e.args[0], xs, kth, set()), bool):
        return _blind(e.args[0], xs, kth) and _blind(e.args[1] if c else e.args[2], xs, kth)
    return all(_blind(c, xs, kth) for c in e.children())


def kept_store_select(levels: Any, level: int) -> Reduction | None:
    """The k-th largest selected before ``level`` whose lanes' kept keys (with their positions) can
    give that level's stores without a pass over the row: the level reduces nothing, and every store
    reads the row through the select's values alone and is the same at every element the select
    did not keep (so those positions get one value a row and the kept ones their key's float)."""
    stores = levels.full.get(level, [])
    if not stores or any(g.level == level and g.kind != "select" for g in levels.groups):
        return None
    for g in levels.groups:
        sel = g.members[0] if g.kind == "select" and g.level < level else None
        if sel is None or not _sure(sel):
            continue
        xs = _values(sel)
        if all(_reads_only(s.value, xs) and _blind(s.value, xs, sel.name) for s in stores):
            return sel
    return None


def to_kept_stores(render: Any, sel: Reduction, found: dict[str, Any], stores: list[Any], heads: list[list[str]],
                   xmask: bool) -> tuple[list[str], list[str], str]:
    """A pass that writes ``stores`` without reading the row, from ``sel``'s kept keys and their
    positions (``found``: what :func:`looped` returned with ``positions``): at each block a lane's
    element is the kept key whose position is that block, or else stands for every unkept element
    with the float just below the threshold (the key ``T - 1``; the stores are blind to which,
    :func:`kept_store_select`). (row values written before the branch; the pass, its loop heads
    ``heads`` included; the branch's condition for taking the pass over the row instead.)"""
    w, x, xr = render.w, frozenset({"x"}), frozenset({"x", "r"})
    key = found["key"]
    mark = len(w.lines)
    slow = _slow(render, sel, found, xmask)
    # a slot below the threshold holds no kept element: no block is at position -1
    hits = [w.assign(f"tl.where({c} >= {key}, {p}, -1)", xr) for c, p in zip(found["kept"], found["pos"])]
    below = w.assign(f"{key} - 1", x)  # T >= the key of -inf (> 0): with T at it, no element is below
    w.begin_loop()
    kv = below
    for c, h in reversed(list(zip(found["kept"], hits))):
        kv = w.assign(f"tl.where({h} == roffset, {c}, {kv})", xr)
    v = w.assign(_float_of(kv), xr)
    _stand_for(w, sel, v)
    render.stores(stores)
    body = w.end_loop()
    lines = [line for head in heads for line in (*head, *(f"    {b}" for b in body))]
    return w.take(mark), lines, f"if {slow} > 0:"


__all__ = ["from_kept", "is_select", "kept_only", "kept_select", "kept_store_select", "looped", "persistent",
           "to_kept_stores"]
