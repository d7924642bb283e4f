"""layer_norm, rms_norm, group_norm, instance_norm, batch_norm (training and eval).

Operands follow torch.nn.functional's argument order; an absent optional tensor is ``None`` (or
omitted when nothing follows it). See REDUCE_CONTRACT.md.

* ``layer_norm``   ``[input, weight?, bias?]``; kwargs ``normalized_shape`` (the last k dims),
  ``eps`` (1e-5). Module flags ``elementwise_affine``/``bias`` must agree with the operands.
* ``rms_norm``     ``[input, weight?]``; ``normalized_shape``, ``eps`` (None = finfo(dtype).eps).
* ``group_norm``   ``[input, weight?, bias?]``; ``num_groups``, ``eps``.
* ``instance_norm`` ``[input, running_mean?, running_var?, weight?, bias?]``; ``eps``. Running
  stats are declined (track_running_stats=True, which KernelBench does not use, would update them).
* ``batch_norm``   ``[input, running_mean?, running_var?, weight?, bias?, num_batches_tracked?]``;
  ``training`` (default False, nn.BatchNorm modules pass their ``training``), ``momentum`` (0.1),
  ``eps``. Training: batch statistics over (N, spatial) and, when the running buffers are
  operands, they are updated in place exactly like torch (``rm = (1-m) rm + m mean``, ``rv =
  (1-m) rv + m var n/(n-1)``), so the next call (and eval mode) sees the same state. The optional
  6th operand is the nn.BatchNorm module's ``num_batches_tracked`` buffer (not an F.batch_norm
  argument): when given, training increments it as the module does, and ``momentum=None``
  (cumulative average, factor ``1/num_batches_tracked``) becomes supported; without it
  ``momentum=None`` is declined. Eval: normalises with the running buffers (one read, one write).

Row norms (LN/RMS/GN/IN normalise contiguous rows of length L): ``structure="one_pass"`` keeps the
row in registers (``next_pow2(L) <= max_block``; one read + one write), ``"split"`` computes
shifted partial moments per (row, chunk) then a second kernel merges them (Chan) and normalises
its chunk - many programs even for a handful of huge rows (KernelBench LayerNorm: 16 rows of 4M).
A one_pass plan falls back to split at run time for rows that do not fit. BatchNorm: per-channel
partial moments over (N-chunk, spatial tiles), an ordered merge, then a flat normalise pass.
Statistics in fp32, biased variance (as torch) for the normalisation.
"""

from __future__ import annotations

from typing import Any

import structlog

from agents.expert.kernels.base import GroupSpec, KernelPlan
from agents.expert.kernels.launch_lines import (
    launcher_shape,
    num_warps_for,
)
from agents.expert.kernels.reduce_common import (
    FLOAT_DTYPES,
    Fusion,
    as_int_list,
    input_dtype,
    launcher_params,
    next_pow2,
    parse_fusion,
    prod,
    region_args,
    region_params,
    region_views,
    scalar_args,
    value_shape,
)
from agents.expert.kernels.reduce_norm_parts import bn_kernels, head, load_x, normalise

log = structlog.get_logger(__name__)

ANCHORS = frozenset({"layer_norm", "rms_norm", "group_norm", "instance_norm", "batch_norm"})
PRINCIPLES = ["algorithm-structure/norm-statistics-in-fp32", "tiling/one-pass-row-limit",
              "parallel-mapping/split-rows-when-few", "memory/avoid-atomics"]
_SLOTS = {"layer_norm": ("weight", "bias"), "rms_norm": ("weight",), "group_norm": ("weight", "bias"),
          "instance_norm": ("running_mean", "running_var", "weight", "bias"),
          "batch_norm": ("running_mean", "running_var", "weight", "bias", "num_batches_tracked")}
_BN_TILE = 2048  # elements of a batch-norm statistics tile ([block_c, block_s] accumulators)
_EPS_DEFAULT = {"float32": 1.1920928955078125e-07, "float16": 0.0009765625, "bfloat16": 0.0078125}


class _Spec:
    def __init__(self, fusion: Fusion, full: list[int], slots: dict[str, str | None], eps: float,
                 l_dims: int = 0, groups: int = 1, training: bool = False, momentum: float = 0.1):
        self.fusion, self.full, self.slots, self.eps = fusion, full, slots, eps
        self.op = fusion.anchor.op
        self.x = fusion.anchor.operands[0]
        self.l_dims, self.groups, self.training, self.momentum = l_dims, groups, training, momentum


