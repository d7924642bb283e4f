"""A GEMM's rows longer than one tile, with their row reductions (and a chained GEMM) in its kernel:
passes over N, each block of ``BLOCK_N`` columns computed by its own K loop
(``schedule.Policy.row_passes``).

Where a row fits one tile (``chain.ROW_TILE``), the matmul template runs the row reductions of its
epilogue on the tile, as a persistent reduction. A longer row (attention's scores at 1024 tokens, a
softmax over a wide projection, an MLP's wide hidden layer) is walked like a looped reduction: one
pass over N a level of its reductions (``reduction.plan_levels``: a softmax's max and sum are one
online pass), the stores and a chained GEMM's dot in the pass after the level they read, the GEMM's
tile recomputed in each pass.

Flash attention is the one-pass case: where the chained GEMM's A operand is the softmax itself
(``[cast](exp(x - max) / sum)``, the online group's own terms) and nothing else needs the row's final
sum, the dot sums the unnormalised terms' products in the online pass, rescaled whenever the running
max moves as the sum is, and divides by the sum after the pass (``_one_pass``). The 16-bit rounding of
P falls on ``exp(x - max)`` instead of on the quotient: the same relative error. Returning the
probabilities too takes a second pass, which computes them exactly as the graph spells them.

Blocks a mask removes are skipped in the one pass (:func:`dead_block`): where the softmax's input is
``s + L`` (an additive mask: transformers' 0 / ``finfo.min``), ``where(C, -inf, s)`` (``masked_fill``:
nanoGPT's ``tril`` buffer, a ``triu`` of index comparisons) or ``where(C, s, -inf)`` (a keep-mask), with
``L`` or ``C`` free of the GEMM, a pre-pass over ``L`` or ``C`` alone finds the first and last block
with a surviving lane (``L > -1e30``, ``C`` false somewhere), and the pass walks only those
(:func:`_bounds`): a branch on each block kept Triton from pipelining the loop over N (H100,
2026-12-07). That is exact, not approximate: a masked lane's term is ``exp(x - max) = 0`` and the
running max does not move, and a block before the first live one, had it run, would be rescaled by
``exp(-huge) = 0`` once a score comes; so where every row of the tile has a surviving lane somewhere
and scores stay below 1e29 in magnitude, the sum and P @ V are unchanged. Where ``finfo.min`` stands
for "masked" and a row has no surviving lane at all, the tile takes every block (eager's average over
the masked values); with ``-inf`` such a row is NaN either way. A causal mask at 1024 tokens in 128 x
128 blocks skips 28 of 64 blocks. The one difference from eager: a NaN or inf in a masked key's k or v
row does not reach the output, as in PyTorch's SDPA flash kernels, which skip the same blocks; a NaN
in the mask itself counts as masked in the pre-pass (a NaN mask is not a mask any model builds). An
fp16 mask's ``finfo.min`` (-65504) is above the bound: those blocks are computed. An additive mask's
pre-pass keeps it in fp32 and takes its rows' maxima, no select a lane (transformers' bf16 attention,
sm_90a: 167 SASS instructions a block against 504 with 0 / 1 integers; judged on an H100,
2026-12-07: 0.1306 ms against the integer form's 0.1418 and a hand edit's 0.1320).

On the GPU a block's whole K (the head dim, up to the pack constant ``passes-whole-k-max``) is one
step with two pipeline stages (``matmul.py``): the K loop folds away, the loop over N is the innermost,
and Triton pipelines it, the next block's K and V tiles loading while this one computes.

Memory, ``softmax(q @ k.mT) @ v`` at nanoGPT's 8 x 12 heads x 1024 tokens x d 64 in fp32: the unchained
kernels write 403 MB of scores, and the softmax reads them and writes as many probabilities, which the
second GEMM reads (1.6 GB); one pass moves q, k, v and the output (101 MB, k and v re-read per row tile
mostly from L2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.expert.ir.expr import Const, Expr, Op, Ref, substitute, walk
from agents.expert.kernel import Kernel
from agents.expert.templates.matmul_chain import chain_lines
from agents.expert.templates.matmul_epilogue import bind_output, tile_mask
from agents.expert.templates.reduction import Group, Levels, plan_levels
from agents.expert.templates.reduction_body import Render
from agents.expert.writer import Writer


NEG = -1e30  # mask values at or below it remove their lane (module docstring)


@dataclass
class RowPasses:
    passes: list[dict[str, Any]]  # each: before, prepass (top level), lo, hi (its bounds), loop (after the K loop), after, doc
    head: list[str]  # opens every pass's block at n0: the column indices and masks
    after: list[str] = field(default_factory=list)  # after the last pass: the chained GEMM's epilogue
    skips: bool = False  # blocks a mask removes are skipped (dead_block)
    skippable: bool = False  # ... or would be, but for the skip_masked switch


@dataclass(frozen=True)
class DeadTest:
    kind: str  # "add": every lane's additive mask <= NEG; "all" / "none": the condition holds on every / no lane
    mask: Expr  # the GEMM-free part of the softmax's input: L or C
    seen: bool  # a finite mask value (finfo.min), not -inf: a row with no surviving lane takes every block


def _uncast(e: Expr) -> Expr:
    while isinstance(e, Op) and e.op == "to":
        e = e.args[0]
    return e


def dead_block(x: Expr, gemm: str) -> DeadTest | None:
    """How a block of the online max's input ``x`` shows, before its GEMM runs, that no lane of it
    survives the mask (the module docstring): ``x`` is (up to casts) ``s + L``, ``where(C, NEG, s)`` or
    ``where(C, s, NEG)`` with ``s`` reading the GEMM's output ``gemm`` and ``L`` / ``C`` not."""
    def free(e: Expr) -> bool:
        return not any(isinstance(n, Ref) and n.name == gemm for n in walk(e))

    def low(e: Expr) -> bool:
        e = _uncast(e)
        return isinstance(e, Const) and not isinstance(e.value, bool) and float(e.value) <= NEG

    x = _uncast(x)
    if not isinstance(x, Op):
        return None
    if x.op == "add" and len(x.args) == 2 and free(x.args[0]) != free(x.args[1]):
        return DeadTest("add", x.args[0] if free(x.args[0]) else x.args[1], True)
    if x.op == "where" and free(x.args[0]):
        c, t, f = x.args
        if low(t) and not free(f):
            return DeadTest("all", c, float(_uncast(t).value) != float("-inf"))  # type: ignore[attr-defined]
        if low(f) and not free(t):
            return DeadTest("none", c, float(_uncast(f).value) != float("-inf"))  # type: ignore[attr-defined]
    return None


