"""The generic ``[O, R, I]`` reduction renderer shared by ``reduce_basic`` and ``reduce_loss``.

A job reduces ``value`` (an fp32 expression of the anchor's element-wise operands, after the
prologue) over a contiguous run of dims, or over all of them, with one of five accumulators:

* ``sum``  - add (sum, mean, norms, pointwise losses); ``max`` - maximum (amax, max, norm inf;
  min-like ops negate value and result); ``prod`` - multiply; ``arg`` - (value, first index);
* ``var``  - shifted sums: each program subtracts the first value of its chunk before summing
  ``d`` and ``d*d`` (no catastrophic cancellation); chunks merge with Chan's parallel formula.

Two layouts, fixed at render time from the reduced dims: *row* when the reduced run ends at the
last dim (``I == 1``; tile ``[BLOCK_M rows, BLOCK_R]``, contiguous along R) and *col* otherwise
(tile ``[BLOCK_R, BLOCK_I]``, contiguous along I, so loads stay coalesced for ``dim != -1``).
A reduction over all dims uses the row layout on ``[prod(shape[:-1]), shape[-1], 1]`` and always
finishes in the second kernel.

Parallelism: when ``O*I`` gives too few programs (a few long rows, or a full reduction), R is
split into ``SPLIT`` chunks; stage 1 writes fp32 partials ``[M, SPLIT]`` and a tiny stage 2 combines
them in a fixed order: deterministic, no atomics. ``split=0`` picks SPLIT at run time from the
actual sizes (``TARGET_PROGRAMS``). Each element is read exactly once; the output written once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agents.expert.kernels.launch_lines import (
    as3_helper,
    lane_setup,
    launcher_dims,
    launcher_shape,
    num_warps_for,
    store_cast,
)
from agents.expert.kernels.reduce_common import (
    TARGET_PROGRAMS,
    Fusion,
    Region,
    emit_region,
    launcher_params,
    next_pow2,
    prod,
    region_args,
    region_params,
    region_views,
    scalar_args,
    scalar_params,
)

KINDS = ("sum", "max", "prod", "arg", "var")
TEMPLATES: list[Any] = []  # the renderer behind reduce_basic / reduce_loss; no template of its own


@dataclass
class ReduceJob:
    fusion: Fusion
    operands: list[Any]  # anchor operands read element-wise (their prologue is evaluated too)
    value: str  # fp32 expression to accumulate, e.g. "v_x", "tl.abs(v_a - v_b)"
    kind: str  # one of KINDS
    final: str  # fp32 result from ``acc`` (sum/max/prod), ``var`` (var) and ``n`` (count)
    dims: list[int] | None  # contiguous run of reduced dims; None = all
    keepdim: bool
    rank: int
    out_dtype: str
    correction: float = 0.0  # var/std
    count: str | None = None  # launcher expression for ``n`` (default: reduced element count)

    @property
    def layout(self) -> str:
        return "row" if self.dims is None or self.dims[-1] == self.rank - 1 else "col"


def default_config(job: ReduceJob, shape: list[int]) -> dict[str, Any]:
    o, r, i = split3(shape, job.dims)
    if job.layout == "row":
        block_r = min(next_pow2(r), 2048)
        block_m = max(1, min(next_pow2(o * i), 4096 // block_r))
        return {"block_r": block_r, "block_m": block_m, "split": 0,
                "num_warps": num_warps_for(block_r * block_m)}
    block_i = min(next_pow2(i), 128)
    block_r = max(1, min(next_pow2(r), 4096 // block_i))
    return {"block_r": block_r, "block_i": block_i, "split": 0,
            "num_warps": num_warps_for(block_r * block_i)}


def tuning_space(job: ReduceJob) -> dict[str, list[Any]]:
    space: dict[str, list[Any]] = {"block_r": [256, 1024, 2048, 4096], "split": [0, 1, 8, 32],
                                   "num_warps": [4, 8, 16]}
    if job.layout == "row":
        space["block_m"] = [1, 2, 4, 8]
    else:
        space.update(block_r=[8, 16, 32, 64], block_i=[32, 64, 128, 256])
    return space


def split3(shape: list[int], dims: list[int] | None) -> tuple[int, int, int]:
    if dims is None:
        return prod(shape[:-1]), (shape[-1] if shape else 1), 1
    return prod(shape[: dims[0]]), prod(shape[dims[0] : dims[-1] + 1]), prod(shape[dims[-1] + 1 :])


def _helpers(p: str) -> str:
    return f'''
@triton.jit
def {p}_max(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def {p}_mul(a, b):
    return a * b


@triton.jit
def {p}_arg(v1, i1, v2, i2):
    # larger value wins; on ties the smaller (earlier) index, as torch.argmax documents
    take1 = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(take1, v1, v2), tl.where(take1, i1, i2)
'''


def _final(job: ReduceJob, p: str, ind: str) -> list[str]:
    """From ``res`` (/``resi``/``var``) to the stored output, epilogue included."""
    f = job.fusion
    lines = [f"{ind}n = n_f"]
    if job.kind == "arg":
        lines.append(f"{ind}v_{f.anchor.name} = resi")
    elif job.kind == "var":
        lines.append(f"{ind}var = m2 / tl.maximum(n - {float(job.correction)!r}, 0.0)")
        lines.append(f"{ind}v_{f.anchor.name} = {job.final}")
    else:
        lines.append(f"{ind}acc = res")
        lines.append(f"{ind}v_{f.anchor.name} = {job.final}")
    lines += emit_region(f, f.post_region(), offsets="m", mask="m_ok", indent=ind)
    value = store_cast(f"v_{f.group.output}", job.out_dtype)
    lines.append(f"{ind}tl.store(out_ptr + m, {value}, mask=m_ok)")
    return lines


def _stage1(job: ReduceJob, p: str) -> str:
    f = job.fusion
    pre = f.pre_region(job.operands)
    row = job.layout == "row"
    glob = job.dims is None
    tile = "[BLOCK_M, BLOCK_R]" if row else "[BLOCK_R, BLOCK_I]"
    ax = 1 if row else 0
    offs = {"o": "o", "r": "r"} if row else {"o": "o", "r": "r", "i": "i"}
    b = ["@triton.jit", f"def {p}_stage1(",
         f"    {region_params(pre, '3d')}{scalar_params(f)}ws_ptr, ws2_ptr, out_ptr, "
         f"{region_params(f.post_region(), 'flat')}",
         "    M, R, I, NIB, CHUNK, SPLIT, n_f,",
         "    BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, "
         "DIRECT: tl.constexpr,", "):", "    pid_s = tl.program_id(1)", *lane_setup(row)]
    b.append("    r_lo = pid_s * CHUNK")
    k = job.kind
    if k == "var":
        # shift = the chunk's first value (per output lane): sums of (v - shift) stay small
        first = dict(offs, r="r_lo.to(tl.int64)")
        b += emit_region(f, pre, offsets=first, mask="tl.where(r_lo < R, lane_ok, False)", indent="    ",
                         suffix="_0")
        b.append(f"    shift = tl.where(lane_ok, {_suffixed(job.value, pre)}, 0.0)")
        b += [f"    acc1 = tl.zeros({tile}, tl.float32)", f"    acc2 = tl.zeros({tile}, tl.float32)"]
    elif k == "arg":
        gidx = "o * R + (r_lo + kk)" if glob else "(r_lo + kk)"
        b += [f"    accv = tl.full({tile}, float('-inf'), tl.float32)",
              f"    acci = tl.zeros({tile}, tl.int64) + ({gidx}).to(tl.int64)"]
    else:
        init = {"sum": "0.0", "max": "float('-inf')", "prod": "1.0"}[k]
        b.append(f"    acc = tl.full({tile}, {init}, tl.float32)")
    b += ["    for k0 in range(0, CHUNK, BLOCK_R):",
          "        r = r_lo + k0 + kk",
          "        mask = lane_ok & (r < R)",
          "        r = r.to(tl.int64)"]
    b += emit_region(f, pre, offsets=offs, mask="mask", indent="        ")
    b.append(f"        v = {job.value}")
    if k == "sum":
        b.append("        acc += tl.where(mask, v, 0.0)")
    elif k == "max":
        b.append(f"        acc = {p}_max(acc, tl.where(mask, v, float('-inf')))")
    elif k == "prod":
        b.append("        acc *= tl.where(mask, v, 1.0)")
    elif k == "arg":
        gidx = "o * R + r" if glob else "r"
        b += ["        v = tl.where(mask, v, float('-inf'))",
              "        upd = v > accv",
              "        accv = tl.where(upd, v, accv)",
              f"        acci = tl.where(upd, {gidx}, acci)"]
    else:
        b += ["        d = tl.where(mask, v - shift, 0.0)", "        acc1 += d", "        acc2 += d * d"]
    if k == "sum":
        b.append(f"    res = tl.sum(acc, axis={ax})")
    elif k in ("max", "prod"):
        b.append(f"    res = tl.reduce(acc, {ax}, {p}_{'max' if k == 'max' else 'mul'})")
    elif k == "arg":
        b.append(f"    res, resi = tl.reduce((accv, acci), {ax}, {p}_arg)")
    else:
        b += [f"    s1 = tl.sum(acc1, axis={ax})", f"    s2 = tl.sum(acc2, axis={ax})",
              f"    shift1 = tl.sum(shift, axis={ax})",
              "    cnt = tl.maximum(tl.minimum(CHUNK, R - r_lo), 1).to(tl.float32)",
              "    res = shift1 + s1 / cnt", "    m2 = s2 - s1 * s1 / cnt"]
    b.append("    if DIRECT:")
    b += _final(job, p, "        ")
    b += ["    else:", "        w = m.to(tl.int64) * SPLIT + pid_s",
          "        tl.store(ws_ptr + w, res, mask=m_ok)"]
    if k in ("arg", "var"):
        b.append(f"        tl.store(ws2_ptr + w, {'resi' if k == 'arg' else 'm2'}, mask=m_ok)")
    return "\n".join(b) + "\n"


def _suffixed(value: str, pre: Region) -> str:
    """``value`` with every ``v_<name>`` of the prologue region renamed ``v_<name>_0``."""
    names = set(pre.tensors) | {n.name for n in pre.nodes}
    return re.sub(r"\bv_(\w+)\b", lambda mt: f"v_{mt.group(1)}_0" if mt.group(1) in names
                  else mt.group(0), value)


def _stage2(job: ReduceJob, p: str) -> str:
    f = job.fusion
    k = job.kind
    b = ["@triton.jit", f"def {p}_stage2(",
         f"    ws_ptr, ws2_ptr, out_ptr, {region_params(f.post_region(), 'flat')}"
         f"{scalar_params(f)}MO, K, SPLIT, R, CHUNK, n_f,",
         "    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,", "):",
         "    m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)",
         "    m_ok = m < MO",
         "    base = m.to(tl.int64)[:, None] * K",
         "    kk = tl.arange(0, BLOCK_K)[None, :]"]
    loop = ["    for k0 in range(0, K, BLOCK_K):", "        kx = k0 + kk",
            "        mask = m_ok[:, None] & (kx < K)"]
    if k in ("sum", "max", "prod"):
        init = {"sum": "0.0", "max": "float('-inf')", "prod": "1.0"}[k]
        b.append(f"    acc = tl.full([BLOCK_M, BLOCK_K], {init}, tl.float32)")
        b += loop + [f"        q = tl.load(ws_ptr + base + kx, mask=mask, other={init})"]
        b.append({"sum": "        acc += q", "max": f"        acc = {p}_max(acc, q)",
                  "prod": "        acc *= q"}[k])
        b.append({"sum": "    res = tl.sum(acc, axis=1)", "max": f"    res = tl.reduce(acc, 1, {p}_max)",
                  "prod": f"    res = tl.reduce(acc, 1, {p}_mul)"}[k])
    elif k == "arg":
        b += ["    accv = tl.full([BLOCK_M, BLOCK_K], float('-inf'), tl.float32)",
              "    acci = tl.full([BLOCK_M, BLOCK_K], 9223372036854775807, tl.int64)"]
        b += loop + ["        q = tl.load(ws_ptr + base + kx, mask=mask, other=float('-inf'))",
                     "        qi = tl.load(ws2_ptr + base + kx, mask=mask, other=9223372036854775807)",
                     "        accv, acci = " + f"{p}_arg(accv, acci, q, qi)"]
        b.append(f"    res, resi = tl.reduce((accv, acci), 1, {p}_arg)")
    else:
        # Chan: mean = sum(n_k mean_k) / n ; M2 = sum(M2_k) + sum(n_k (mean_k - mean)^2)
        cnt = "tl.maximum(tl.minimum(CHUNK, R - (kx % SPLIT) * CHUNK), 0).to(tl.float32)"
        b += ["    accm = tl.zeros([BLOCK_M, BLOCK_K], tl.float32)"]
        b += loop + [f"        c = tl.where(mask, {cnt}, 0.0)",
                     "        accm += c * tl.load(ws_ptr + base + kx, mask=mask, other=0.0)"]
        b += ["    mean = tl.sum(accm, axis=1) / n_f",
              "    acc2 = tl.zeros([BLOCK_M, BLOCK_K], tl.float32)"]
        b += loop + [f"        c = tl.where(mask, {cnt}, 0.0)",
                     "        dm = tl.load(ws_ptr + base + kx, mask=mask, other=0.0) - mean[:, None]",
                     "        q2 = tl.load(ws2_ptr + base + kx, mask=mask, other=0.0)",
                     "        acc2 += tl.where(mask, q2 + c * dm * dm, 0.0)"]
        b += ["    m2 = tl.sum(acc2, axis=1)", "    res = mean"]
    b += _final(job, p, "    ")
    return "\n".join(b) + "\n"


def render(job: ReduceJob, config: dict[str, Any], launcher: str) -> str:
    """Module source: helpers, the two kernels and the launcher ``launcher``."""
    f = job.fusion
    p = f"_{launcher}"
    pre = f.pre_region(job.operands)
    post = f.post_region()
    row = job.layout == "row"
    glob = job.dims is None
    params = launcher_params(f.group)
    block_r = int(config["block_r"])
    block_m = int(config.get("block_m", 1)) if row else 1
    block_i = 1 if row else int(config["block_i"])
    nw = int(config.get("num_warps", 4))
    L = [f"def {launcher}({params}):", f"    shape = {launcher_shape(pre.tensors)}",
         *launcher_dims(job.dims, job.rank, job.keepdim, launcher),
         f"    n_f = float({'math.prod(shape)' if glob else 'R'})"]
    if job.count:
        L.append(f"    n_f = float({job.count})")
    dev = pre.tensors[0]
    L += [f"    out = torch.empty(out_shape, dtype=torch.{job.out_dtype}, device=g_{dev}.device)",
          *region_views(pre, "3d", launcher), *region_views(post, "flat", launcher),
          "    M = O * I",
          f"    BLOCK_R, BLOCK_M, BLOCK_I = {block_r}, {block_m}, {block_i}",
          "    NIB = _egg_cdiv(I, BLOCK_I)",
          f"    progs = {'_egg_cdiv(M, BLOCK_M)' if row else 'O * NIB'}",
          "    nblk = max(_egg_cdiv(R, BLOCK_R), 1)",
          f"    split = {int(config.get('split', 0))}",
          "    if split <= 0:  # auto: split R only when the rows alone cannot fill the GPU",
          f"        split = max(1, min({TARGET_PROGRAMS} // max(progs, 1), nblk // 2))",
          "    split = max(1, min(split, nblk))",
          "    chunk = _egg_cdiv(nblk, split) * BLOCK_R",
          "    split = max(_egg_cdiv(R, chunk), 1)",
          f"    direct = split == 1{' and M == 1' if glob else ''}",
          "    ws = ws2 = out",
          "    if not direct:",
          "        ws = torch.empty(M * split, dtype=torch.float32, device=out.device)"]
    if job.kind in ("arg", "var"):
        wdt = "int64" if job.kind == "arg" else "float32"
        L.append(f"        ws2 = torch.empty(M * split, dtype=torch.{wdt}, device=out.device)")
    L += [f"    {p}_stage1[(progs, split)](",
          f"        {region_args(pre, '3d')}{scalar_args(f)}ws, ws2, out, {region_args(post, 'flat')}",
          "        M, R, I, NIB, chunk, split, n_f,",
          f"        BLOCK_M=BLOCK_M, BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, DIRECT=direct, num_warps={nw})",
          "    if not direct:",
          f"        MO, K = {'1, M * split' if glob else 'M, split'}",
          "        BK = min(_egg_next_pow2(K), 1024)",
          "        BM = max(1, min(_egg_next_pow2(MO), 1024 // BK))",
          f"        {p}_stage2[(_egg_cdiv(MO, BM),)](",
          f"            ws, ws2, out, {region_args(post, 'flat')}{scalar_args(f)}"
          "MO, K, split, R, chunk, n_f, BLOCK_M=BM, BLOCK_K=BK, num_warps=4)",
          "    return out"]
    return "\n".join([_helpers(p), as3_helper(launcher), _stage1(job, p), _stage2(job, p),
                      "\n".join(L), ""])

