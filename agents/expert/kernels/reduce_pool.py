"""max_pool1d/2d/3d and avg_pool1d/2d/3d (ceil_mode False, no indices).

Operand/kwarg convention (see REDUCE_CONTRACT.md): operands ``[input]`` of shape ``[N, C, *S]``
or unbatched ``[C, *S]`` (1, 2 or 3 spatial dims by the op's suffix). kwargs as in
torch.nn.functional and the nn.MaxPoolNd/AvgPoolNd attributes: ``kernel_size`` (int|list),
``stride`` (None/[] = kernel_size), ``padding`` (0), ``dilation`` (1, max only), ``ceil_mode``
(must be False), ``return_indices`` (must be False), ``count_include_pad`` (True, avg),
``divisor_override`` (None, avg).

Structure: one program per (n*c, output depth, [BLOCK_H, BLOCK_W] output tile); the window is
unrolled at compile time (``tl.static_range``) and every tap is a masked tile load, so overlapping
windows hit L1/L2 instead of HBM; out-of-bounds taps read -inf (max) / 0 (avg, with torch's
divisor: window size clipped to the padded input, or to the real input without
count_include_pad). fp32 accumulation, output in the input dtype, one write.
"""

from __future__ import annotations

from typing import Any

import structlog

from agents.expert.kernels.base import GroupSpec, KernelPlan
from agents.expert.kernels.launch_lines import (
    launcher_shape,
    num_warps_for,
    store_cast,
)
from agents.expert.kernels.reduce_common import (
    FLOAT_DTYPES,
    Fusion,
    as_int_list,
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

ANCHORS = {f"{kind}_pool{n}d": n for kind in ("max", "avg") for n in (1, 2, 3)}
PRINCIPLES = ["memory/coalesce-last-dim", "tiling/power-of-two-blocks-with-masks",
              "memory/masked-loads-neutral-other"]


class _Spec:
    def __init__(self, fusion: Fusion, full: list[int], nd: int, k: list[int], s: list[int],
                 pad: list[int], dil: list[int], include_pad: bool, divisor: int | None) -> None:
        self.fusion, self.full, self.nd = fusion, full, nd
        self.is_max = fusion.anchor.op.startswith("max")
        # always 3 spatial dims: missing leading ones are size 1 with a 1-tap window
        fill = 3 - nd
        self.k, self.s = [1] * fill + k, [1] * fill + s
        self.pad, self.dil = [0] * fill + pad, [1] * fill + dil
        self.include_pad, self.divisor = include_pad, divisor
        self.x = fusion.anchor.operands[0]


def _tuple(value: Any, n: int, default: list[int] | None = None) -> list[int] | None:
    if value is None or value == []:
        return default
    v = as_int_list(value)
    if v is None:
        return None
    return v * n if len(v) == 1 else (v if len(v) == n else None)


def _spec(group: GroupSpec) -> _Spec | None:
    fusion = parse_fusion(group, set(ANCHORS))
    if fusion is None:
        return None
    a = fusion.anchor
    nd = ANCHORS[a.op]
    x = a.operands[0] if a.operands else None
    full = value_shape(group, x)
    if not full or len(a.operands) != 1 or len(full) not in (nd + 1, nd + 2):
        return None
    if input_dtype(group, x) not in FLOAT_DTYPES or group.out.dtype != input_dtype(group, x):
        return None
    kw = dict(a.kwargs)
    if kw.get("ceil_mode", False) or kw.get("return_indices", False):
        return None
    k = _tuple(kw.get("kernel_size"), nd)
    s = _tuple(kw.get("stride"), nd, k)
    pad = _tuple(kw.get("padding", 0), nd)
    dil = _tuple(kw.get("dilation", 1), nd) if a.op.startswith("max") else [1] * nd
    if not k or not s or pad is None or dil is None or min(k + s + dil) < 1 or min(pad) < 0:
        return None
    if any(2 * p > (kk - 1) * d + 1 for p, kk, d in zip(pad, k, dil)):
        return None  # torch rejects padding above half the effective window
    div = kw.get("divisor_override")
    if div is not None and (not isinstance(div, int) or div <= 0 or a.op.startswith("max")):
        return None
    include = kw.get("count_include_pad", True)
    if not isinstance(include, bool):
        return None
    spatial = full[-nd:]
    outs = [(n + 2 * p - d * (kk - 1) - 1) // st + 1 for n, p, d, kk, st in zip(spatial, pad, dil, k, s)]
    if min(outs) < 1 or list(group.out.shape) != full[:-nd] + outs:
        return None
    if not fusion.shapes_ok(full, list(group.out.shape)):
        return None
    return _Spec(fusion, full, nd, k, s, pad, dil, include, div)


def _default(spec: _Spec) -> dict[str, Any]:
    out = list(spec.fusion.group.out.shape)
    ow = out[-1]
    oh = out[-2] if spec.nd >= 2 else 1
    bw = min(next_pow2(ow), 128)
    bh = max(1, min(next_pow2(oh), 1024 // bw))
    return {"block_h": bh, "block_w": bw, "num_warps": num_warps_for(bh * bw)}


def _kernel(spec: _Spec, p: str) -> str:
    f = spec.fusion
    pre, post = f.pre_region([spec.x]), f.post_region()
    (kd, kh, kw), (sd, sh, sw) = spec.k, spec.s
    (pd, ph, pw), (dd, dh, dw) = spec.pad, spec.dil
    neutral = "float('-inf')" if spec.is_max else "0.0"
    b = ["@triton.jit", f"def {p}_max(a, b):",
         "    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)", "", "@triton.jit",
         f"def {p}_pool(",
         f"    {region_params(pre, 'flat')}{scalar_params(f)}out_ptr, {region_params(post, 'flat')}",
         "    D, H, W, OD, OH, OW, NTH, NTW, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,", "):",
         "    pid = tl.program_id(0)", "    tw = pid % NTW", "    t = pid // NTW", "    th = t % NTH",
         "    t = t // NTH", "    od = t % OD", "    nc = (t // OD).to(tl.int64)",
         "    oh = th * BLOCK_H + tl.arange(0, BLOCK_H)[:, None]",
         "    ow = tw * BLOCK_W + tl.arange(0, BLOCK_W)[None, :]",
         "    omask = (oh < OH) & (ow < OW)", "    base = nc * D * H * W",
         f"    acc = tl.full([BLOCK_H, BLOCK_W], {neutral}, tl.float32)",
         f"    for kd in tl.static_range({kd}):", f"        idd = od * {sd} - {pd} + kd * {dd}",
         f"        for kh in tl.static_range({kh}):", f"            ih = oh * {sh} - {ph} + kh * {dh}",
         f"            for kw in tl.static_range({kw}):",
         f"                iw = ow * {sw} - {pw} + kw * {dw}",
         # the depth test is a scalar: it selects the tile mask (triton 3.9's interpreter cannot AND
         # a scalar condition into a tensor mask)
         "                valid = tl.where((idd >= 0) & (idd < D),",
         "                                 omask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W), False)",
         "                offs = base + (idd * H + ih).to(tl.int64) * W + iw",
         *emit_region(f, pre, offsets="offs", mask="valid", indent="                "),
         f"                v = tl.where(valid, {ref(f, spec.x)}, {neutral})",
         f"                acc = {p}_max(acc, v)" if spec.is_max else "                acc += v"]
    if spec.is_max:
        b.append("    res = acc")
    elif spec.divisor:
        b.append(f"    res = acc / {spec.divisor}.0")
    else:
        # torch: window clipped to the padded input (count_include_pad) or to the input itself
        cnt = []
        for o, st, pp, kk, n in (("od", sd, pd, kd, "D"), ("oh", sh, ph, kh, "H"), ("ow", sw, pw, kw, "W")):
            s0 = f"({o} * {st} - {pp})"
            e0 = f"tl.minimum({s0} + {kk}, {n} + {pp})"
            if not spec.include_pad:
                s0, e0 = f"tl.maximum({s0}, 0)", f"tl.minimum({e0}, {n})"
            cnt.append(f"({e0} - {s0})")
        b.append(f"    res = acc / ({' * '.join(cnt)}).to(tl.float32)")
    b += ["    offs = ((nc * OD + od) * OH + oh) * OW + ow", f"    v_{f.anchor.name} = res",
          *emit_region(f, post, offsets="offs", mask="omask", indent="    "),
          f"    tl.store(out_ptr + offs, {store_cast(f'v_{f.group.output}', f.group.out.dtype)}, "
          "mask=omask)"]
    return "\n".join(b) + "\n"


def _launcher(spec: _Spec, cfg: dict[str, Any], launcher: str, p: str) -> str:
    f = spec.fusion
    pre, post = f.pre_region([spec.x]), f.post_region()
    nd = spec.nd
    (kd, kh, kw), (sd, sh, sw) = spec.k, spec.s
    (pd, ph, pw), (dd, dh, dw) = spec.pad, spec.dil
    shape = launcher_shape(pre.tensors)
    sizes = {1: "1, 1, shape[-1]", 2: "1, shape[-2], shape[-1]", 3: "shape[-3], shape[-2], shape[-1]"}[nd]
    L = [f"def {launcher}({launcher_params(f.group)}):",
         f"    shape = out_shape = {shape}", f"    D, H, W = {sizes}",
         f"    NC = math.prod(shape[:-{nd}])", *region_views(pre, "flat", launcher),
         f"    OD = (D + {2 * pd} - {dd * (kd - 1)} - 1) // {sd} + 1",
         f"    OH = (H + {2 * ph} - {dh * (kh - 1)} - 1) // {sh} + 1",
         f"    OW = (W + {2 * pw} - {dw * (kw - 1)} - 1) // {sw} + 1",
         f"    out_shape = list(shape[:-{nd}]) + [OD, OH, OW][{3 - nd}:]",
         f"    out = torch.empty(out_shape, dtype=torch.{f.group.out.dtype}, device=g_{pre.tensors[0]}.device)",
         *region_views(post, "flat", launcher),
         f"    BH, BW = {int(cfg['block_h']) if nd >= 2 else 1}, {int(cfg['block_w'])}",
         "    NTH, NTW = _egg_cdiv(OH, BH), _egg_cdiv(OW, BW)",
         f"    {p}_pool[(NC * OD * NTH * NTW,)]({region_args(pre, 'flat')}{scalar_args(f)}out, "
         f"{region_args(post, 'flat')}D, H, W, OD, OH, OW, NTH, NTW, BLOCK_H=BH, BLOCK_W=BW, "
         f"num_warps={int(cfg['num_warps'])})", "    return out"]
    return "\n".join(L) + "\n"


class PoolTemplate:
    """Max / average pooling over 1-3 spatial dims, window unrolled, output-tiled."""

    name = "reduce_pool"

    def match(self, group: GroupSpec) -> bool:
        return _spec(group) is not None

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        spec = _spec(group)
        if spec is None:
            return {}
        return {"block_h": [1, 4, 8, 16], "block_w": [32, 64, 128, 256], "num_warps": [2, 4, 8]}

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        spec = _spec(group)
        return _default(spec) if spec else {}

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        spec = _spec(group)
        if spec is None:
            raise ValueError(f"{self.name} cannot compute this group")
        cfg = {**_default(spec), **config}
        p = f"_{launcher}"
        source = _kernel(spec, p) + "\n" + _launcher(spec, cfg, launcher, p)
        log.debug("reduce_pool.render", op=spec.fusion.anchor.op, config=cfg)
        return KernelPlan(
            launcher=launcher, source=source,
            structure=f"{spec.fusion.anchor.op}: output tiles [{cfg['block_h']}x{cfg['block_w']}], "
            f"window {spec.k[3 - spec.nd:]} unrolled, masked taps",
            principle_ids=PRINCIPLES, config=cfg)


TEMPLATES: list[Any] = [PoolTemplate()]