def _spec(group: GroupSpec) -> _Spec | None:
    fusion = parse_fusion(group, ANCHORS)
    if fusion is None:
        return None
    a = fusion.anchor
    op, kw = a.op, dict(a.kwargs)
    x = a.operands[0] if a.operands else None
    full = value_shape(group, x)
    if not full or input_dtype(group, x) not in FLOAT_DTYPES or group.out.dtype not in FLOAT_DTYPES:
        return None
    names = _SLOTS[op]
    rest = list(a.operands[1:])
    if len(rest) > len(names):
        return None
    slots: dict[str, str | None] = dict.fromkeys(names)
    inputs = {v.name: v for v in group.inputs if v.is_tensor}
    for name, operand in zip(names, rest):
        if operand is None:
            continue
        if not isinstance(operand, str) or operand not in inputs:
            return None  # params must be group inputs (module parameters / buffers)
        if inputs[operand].dtype not in (FLOAT_DTYPES if name != "num_batches_tracked" else {"int64"}):
            return None
        slots[name] = operand
    if (kw.get("elementwise_affine") or kw.get("affine")) and slots.get("weight") is None:
        return None  # the module has parameters the codegen did not pass
    if kw.get("bias") is True and "bias" in slots and slots["bias"] is None:
        return None
    eps = kw.get("eps", 1e-5)
    if op == "rms_norm" and eps is None:
        eps = _EPS_DEFAULT[input_dtype(group, x)]
    if not isinstance(eps, (int, float)) or isinstance(eps, bool):
        return None
    spec = _Spec(fusion, full, slots, float(eps))
    channels = full[1] if len(full) >= 2 else None
    pshape = {n: list(inputs[s].shape) for n, s in slots.items() if s is not None}
    if pshape.pop("num_batches_tracked", []) not in ([], [1]):
        return None
    if op in ("layer_norm", "rms_norm"):
        ns = as_int_list(kw.get("normalized_shape"))
        if not ns or full[-len(ns) :] != ns or any(s != ns for s in pshape.values()):
            return None
        spec.l_dims = len(ns)
    else:
        if channels is None or any(s != [channels] for s in pshape.values()):
            return None
        if op == "group_norm":
            g = kw.get("num_groups")
            if not isinstance(g, int) or g <= 0 or channels % g:
                return None
            spec.groups = g
        if op == "instance_norm":
            if slots["running_mean"] or slots["running_var"] or kw.get("use_input_stats") is False:
                return None
        if op == "batch_norm":
            spec.training = bool(kw.get("training", False))
            momentum = kw.get("momentum", 0.1)
            has_rs = slots["running_mean"] is not None and slots["running_var"] is not None
            if (slots["running_mean"] is None) != (slots["running_var"] is None):
                return None
            if not spec.training and not has_rs:
                return None  # eval needs the running statistics
            cumulative = momentum is None and slots["num_batches_tracked"] is not None
            if spec.training and has_rs and not (isinstance(momentum, (int, float)) or cumulative):
                return None  # momentum=None needs num_batches_tracked for the 1/n factor
            spec.momentum = float(momentum) if isinstance(momentum, (int, float)) else -1.0
    if list(group.out.shape) != full or not fusion.shapes_ok(full, full):
        return None
    pre = {n.name for n in fusion.pre}
    for name in group.extra_outputs:  # prologue values that leave the group too (x + residual)
        if op == "batch_norm" or name not in pre or list(group.node(name).shape) != full:
            return None
    return spec


def _rows(spec: _Spec) -> tuple[int, int]:
    """(rows, L) of a row norm on the traced shape."""
    f = spec.full
    if spec.op in ("layer_norm", "rms_norm"):
        return prod(f[: -spec.l_dims]), prod(f[-spec.l_dims :])
    if spec.op == "group_norm":
        return f[0] * spec.groups, prod(f[1:]) // spec.groups
    return f[0] * f[1], prod(f[2:])


