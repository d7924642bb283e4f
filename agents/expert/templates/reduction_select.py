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

Why not a radix select with ``tl.histogram``: compiled for sm_90a (Triton 3.6, 2026-12-04 on a CPU),
a 256-bin histogram over 2048 values took ~1100 PTX instructions per 8 values a thread (bit ballots
per value, then every bin per warp), near 0.3 ms of issue for four passes over a 256 x 128256
logits tensor; the sweep above is ~15 instructions per value.
"""

from __future__ import annotations

from typing import Any

from agents.expert.kernel import Reduction

SIGN, ALL, NAN = "0x80000000", "0xFFFFFFFF", "0x7FC00000"
CAND = "<candidate>"  # stands for the bisection's candidate in the lines that count against it


def largest(r: Reduction) -> bool:
    return r.rtype == "kth_largest"


def _keys(render: Any, r: Reduction) -> str:
    """The row's elements as order-preserving keys ([XBLOCK, RBLOCK]); masked lanes key 0 (below
    every real key: 0 would be the key of a negative NaN, and NaNs are made positive first)."""
    w, xr = render.w, frozenset({"x", "r"})
    v = render.full(r.body)  # fp32: the lowering casts the values
    bits = w.assign(f"{v}.to(tl.uint32, bitcast=True)", xr)
    bits = w.assign(f"tl.where({v} != {v}, {NAN}, {bits})", xr)
    key = w.assign(f"tl.where(({bits} & {SIGN}) != 0, {bits} ^ {ALL}, {bits} | {SIGN})", xr)
    if not largest(r):
        key = w.assign(f"{key} ^ {ALL}", xr)
    mask = render.lane_mask(r)
    return key if mask is None else w.assign(f"tl.where({mask}, {key}, 0)", xr)


def _bind(render: Any, r: Reduction, key: str) -> None:
    """Bind the reduction's result: the float whose key is ``key`` ([XBLOCK, 1])."""
    w, x = render.w, frozenset({"x"})
    if not largest(r):
        key = w.assign(f"{key} ^ {ALL}", x)
    bits = w.assign(f"tl.where(({key} & {SIGN}) != 0, {key} & 0x7FFFFFFF, {key} ^ {ALL})", x)
    w.bind(r.name, w.assign(f"{bits}.to(tl.float32, bitcast=True)", x), r.dtype, x)


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


def looped(render: Any, r: Reduction, loop_head: list[str], xmask: bool, keep: int) -> dict[str, Any]:
    """One sweep keeping each lane's ``keep`` largest keys (the pack's ``order-statistic-keys-per-lane``),
    the bisection over them, and the per-bit sweeps where that is not exact; a phase of the reduction
    template (before / loop / after lines). ``loop_head`` opens a ``for roffset`` sweep (rindex, rmask)."""
    w, x, xr = render.w, frozenset({"x"}), frozenset({"x", "r"})
    mark = len(w.lines)
    w.begin_loop()
    kept = [w.fresh("_top") for _ in range(keep)]
    for c in kept:
        w.emit(f"{c} = tl.zeros([XBLOCK, RBLOCK], tl.uint32)", x)  # loop-carried
    e = _keys(render, r)
    for i, c in enumerate(kept):  # insert e: each slot keeps the larger, passes the smaller on
        if i == keep - 1:
            w.emit(f"{c} = tl.maximum({c}, {e})", xr)
            break
        hi, lo = w.fresh("_hi"), w.fresh("_lo")
        w.emit(f"{hi} = tl.maximum({c}, {e})", xr)
        w.emit(f"{lo} = tl.minimum({c}, {e})", xr)
        w.emit(f"{c} = {hi}", xr)
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
            "doc": f"{r.name} (the {keep} largest keys of each lane, then a bisection over them)"}


__all__ = ["looped", "persistent"]
