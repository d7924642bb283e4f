"""Losses: pointwise losses reduced to a scalar, cross_entropy and nll_loss with class targets.

Operand/kwarg convention (torch.nn.functional order; see REDUCE_CONTRACT.md). ``reduction`` is
``"mean"`` (default), ``"sum"``, ``"none"`` (and ``"batchmean"`` for kl_div); the legacy
``size_average``/``reduce`` flags are declined when present.

* ``mse_loss``, ``l1_loss``, ``soft_margin_loss``: ``[input, target]``.
* ``smooth_l1_loss`` ``[input, target]``, ``beta`` (1.0); ``huber_loss`` ``[input, target]``,
  ``delta`` (1.0) (a ``weight`` operand is declined).
* ``kl_div`` ``[input (log-probs), target]``, ``log_target`` (False).
* ``hinge_embedding_loss`` ``[input, target]``, ``margin`` (1.0).
* ``margin_ranking_loss`` ``[input1, input2, target]``, ``margin`` (0.0).
* ``binary_cross_entropy`` ``[input, target]`` (``weight`` declined);
  ``binary_cross_entropy_with_logits`` ``[input, target]`` (``weight``/``pos_weight`` declined).
* ``cross_entropy`` ``[input [N, C], target [N] int]`` (class indices; ``weight`` and probability
  targets declined), ``ignore_index`` (-100), ``label_smoothing`` (0.0 supported, any value).
* ``nll_loss`` ``[input [N, C] log-probs, target [N] int]``, ``ignore_index``.

Structures. Pointwise losses with mean/sum/batchmean run on the shared reduction engine: one read
of every operand (broadcast operands by stride 0), per-program fp32 partials and an ordered second
pass (deterministic, no atomics); ``none`` is a flat elementwise kernel. cross_entropy/nll_loss:
one program per ``BLOCK_M`` rows walks the classes in ``block_r`` chunks with an online
max/sum-exp (one read), gathers ``x[target]`` and writes the row loss ("none") or its partial sum
and valid-row count, reduced by a one-program second kernel (mean divides by non-ignored rows).
"""

from __future__ import annotations

from typing import Any

import structlog

from agents.expert.kernels import reduce_engine as engine
from agents.expert.kernels.base import GroupSpec, KernelPlan
from agents.expert.kernels.launch_lines import (
    as3_helper,
    lane_setup,
    launcher_shape,
    num_warps_for,
    store_cast,
)
from agents.expert.kernels.reduce_common import (
    FLOAT_DTYPES,
    Fusion,
    broadcastable,
    emit_region,
    input_dtype,
    launcher_params,
    next_pow2,
    parse_fusion,
    ref,
    region_args,
    region_params,
    region_views,
    scalar_args,
    scalar_params,
    value_shape,
)

log = structlog.get_logger(__name__)

POINTWISE = {
    "mse_loss": (2, "({a} - {b}) * ({a} - {b})"),
    "l1_loss": (2, "tl.abs({a} - {b})"),
    "soft_margin_loss": (2, "tl.log(1.0 + tl.exp(-{b} * {a}))"),
    "smooth_l1_loss": (2, None),
    "huber_loss": (2, None),
    "kl_div": (2, None),
    "hinge_embedding_loss": (2, None),
    "margin_ranking_loss": (3, None),
    "binary_cross_entropy": (2, "-({b} * tl.maximum(tl.log({a}), -100.0) + (1.0 - {b}) * "
                                "tl.maximum(tl.log(1.0 - {a}), -100.0))"),
    "binary_cross_entropy_with_logits": (2, None),
}
CLASS_LOSSES = frozenset({"cross_entropy", "nll_loss"})
PRINCIPLES = ["algorithm-structure/logsumexp-cross-entropy", "algorithm-structure/split-long-reductions",
              "memory/avoid-atomics", "tiling/fp32-accumulators"]


