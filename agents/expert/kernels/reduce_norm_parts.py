"""Kernel pieces of ``reduce_norm``: loading a row with its prologue, normalising and storing it
with the epilogue (shared by the row-norm and batch-norm kernels), and the batch-norm kernels.

Split out of :mod:`agents.expert.kernels.reduce_norm` to keep each module readable; it defines
no template (``TEMPLATES`` is empty, as in ``reduce_common``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents.expert.kernels.launch_lines import (
    store_cast,
)
from agents.expert.kernels.reduce_common import (
    emit_region,
    ref,
    region_params,
    scalar_params,
)

if TYPE_CHECKING:
    from agents.expert.kernels.reduce_norm import _Spec

TEMPLATES: list[Any] = []  # helpers only: the template is reduce_norm.NormTemplate


def _chan(spec: _Spec, row: str, col: str) -> str:
    """Index of the affine parameter of element (row, col)."""
    if spec.op in ("layer_norm", "rms_norm"):
        return col
    if spec.op == "group_norm":
        return f"({row} % G) * CPG + {col} // S"
    return f"({row} % C + 0 * {col})"  # one channel per row, broadcast over the row's tile


def normalise(spec: _Spec, row: str, col: str, mask: str, ind: str) -> list[str]:
    """``xc``/``rstd`` -> affine -> epilogue -> store at ``offs``."""
    f = spec.fusion
    lines = [f"{ind}y = xc * rstd"]
    ch = _chan(spec, row, col)
    if spec.slots.get("weight"):
        lines.append(f"{ind}y = y * tl.load(w_ptr + {ch}, mask={mask}, other=0.0).to(tl.float32)")
    if spec.slots.get("bias"):
        lines.append(f"{ind}y = y + tl.load(b_ptr + {ch}, mask={mask}, other=0.0).to(tl.float32)")
    lines.append(f"{ind}v_{f.anchor.name} = y")
    lines += emit_region(f, f.post_region(), offsets="offs", mask=mask, indent=ind)
    val = store_cast(f"v_{f.group.output}", f.group.out.dtype)
    lines.append(f"{ind}tl.store(out_ptr + offs, {val}, mask={mask})")
    for i, name in enumerate(f.group.extra_outputs):  # prologue values written too (row norms only)
        extra = store_cast(f"v_{name}", f.group.node(name).dtype)
        lines.append(f"{ind}tl.store(xo{i}_ptr + offs, {extra}, mask={mask})")
    return lines


def head(spec: _Spec, name: str, extra: str, consts: str) -> list[str]:
    f = spec.fusion
    return ["@triton.jit", f"def {name}(",
            f"    {region_params(f.pre_region([spec.x]), 'flat')}{scalar_params(f)}{extra}",
            f"    {consts}", "):"]


def load_x(spec: _Spec, mask: str, ind: str, suffix: str = "", offs: str = "offs") -> list[str]:
    f = spec.fusion
    lines = emit_region(f, f.pre_region([spec.x]), offsets=offs, mask=mask, indent=ind,
                        suffix=suffix)
    return lines + [f"{ind}x{suffix} = tl.where({mask}, {ref(f, spec.x, suffix)}, 0.0)"]


def bn_kernels(spec: _Spec, p: str) -> str:
    post = region_params(spec.fusion.post_region(), "flat")
    st = head(spec, f"{p}_stats", "ws_ptr, ws2_ptr, sh_ptr,",
               "N, C, S, NCHUNK, BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr,")
    st += ["    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)[:, None]", "    c_ok = c < C",
           "    sp = tl.program_id(1)", "    sv = tl.arange(0, BLOCK_S)[None, :]",
           # one shift per channel (its first element) shared by all chunks: partials just add
           *load_x(spec, "c_ok", "    ", "_0", offs="c.to(tl.int64) * S"), "    shift = x_0",
           "    acc1 = tl.zeros([BLOCK_C, BLOCK_S], tl.float32)",
           "    acc2 = tl.zeros([BLOCK_C, BLOCK_S], tl.float32)",
           "    for dn in range(0, NCHUNK):", "        n = sp * NCHUNK + dn",
           "        for s0 in range(0, S, BLOCK_S):", "            s = s0 + sv",
           "            mask = tl.where(n < N, c_ok & (s < S), False)",
           "            offs = (n.to(tl.int64) * C + c) * S + s", *load_x(spec, "mask", "            "),
           "            d = tl.where(mask, x - shift, 0.0)", "            acc1 += d",
           "            acc2 += d * d",
           "    cm = tl.arange(0, BLOCK_C) + tl.program_id(0) * BLOCK_C",
           "    tl.store(ws_ptr + sp * C + cm, tl.sum(acc1, axis=1), mask=cm < C)",
           "    tl.store(ws2_ptr + sp * C + cm, tl.sum(acc2, axis=1), mask=cm < C)",
           "    tl.store(sh_ptr + cm, tl.sum(shift, axis=1), mask=tl.where(sp == 0, cm < C, False))"]
    fin = ["@triton.jit", f"def {p}_finish(",
           "    ws_ptr, ws2_ptr, sh_ptr, rm_ptr, rv_ptr, nbt_ptr, mean_ptr, rstd_ptr, C, SPLIT, n_f, eps,",
           "    mom, TRAIN: tl.constexpr, UPDATE: tl.constexpr, CUMULATIVE: tl.constexpr,",
           "    BLOCK_C: tl.constexpr,", "):",
           "    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)", "    ok = c < C",
           "    if TRAIN:", "        s1 = tl.zeros([BLOCK_C], tl.float32)",
           "        s2 = tl.zeros([BLOCK_C], tl.float32)",
           "        for k in range(0, SPLIT):  # fixed order: deterministic",
           "            s1 += tl.load(ws_ptr + k * C + c, mask=ok, other=0.0)",
           "            s2 += tl.load(ws2_ptr + k * C + c, mask=ok, other=0.0)",
           "        mean = tl.load(sh_ptr + c, mask=ok, other=0.0) + s1 / n_f",
           "        m2 = tl.maximum(s2 - s1 * s1 / n_f, 0.0)", "        var = m2 / n_f",
           "        if UPDATE:",
           "            if CUMULATIVE:  # momentum=None: the module's cumulative moving average",
           "                mom = 1.0 / tl.load(nbt_ptr).to(tl.float32)",
           "            rm = tl.load(rm_ptr + c, mask=ok, other=0.0)",
           "            rv = tl.load(rv_ptr + c, mask=ok, other=0.0)",
           "            new_rm = (1.0 - mom) * rm.to(tl.float32) + mom * mean",
           "            new_rv = (1.0 - mom) * rv.to(tl.float32) + mom * (m2 / (n_f - 1.0))",
           "            tl.store(rm_ptr + c, new_rm.to(rm.dtype), mask=ok)",
           "            tl.store(rv_ptr + c, new_rv.to(rv.dtype), mask=ok)",
           "    else:", "        mean = tl.load(rm_ptr + c, mask=ok, other=0.0).to(tl.float32)",
           "        var = tl.load(rv_ptr + c, mask=ok, other=1.0).to(tl.float32)",
           "    tl.store(mean_ptr + c, mean, mask=ok)",
           "    tl.store(rstd_ptr + c, 1.0 / tl.sqrt(var + eps), mask=ok)"]
    ap = head(spec, f"{p}_apply", f"mean_ptr, rstd_ptr, w_ptr, b_ptr, out_ptr, {post}",
               "NUMEL, C, S, BLOCK: tl.constexpr,")
    ap += ["    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
           "    mask = offs < NUMEL", "    ch = (offs // S) % C", *load_x(spec, "mask", "    "),
           "    xc = x - tl.load(mean_ptr + ch, mask=mask, other=0.0)",
           "    rstd = tl.load(rstd_ptr + ch, mask=mask, other=0.0)"]
    ap += normalise(spec, "ch", "ch", "mask", "    ")
    return "\n".join(st + [""] + fin + [""] + ap) + "\n"