def _bounds(e: Writer, test: DeadTest, head: list[str], tile: str | None, n: int,
            rows: str | None) -> tuple[list[str], str, str]:
    """A pre-pass over the mask alone, before the pass: (its lines, the first live block's ``n0``, the
    end of the last live block), the pass's loop bounds. No branch inside the pass: Triton pipelines
    its loop over N (the next block's tiles load while this one computes), which a per-block ``if``
    prevented (H100, 2026-12-07: transformers' bf16 attention 0.161 ms with the branch, 0.130 with
    the bounds, 0.136 with neither). Dead blocks inside the bounds are computed, which is exact.
    Where a finite mask value (``finfo.min``) stands for "masked", a row of the tile with no surviving
    lane anywhere takes every block (eager's average over its masked values); ``rows``: the tile's
    row mask, whose lanes past the end count as surviving."""
    e.begin_loop()
    v = e.value(test.mask)
    body = e.end_loop()
    # an additive mask stays in fp32 (its row max is the survival test: no select, and the block's test
    # reduces the row maxima, not the tile again); a condition becomes 0 / 1
    add = test.kind == "add"
    survives = v if add else {"all": f"tl.where({v}, 0, 1)", "none": f"tl.where({v}, 1, 0)"}[test.kind]
    floor, dead = (f"{NEG!r}", 'float("-inf")') if add else ("0", "0")  # a lane survives above floor
    if tile:
        survives = f"tl.where({tile}, {survives}, {dead})"
    lo, hi, kept, s = (e.fresh(x) for x in ("_lo", "_hi", "_kept", "_survives"))
    row = e.fresh("_row") if test.seen else ""  # the tile's rows' maxima, kept over the blocks
    live = e.fresh("_live")
    loop = [*head, *body, f"{s} = {survives}"]
    if test.seen:
        loop += [f"{row} = tl.max({s}, 1)[:, None]", f"{live} = tl.max({row}) > {floor}"]
    else:
        loop.append(f"{live} = tl.max({s}) > {floor}")
    loop += [f"{lo} = tl.where({live} & (n0 < {lo}), n0, {lo})", f"{hi} = tl.where({live}, n0 + BLOCK_N, {hi})"]
    lines = [f"{lo} = {n}", f"{hi} = 0"]
    if test.seen:
        lines.append(f"{kept} = tl.full([BLOCK_M, 1], {dead}, {'tl.float32' if add else 'tl.int32'})")
        loop.append(f"{kept} = tl.maximum({kept}, {row})")
    lines += ["for n0 in range(0, N, BLOCK_N):", *(f"    {line}" for line in loop)]
    if test.seen:
        every = f"tl.where({rows}, {kept}, {'0.0' if add else 1})" if rows else kept
        lines += [f"if tl.min({every}) <= {floor}:  # a row with no surviving lane: every block, as eager computes it",
                  f"    {lo} = 0", f"    {hi} = N"]
    return lines, lo, hi


def _level_of(names: set[str], of: dict[str, int]) -> int:
    return max((of[n] for n in names if n in of), default=0)