def _num(kw: dict[str, Any], key: str, default: float) -> float | None:
    v = kw.get(key, default)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _pointwise_expr(op: str, kw: dict[str, Any], a: str, b: str, c: str) -> str | None:
    """fp32 expression of one element's loss (torch's ATen formulas)."""
    n, expr = POINTWISE[op]
    if expr:
        return expr.format(a=a, b=b)
    if op in ("smooth_l1_loss", "huber_loss"):
        t = _num(kw, "beta" if op == "smooth_l1_loss" else "delta", 1.0)
        if t is None or t < 0:
            return None
        d = f"tl.abs({a} - {b})"
        if op == "smooth_l1_loss":
            return d if t == 0 else f"tl.where({d} < {t!r}, 0.5 * {d} * {d} / {t!r}, {d} - {0.5 * t!r})"
        return f"tl.where({d} < {t!r}, 0.5 * {d} * {d}, {t!r} * ({d} - {0.5 * t!r}))"
    if op == "kl_div":
        if kw.get("log_target", False):
            return f"tl.exp({b}) * ({b} - {a})"
        return f"tl.where({b} == 0, 0.0, {b} * tl.log({b})) - {b} * {a}"  # xlogy(t, t) - t * x
    if op == "hinge_embedding_loss":
        mg = _num(kw, "margin", 1.0)
        return None if mg is None else (
            f"tl.where({b} != 1, tl.maximum({mg!r} - {a}, 0.0), 0.0) + tl.where({b} != -1, {a}, 0.0)")
    if op == "margin_ranking_loss":
        mg = _num(kw, "margin", 0.0)
        return None if mg is None else f"tl.maximum(-{c} * ({a} - {b}) + {mg!r}, 0.0)"
    # binary_cross_entropy_with_logits, the stable form ATen uses
    mv = f"tl.maximum(-{a}, 0.0)"
    return f"(1.0 - {b}) * {a} + {mv} + tl.log(tl.exp(-{mv}) + tl.exp(-{a} - {mv}))"


def _common(group: GroupSpec, ops: frozenset[str] | set[str]) -> Fusion | None:
    fusion = parse_fusion(group, ops)
    if fusion is None:
        return None
    kw = fusion.anchor.kwargs
    if kw.get("size_average") is not None or kw.get("reduce") is not None:
        return None
    return fusion


def _pointwise(group: GroupSpec) -> tuple[Fusion, str, str, list[int]] | None:
    fusion = _common(group, set(POINTWISE))
    if fusion is None:
        return None
    a = fusion.anchor
    n = POINTWISE[a.op][0]
    ops = list(a.operands)
    if len(ops) < n or any(o is not None for o in ops[n:]) or not all(isinstance(o, str) for o in ops[:n]):
        return None  # weight / pos_weight operands are declined
    shapes = [value_shape(group, o) for o in ops[:n]]
    if any(s is None for s in shapes) or input_dtype(group, ops[0]) not in FLOAT_DTYPES:
        return None
    full = list(shapes[0])  # type: ignore[arg-type]
    if not full or any(not broadcastable(s, full) for s in shapes):  # type: ignore[arg-type]
        return None
    refs = [ref(fusion, o) for o in ops[:n]] + ["0.0"]
    expr = _pointwise_expr(a.op, dict(a.kwargs), refs[0], refs[1], refs[2])
    red = a.kwargs.get("reduction", "mean")
    if expr is None or red not in ("mean", "sum", "none", "batchmean"):
        return None
    if red == "batchmean" and a.op != "kl_div":
        return None
    out_shape = full if red == "none" else []
    if list(group.out.shape) != out_shape or group.out.dtype not in FLOAT_DTYPES:
        return None
    if not fusion.shapes_ok(full, out_shape):
        return None
    return fusion, expr, red, full


def _pointwise_job(fusion: Fusion, expr: str, red: str, full: list[int]) -> engine.ReduceJob:
    return engine.ReduceJob(
        fusion=fusion, operands=[o for o in fusion.anchor.operands if isinstance(o, str)],
        value=expr, kind="sum", final="acc" if red == "sum" else "acc / n", dims=None,
        keepdim=False, rank=len(full), out_dtype=fusion.group.out.dtype,
        count="shape[0]" if red == "batchmean" else None)