def _default(spec: _Spec) -> dict[str, Any]:
    if spec.op == "batch_norm":
        s = prod(spec.full[2:])
        bs = min(next_pow2(s), 2048)
        bc = max(1, min(next_pow2(spec.full[1]), _BN_TILE // bs))
        return {"block_s": bs, "block_c": bc, "split": 0, "block": 2048, "num_warps": 8}
    rows, length = _rows(spec)
    cap = 16384
    bl = next_pow2(length)
    one = bl <= cap
    bm = max(1, min(next_pow2(rows), 4096 // bl)) if one else 1
    return {"structure": "one_pass" if one else "split", "max_block": cap, "block_m": bm,
            "block_l": 4096, "split": 0,
            "num_warps": num_warps_for(bl * bm if one else 4096)}


def _row_kernels(spec: _Spec, p: str) -> str:
    rms = spec.op == "rms_norm"
    post = region_params(spec.fusion.post_region(), "flat")
    consts = "ROWS, L, C, G, CPG, S, eps, "
    xo = "".join(f"xo{i}_ptr, " for i in range(len(spec.fusion.group.extra_outputs)))
    one = head(spec, f"{p}_one_pass", f"w_ptr, b_ptr, out_ptr, {xo}{post}",
                consts + "BLOCK_M: tl.constexpr, BLOCK_L: tl.constexpr,")
    one += ["    row = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)",
            "    row2 = row[:, None]", "    col = tl.arange(0, BLOCK_L)[None, :]",
            "    mask = (row2 < ROWS) & (col < L)", "    offs = row2.to(tl.int64) * L + col",
            *load_x(spec, "mask", "    ")]
    if rms:
        one.append("    xc = x")
    else:
        one += ["    mean = tl.sum(x, axis=1, keep_dims=True) / L",
                "    xc = tl.where(mask, x - mean, 0.0)"]
    # rsqrt, as torch's layer_norm kernel and the RMSNorm idiom (torch.rsqrt) compute it: 1/sqrt
    # rounds differently, and with a bf16 downcast before the gain multiply one flipped rounding
    # becomes a 2-ulp difference that the bf16 tolerance rejects (seen on rms_norm, H200)
    one.append("    rstd = tl.rsqrt(tl.sum(xc * xc, axis=1, keep_dims=True) / L + eps)")
    one += normalise(spec, "row2", "col", "mask", "    ")
    # split: stats per (row, chunk) with the chunk's first value as shift, then merge + apply
    st = head(spec, f"{p}_stats", "ws_ptr, ws2_ptr,", "L, CHUNK, SPLIT, BLOCK_L: tl.constexpr,")
    st += ["    row = tl.program_id(0).to(tl.int64)", "    sp = tl.program_id(1)",
           "    c_lo = sp * CHUNK", "    kk = tl.arange(0, BLOCK_L)"]
    if rms:
        st.append("    shift = 0.0")
    else:
        st += load_x(spec, "c_lo < L", "    ", "_0", offs="row * L + c_lo")
        st.append("    shift = x_0")
    st += ["    acc1 = tl.zeros([BLOCK_L], tl.float32)", "    acc2 = tl.zeros([BLOCK_L], tl.float32)",
           "    for k0 in range(0, CHUNK, BLOCK_L):", "        col = c_lo + k0 + kk",
           "        mask = col < L", "        offs = row * L + col", *load_x(spec, "mask", "        "),
           "        d = tl.where(mask, x - shift, 0.0)", "        acc1 += d", "        acc2 += d * d",
           "    s1 = tl.sum(acc1, axis=0)", "    s2 = tl.sum(acc2, axis=0)",
           "    cnt = tl.maximum(tl.minimum(CHUNK, L - c_lo), 1).to(tl.float32)",
           "    tl.store(ws_ptr + row * SPLIT + sp, shift + s1 / cnt)",
           "    tl.store(ws2_ptr + row * SPLIT + sp, s2 - s1 * s1 / cnt)"]
    ap = head(spec, f"{p}_apply", f"ws_ptr, ws2_ptr, w_ptr, b_ptr, out_ptr, {xo}{post}",
               consts + "CHUNK, SPLIT, BLOCK_L: tl.constexpr, BLOCK_S: tl.constexpr,")
    ap += ["    row = tl.program_id(0).to(tl.int64)", "    ks = tl.arange(0, BLOCK_S)",
           "    kmask = ks < SPLIT",
           "    cnt = tl.where(kmask, tl.maximum(tl.minimum(CHUNK, L - ks * CHUNK), 0), 0).to(tl.float32)",
           "    mk = tl.load(ws_ptr + row * SPLIT + ks, mask=kmask, other=0.0)",
           "    m2k = tl.load(ws2_ptr + row * SPLIT + ks, mask=kmask, other=0.0)",
           "    mean = tl.sum(cnt * mk, axis=0) / L",
           "    m2 = tl.sum(tl.where(kmask, m2k + cnt * (mk - mean) * (mk - mean), 0.0), axis=0)"]
    if rms:  # no shift: mean_k * cnt is the chunk's sum of squares... use raw moments
        ap += ["    rstd = tl.rsqrt((m2 + mean * mean * L) / L + eps)", "    mean = 0.0"]
    else:
        ap.append("    rstd = tl.rsqrt(m2 / L + eps)")
    ap += ["    col = tl.program_id(1) * BLOCK_L + tl.arange(0, BLOCK_L)", "    mask = col < L",
           "    offs = row * L + col", *load_x(spec, "mask", "    "), "    xc = x - mean"]
    ap += normalise(spec, "row", "col", "mask", "    ")
    return "\n".join(one + [""] + st + [""] + ap) + "\n"


def _launcher(spec: _Spec, cfg: dict[str, Any], launcher: str, p: str) -> str:
    f = spec.fusion
    pre, post = f.pre_region([spec.x]), f.post_region()
    pargs = f"{region_args(pre, 'flat')}{scalar_args(f)}"
    sl = spec.slots
    w, b = (f"g_{sl[k]}" if sl.get(k) else "out" for k in ("weight", "bias"))
    params = launcher_params(f.group)
    shape = launcher_shape(pre.tensors)
    L = [f"def {launcher}({params}):", f"    shape = out_shape = {shape}",
         f"    out = torch.empty(shape, dtype=torch.{f.group.out.dtype}, device=g_{pre.tensors[0]}.device)",
         *(f"    xo{i} = torch.empty(shape, dtype=torch.{f.group.node(n).dtype}, device=out.device)"
           for i, n in enumerate(f.group.extra_outputs)),
         *region_views(pre, "flat", launcher), *region_views(post, "flat", launcher),
         f"    nw = {int(cfg['num_warps'])}"]
    if spec.op == "batch_norm":
        train, upd = spec.training, spec.training and sl.get("running_mean") is not None
        rm, rv = (f"g_{sl[k]}" if sl.get(k) else "out" for k in ("running_mean", "running_var"))
        L += ["    N, C, S = shape[0], shape[1], math.prod(shape[2:])",
              "    mean = torch.empty(C, dtype=torch.float32, device=out.device)",
              "    rstd = torch.empty_like(mean)", "    ws = ws2 = sh = mean", "    split = 1"]
        if train:
            L += [f"    BS, BC = {int(cfg['block_s'])}, {int(cfg['block_c'])}",
                  f"    split = {int(cfg['split'])}",
                  "    if split <= 0:  # auto: split N until ~TARGET programs",
                  "        split = max(1, min(N, 1024 // _egg_cdiv(C, BC)))",
                  "    nchunk = _egg_cdiv(N, split)", "    split = _egg_cdiv(N, nchunk)",
                  "    ws = torch.empty(split * C, dtype=torch.float32, device=out.device)",
                  "    ws2 = torch.empty_like(ws)", "    sh = torch.empty_like(mean)",
                  f"    {p}_stats[(_egg_cdiv(C, BC), split)]({pargs}ws, ws2, sh, N, C, S, nchunk, "
                  "BLOCK_C=BC, BLOCK_S=BS, num_warps=nw)"]
        nbt = sl.get("num_batches_tracked") if train else None
        if nbt:  # nn.BatchNorm.forward counts training batches before normalising
            L.append(f"    g_{nbt}.add_(1)")
        cum = spec.momentum < 0
        L += [f"    {p}_finish[(_egg_cdiv(C, 256),)](ws, ws2, sh, {rm}, {rv}, {'g_' + nbt if nbt else 'out'}, "
              f"mean, rstd, C, split, float(N * S), {spec.eps!r}, {max(spec.momentum, 0.0)!r}, TRAIN={train}, "
              f"UPDATE={upd}, CUMULATIVE={cum}, BLOCK_C=256)",
              f"    BLK = {int(cfg['block'])}",
              f"    {p}_apply[(_egg_cdiv(out.numel(), BLK),)]({pargs}mean, rstd, {w}, {b}, out, "
              f"{region_args(post, 'flat')}out.numel(), C, S, BLOCK=BLK, num_warps=nw)",
              "    return out"]
        return "\n".join(L) + "\n"
    if spec.op in ("layer_norm", "rms_norm"):
        L.append(f"    ROWS, L = math.prod(shape[:-{spec.l_dims}]), math.prod(shape[-{spec.l_dims}:])")
        L.append("    C, G, CPG, S = 1, 1, 1, 1")
    elif spec.op == "group_norm":
        L += [f"    G = {spec.groups}", "    C, S = shape[1], math.prod(shape[2:])",
              "    CPG = C // G", "    ROWS, L = shape[0] * G, CPG * S"]
    else:
        L += ["    C, S = shape[1], math.prod(shape[2:])", "    G, CPG = 1, 1",
              "    ROWS, L = shape[0] * C, S"]
    consts = f"ROWS, L, C, G, CPG, S, {spec.eps!r}"
    xo = "".join(f"xo{i}, " for i in range(len(f.group.extra_outputs)))
    ret = "out" + "".join(f", xo{i}" for i in range(len(f.group.extra_outputs)))  # GroupSpec.extra_outputs
    post_args = xo + region_args(post, "flat")
    L += ["    BL = _egg_next_pow2(L)",
          f"    if {cfg['structure'] == 'one_pass'} and BL <= {int(cfg['max_block'])}:",
          f"        BM = max(1, min({int(cfg['block_m'])}, {int(cfg['max_block'])} // BL))",
          f"        {p}_one_pass[(_egg_cdiv(ROWS, BM),)]({pargs}{w}, {b}, out, {post_args}{consts}, "
          "BLOCK_M=BM, BLOCK_L=BL, num_warps=nw)", f"        return {ret}",
          f"    BL = {int(cfg['block_l'])}", "    nblk = _egg_cdiv(L, BL)",
          f"    split = {int(cfg['split'])}",
          "    if split <= 0:  # auto: enough (row, chunk) programs to fill the GPU",
          "        split = max(1, min(nblk, 1024 // max(ROWS, 1), 1024))",
          "    chunk = _egg_cdiv(nblk, min(split, nblk)) * BL", "    split = _egg_cdiv(L, chunk)",
          "    ws = torch.empty(ROWS * split, dtype=torch.float32, device=out.device)",
          "    ws2 = torch.empty_like(ws)",
          f"    {p}_stats[(ROWS, split)]({pargs}ws, ws2, L, chunk, split, BLOCK_L=BL, num_warps=nw)",
          f"    {p}_apply[(ROWS, nblk)]({pargs}ws, ws2, {w}, {b}, out, {post_args}{consts}, chunk, "
          "split, BLOCK_L=BL, BLOCK_S=_egg_next_pow2(split), num_warps=nw)",
          f"    return {ret}"]
    return "\n".join(L) + "\n"


class NormTemplate:
    """Layer/RMS/Group/Instance/Batch norm with fp32 statistics."""

    name = "reduce_norm"
    # GroupSpec.extra_outputs may name prologue values of the input's shape (layer/rms/group/
    # instance norm): the kernel stores them from the same pass (r = x + residual; LN(r), r)
    writes_prologue_outputs = True

    def match(self, group: GroupSpec) -> bool:
        return _spec(group) is not None

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        spec = _spec(group)
        if spec is None:
            return {}
        if spec.op == "batch_norm":  # block_s past the spatial extent only masks lanes off
            span = next_pow2(prod(spec.full[2:]))
            return {"block_s": [b for b in (256, 1024, 2048) if b <= span], "split": [0, 4, 16],
                    "block": [1024, 2048, 4096], "num_warps": [4, 8]}
        return {"structure": ["one_pass", "split"], "block_m": [1, 2, 4, 8],
                "block_l": [1024, 2048, 4096, 8192], "split": [0, 1, 4, 16], "num_warps": [4, 8, 16]}

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        spec = _spec(group)
        return _default(spec) if spec else {}

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        spec = _spec(group)
        if spec is None:
            raise ValueError(f"{self.name} cannot compute this group")
        cfg = {**_default(spec), **config}
        if spec.op == "batch_norm":  # block_c follows a tuned block_s: the tile stays _BN_TILE elements
            cfg["block_c"] = max(1, min(int(cfg["block_c"]), _BN_TILE // max(1, int(cfg["block_s"]))))
        p = f"_{launcher}"
        body = bn_kernels(spec, p) if spec.op == "batch_norm" else _row_kernels(spec, p)
        source = body + "\n" + _launcher(spec, cfg, launcher, p)
        log.debug("reduce_norm.render", op=spec.op, config=cfg)
        if spec.op == "batch_norm":
            what = ("training: per-channel partial moments, ordered merge + running-stat update, "
                    "flat normalise" if spec.training else "eval: running stats, flat normalise")
        else:
            what = f"rows of L, {cfg['structure']} (one_pass: row in registers; split: chunk moments + apply)"
        return KernelPlan(launcher=launcher, source=source, structure=f"{spec.op}: {what}",
                          principle_ids=PRINCIPLES, config=cfg)


TEMPLATES: list[Any] = [NormTemplate()]