def _one_pass(levels: Levels, a: Expr) -> Group | None:
    """The online softmax group whose normalised terms are the chained GEMM's A operand, when nothing
    else needs a second pass: ``A = [cast](E / sum)`` with ``E`` the group's summed ``exp(x - max)``,
    every reduction in that group and no store after it. Then the dot sums ``E``'s products in the
    same pass, rescaled as the sum is, and divides by the sum at the end (flash attention's one pass;
    the 16-bit rounding of P falls on ``E`` instead of ``E / sum``: the same relative error)."""
    body = a.args[0] if isinstance(a, Op) and a.op == "to" else a
    if not (isinstance(body, Op) and body.op == "div" and isinstance(body.args[1], Ref)):
        return None
    groups = [g for g in levels.groups if g.kind == "online" and g.members[1].name == body.args[1].name]
    if len(groups) != 1 or len(levels.groups) != 1 or body.args[0] != groups[0].members[1].body:
        return None
    if any(level > 1 for level in levels.full) or any(level > 1 for level in levels.rows):
        return None
    return groups[0]


def row_passes(view: Kernel, e: Writer, mm: Any, benv: dict[Any, Any], nmask: bool, mmask: bool,
               chain: tuple[Kernel, dict[str, str], str | None, bool, bool] | None, vectors: set[str],
               cast: str, skip_masked: bool = True) -> RowPasses:
    """The passes of ``view`` (the matmul kernel, its stores and reductions over the batch index) through
    the epilogue writer ``e``: each pass's accumulators before it, its block's work after the K loop the
    template writes, its row results after it. ``chain``: (the kernel with its chained GEMM's stores,
    pointer params, dot precision, idx64, cpu), whose dot accumulates over the blocks of the pass after
    what its A operand reads. ``skip_masked``: blocks a mask removes are skipped in a one pass (dead_block)."""
    levels = plan_levels(view, online=True)  # the max and sum of a softmax in one pass (online)
    r = Render(view, e, nmask, "[BLOCK_M, BLOCK_N]")
    r.row_sums = True  # a softmax's sum a row: the tile's registers hold the scores and the second accumulator
    of = {m.name: g.level for g in levels.groups for m in g.members}
    chain_level, flash = 0, None
    if view.chained is not None and chain is not None:
        operand = substitute(view.chained[1], benv)  # the chained GEMM's A operand on this tile
        flash = _one_pass(levels, operand)
        chain_level = 1 if flash else max(1, _level_of({x.name for x in walk(operand) if isinstance(x, Ref)}, of) + 1)
    depth = max(levels.depth, chain_level, 1)
    head = [f"rn = (n0 + tl.arange(0, BLOCK_N)[None, :]){cast}", *(["nmask = rn < N"] if nmask else [])]
    if "rn1" in vectors:  # a scale row along N (an integer weight's), loaded as a vector
        head += [f"rn1 = (n0 + tl.arange(0, BLOCK_N)){cast}", *(["nmask1 = rn1 < N"] if nmask else [])]
    head += ["rindex = rn", f"rnumel = {mm.n}", *(["rmask = nmask"] if nmask else [])]
    mark = len(e.lines)  # each pass takes what was written since (the first: row stores of no level too)
    r.stores(levels.rows.get(0, []))
    out = RowPasses([], head)
    tile = tile_mask(mmask, nmask) or None
    for level in range(1, depth + 1):
        groups = [g for g in levels.groups if g.level == level]
        test = dead_block(flash.members[0].body, mm.name) \
            if flash is not None and level == chain_level and not any(levels.full.values()) else None
        if test is not None and "r" not in e.deps(test.mask):
            test = None  # a mask that does not vary along N: no block differs from another
        if test is not None and not skip_masked:
            out.skippable, test = True, None
        bounds = _bounds(e, test, head, tile, mm.n, "mmask" if mmask else None) if test is not None else None
        e.begin_loop()
        bind_output(e, mm, "acc", benv)  # this block's GEMM output, as the epilogue reads it
        accs = [r.init(g) for g in groups]  # (per row or per lane: hoisted before the pass)
        for g, a in zip(groups, accs):
            r.update(g, a)
        r.stores(levels.full.get(level, []))
        step: list[str] = []
        if level == chain_level and chain is not None:
            kernel, ptrs, precision, wide, cpu = chain
            online = r.online_terms[flash.members[0].name] if flash else None
            lines = chain_lines(kernel, e, ptrs, benv, nmask, mmask, precision, wide, cpu, looped=True, online=online)
            for line in lines.init:  # loop-invariant: before the pass
                e.emit(line, frozenset())
            step, out.after = lines.step, lines.after
        body = e.end_loop() + step
        before = e.take(mark)
        for g, a in zip(groups, accs):
            r.finish(g, a)
        r.stores(levels.rows.get(level, []))
        if flash is not None and level == chain_level:  # the terms' products over the row's sum
            out.after = [f"acc2 = acc2 / {e.value(Ref(flash.members[1].name, flash.members[1].dtype))}", *out.after]
        after = e.take(mark)
        what = ", ".join(m.name for g in groups for m in g.members) or "the stores"
        if level == chain_level and chain is not None:
            what += f" and the chained {view.chained[0].name}"
        out.skips |= bounds is not None
        prepass, lo, hi = bounds if bounds is not None else ([], "0", "N")
        out.passes.append({"before": before, "prepass": prepass, "lo": lo, "hi": hi, "loop": body, "after": after,
                           "doc": what})
    return out