def _none_source(fusion: Fusion, expr: str, cfg: dict[str, Any], launcher: str) -> str:
    """reduction='none': a flat elementwise kernel over the broadcast shape."""
    p = f"_{launcher}"
    tensors = [o for o in fusion.anchor.operands if isinstance(o, str)]
    pre, post = fusion.pre_region(tensors), fusion.post_region()
    k = ["@triton.jit", f"def {p}_none(",
         f"    {region_params(pre, 'flat')}{scalar_params(fusion)}out_ptr, {region_params(post, 'flat')}"
         "NUMEL, BLOCK: tl.constexpr,", "):",
         "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
         "    mask = offs < NUMEL",
         *emit_region(fusion, pre, offsets="offs", mask="mask", indent="    "),
         f"    v_{fusion.anchor.name} = {expr}",
         *emit_region(fusion, post, offsets="offs", mask="mask", indent="    "),
         f"    tl.store(out_ptr + offs, {store_cast(f'v_{fusion.group.output}', fusion.group.out.dtype)}, "
         "mask=mask)"]
    L = [f"def {launcher}({launcher_params(fusion.group)}):",
         f"    shape = out_shape = {launcher_shape(pre.tensors)}",
         f"    out = torch.empty(shape, dtype=torch.{fusion.group.out.dtype}, device=g_{pre.tensors[0]}.device)",
         *region_views(pre, "flat", launcher), *region_views(post, "flat", launcher),
         f"    BLOCK = {int(cfg.get('block', 1024))}",
         f"    {p}_none[(_egg_cdiv(out.numel(), BLOCK),)]({region_args(pre, 'flat')}{scalar_args(fusion)}"
         f"out, {region_args(post, 'flat')}out.numel(), BLOCK=BLOCK, num_warps={int(cfg.get('num_warps', 4))})",
         "    return out"]
    return "\n".join(k) + "\n\n" + "\n".join(L) + "\n"


def _class(group: GroupSpec) -> tuple[Fusion, str, float, float] | None:
    fusion = _common(group, CLASS_LOSSES)
    if fusion is None:
        return None
    a = fusion.anchor
    ops = list(a.operands)
    if len(ops) < 2 or any(o is not None for o in ops[2:]):
        return None  # class weights declined
    x, t = ops[0], ops[1]
    xs, ts = value_shape(group, x), value_shape(group, t)
    if xs is None or ts is None or len(xs) != 2 or ts != xs[:1]:
        return None  # [N, C] logits with [N] class indices only
    tin = next((v for v in group.inputs if v.name == t), None)
    if tin is None or tin.dtype not in ("int64", "int32") or input_dtype(group, x) not in FLOAT_DTYPES:
        return None
    kw = dict(a.kwargs)
    red = kw.get("reduction", "mean")
    ign = kw.get("ignore_index", -100)
    ls = _num(kw, "label_smoothing", 0.0) if a.op == "cross_entropy" else 0.0
    if red not in ("mean", "sum", "none") or not isinstance(ign, int) or ls is None:
        return None
    out_shape = xs[:1] if red == "none" else []
    if list(group.out.shape) != out_shape or group.out.dtype not in FLOAT_DTYPES:
        return None
    if not fusion.shapes_ok(xs, out_shape):
        return None
    return fusion, red, float(ign), ls


def _class_source(fusion: Fusion, red: str, ign: float, ls: float, cfg: dict[str, Any],
                  launcher: str) -> str:
    p = f"_{launcher}"
    a = fusion.anchor
    x, t = a.operands[0], a.operands[1]
    pre, post = fusion.pre_region([x]), fusion.post_region()
    ce = a.op == "cross_entropy"
    loads = emit_region(fusion, pre, offsets={"o": "o", "r": "r"}, mask="mask", indent="        ")
    k = ["@triton.jit", f"def {p}_rows(",
         f"    {region_params(pre, '3d')}{scalar_params(fusion)}t_ptr, part_ptr, cnt_ptr, out_ptr, "
         f"{region_params(post, 'flat') if red == 'none' else ''}",
         "    M, R, ignore, BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr,", "):", *lane_setup(True),
         "    m_run = tl.full([BLOCK_M, BLOCK_R], float('-inf'), tl.float32)",
         "    d_run = tl.zeros([BLOCK_M, BLOCK_R], tl.float32)",
         "    sx = tl.zeros([BLOCK_M, BLOCK_R], tl.float32)"]
    if ce:  # online logsumexp over the classes: one read of the logits
        k += ["    for k0 in range(0, R, BLOCK_R):", "        r = k0 + kk", "        mask = lane_ok & (r < R)",
              "        r = r.to(tl.int64)", *loads,
              f"        x = tl.where(mask, {ref(fusion, x)}, float('-inf'))",
              "        sx += tl.where(mask, x, 0.0)",
              "        m_new = tl.maximum(m_run, x)",
              "        alpha = tl.where(m_new == float('-inf'), 1.0, tl.exp(m_run - m_new))",
              "        d_run = d_run * alpha + tl.where(x == float('-inf'), 0.0, tl.exp(x - m_new))",
              "        m_run = m_new",
              "    mx = tl.max(m_run, axis=1)",
              "    lse = mx + tl.log(tl.sum(tl.where(m_run == float('-inf'), 0.0, "
              "d_run * tl.exp(m_run - mx[:, None])), axis=1))"]
    k += ["    tgt = tl.load(t_ptr + m, mask=m_ok, other=0)",
          "    valid = m_ok & (tgt != ignore) & (tgt >= 0) & (tgt < R)",
          "    rt = tgt.to(tl.int64)[:, None]",
          *emit_region(fusion, pre, offsets={"o": "o", "r": "rt"}, mask="valid[:, None]", indent="    ",
                       suffix="_t"),
          f"    xt = tl.sum(tl.where(valid[:, None], {ref(fusion, x, '_t')}, 0.0), axis=1)"]
    if ce:
        k.append(f"    loss = {1.0 - ls!r} * (lse - xt)"
                 + (f" + {ls!r} * (lse - tl.sum(sx, axis=1) / R)" if ls else ""))
    else:
        k.append("    loss = -xt")
    k.append("    loss = tl.where(valid, loss, 0.0)")
    if red == "none":
        k += [f"    v_{a.name} = loss", *emit_region(fusion, post, offsets="m", mask="m_ok", indent="    "),
              f"    tl.store(out_ptr + m, {store_cast(f'v_{fusion.group.output}', fusion.group.out.dtype)}, "
              "mask=m_ok)"]
    else:
        k += ["    tl.store(part_ptr + tl.program_id(0), tl.sum(loss, axis=0))",
              "    tl.store(cnt_ptr + tl.program_id(0), tl.sum(valid.to(tl.float32), axis=0))"]
    fin = ["@triton.jit", f"def {p}_finish(",
           f"    part_ptr, cnt_ptr, out_ptr, {region_params(post, 'flat')}{scalar_params(fusion)}"
           "P, BLOCK: tl.constexpr,", "):",
           "    acc = tl.zeros([BLOCK], tl.float32)", "    accn = tl.zeros([BLOCK], tl.float32)",
           "    for k0 in range(0, P, BLOCK):  # fixed order: deterministic",
           "        kx = k0 + tl.arange(0, BLOCK)",
           "        acc += tl.load(part_ptr + kx, mask=kx < P, other=0.0)",
           "        accn += tl.load(cnt_ptr + kx, mask=kx < P, other=0.0)",
           "    m = tl.arange(0, 1)", "    m_ok = m < 1",
           f"    v_{a.name} = tl.sum(acc, axis=0) {'/ tl.sum(accn, axis=0)' if red == 'mean' else ''}"
           " + tl.zeros([1], tl.float32)",
           *emit_region(fusion, post, offsets="m", mask="m_ok", indent="    "),
           f"    tl.store(out_ptr + m, {store_cast(f'v_{fusion.group.output}', fusion.group.out.dtype)}, "
           "mask=m_ok)"]
    out_shape = "[N]" if red == "none" else "[]"
    L = [f"def {launcher}({launcher_params(fusion.group)}):",
         f"    shape = {launcher_shape(pre.tensors)}", "    N, R = shape", "    O, I = N, 1",
         f"    out_shape = {out_shape}",
         f"    out = torch.empty(out_shape, dtype=torch.{fusion.group.out.dtype}, device=g_{pre.tensors[0]}.device)",
         *region_views(pre, "3d", launcher), *region_views(post, "flat", launcher),
         f"    tg = g_{t}.contiguous()", f"    BM, BR = {int(cfg['block_m'])}, {int(cfg['block_r'])}",
         "    P = _egg_cdiv(N, BM)",
         "    part = torch.empty(P, dtype=torch.float32, device=out.device)",
         "    cnt = torch.empty_like(part)",
         f"    {p}_rows[(P,)]({region_args(pre, '3d')}{scalar_args(fusion)}tg, part, cnt, out, "
         f"{region_args(post, 'flat') if red == 'none' else ''}N, R, {int(ign)}, BLOCK_M=BM, "
         f"BLOCK_R=BR, num_warps={int(cfg['num_warps'])})"]
    if red != "none":
        L.append(f"    {p}_finish[(1,)](part, cnt, out, {region_args(post, 'flat')}{scalar_args(fusion)}"
                 "P, BLOCK=min(_egg_next_pow2(P), 1024), num_warps=4)")
    L.append("    return out")
    return "\n".join([as3_helper(launcher), "\n".join(k), "", "\n".join(fin), "", "\n".join(L), ""])


class LossTemplate:
    """Pointwise losses (engine-reduced) and class-index cross_entropy / nll_loss."""

    name = "reduce_loss"

    def match(self, group: GroupSpec) -> bool:
        return _pointwise(group) is not None or _class(group) is not None

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        pw = _pointwise(group)
        if pw is not None:
            if pw[2] == "none":
                return {"block": [512, 1024, 2048, 4096], "num_warps": [4, 8]}
            return engine.tuning_space(_pointwise_job(*pw))
        if _class(group) is not None:
            return {"block_m": [1, 2, 4], "block_r": [1024, 2048, 4096, 8192], "num_warps": [4, 8, 16]}
        return {}

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        pw = _pointwise(group)
        if pw is not None:
            if pw[2] == "none":
                return {"block": 1024, "num_warps": 4}
            return engine.default_config(_pointwise_job(*pw), pw[3])
        cl = _class(group)
        if cl is None:
            return {}
        c = (value_shape(group, cl[0].anchor.operands[0]) or [1, 1])[1]
        br = min(next_pow2(c), 4096)
        bm = max(1, min(16, 2048 // br))
        return {"block_m": bm, "block_r": br, "num_warps": num_warps_for(br * bm)}

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        cfg = {**self.default_config(group, "cuda"), **config}
        pw = _pointwise(group)
        if pw is not None:
            fusion, expr, red, full = pw
            if red == "none":
                source, what = _none_source(fusion, expr, cfg, launcher), "flat elementwise"
            else:
                source = engine.render(_pointwise_job(*pw), cfg, launcher)
                what = f"{red}: one-read fp32 partials + ordered second pass"
            op = fusion.anchor.op
        else:
            cl = _class(group)
            if cl is None:
                raise ValueError(f"{self.name} cannot compute this group")
            fusion, red, ign, ls = cl
            source = _class_source(fusion, red, ign, ls, cfg, launcher)
            op = fusion.anchor.op
            what = f"rows x online logsumexp + target gather, {red}"
        log.debug("reduce_loss.render", op=op, config=cfg)
        return KernelPlan(launcher=launcher, source=source, structure=f"{op}: {what}",
                          principle_ids=PRINCIPLES, config=cfg)


TEMPLATES: list[Any] = [LossTemplate()]
