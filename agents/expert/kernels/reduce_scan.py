"""cumsum / cumprod along any dim, with reverse and exclusive variants.

Operand/kwarg convention (see REDUCE_CONTRACT.md): operands ``[input]``; kwargs ``dim`` (int),
optional ``dtype`` (honoured through the node dtype), and two flags the codegen may set when it
recognises the idioms: ``reverse=True`` (``x.flip(d).cumsum(d).flip(d)``) and ``exclusive=True``
(``cat([zeros, cumsum(x.narrow(d, 0, n-1))])``). The flip idiom is also recognised here when the
group is exactly ``flip(x, d) -> cumsum(d) -> flip(d)`` (``dims``/``args`` kwargs of flip).

Structure: each program owns ``BLOCK_M`` rows (dim last) or ``BLOCK_I`` inner columns (other
dims, ``[O, R, I]`` strided view: coalesced along I) and walks R in ``block_r`` chunks with
``tl.cumsum``/``tl.associative_scan`` inside a chunk and a running carry between chunks: one
read and one write per element, fp32 accumulation, no second pass. (A decoupled look-back scan
for a few very long rows is not implemented: rows are the parallel dimension.)
"""

from __future__ import annotations

from typing import Any

import structlog

from agents.expert.kernels.base import GroupSpec, KernelPlan
from agents.expert.kernels.launch_lines import (
    as3_helper,
    lane_setup,
    launcher_dims,
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
    prod,
    ref,
    region_args,
    region_params,
    region_views,
    scalar_args,
    scalar_params,
    value_shape,
)

log = structlog.get_logger(__name__)

ANCHORS = frozenset({"cumsum", "cumprod"})
PRINCIPLES = ["algorithm-structure/scan-with-associative-scan",
              "parallel-mapping/reduce-non-contiguous-axis", "tiling/fp32-accumulators"]


class _Spec:
    def __init__(self, fusion: Fusion, full: list[int], dim: int, reverse: bool, exclusive: bool):
        self.fusion, self.full, self.dim = fusion, full, dim
        self.reverse, self.exclusive = reverse, exclusive
        self.op = fusion.anchor.op
        self.x = fusion.anchor.operands[0]
        self.row = dim == len(full) - 1


def _flip_dims(node: Any) -> list[int] | None:
    return as_int_list(node.kwargs.get("dims", node.kwargs.get("args")))


def _strip_flips(group: GroupSpec) -> tuple[GroupSpec, bool]:
    """``flip -> cumsum -> flip`` on the same dim is a reverse scan: drop the flips."""
    nodes = group.nodes
    if len(nodes) != 3 or [n.op for n in nodes] != ["flip", nodes[1].op, "flip"]:
        return group, False
    f1, scan, f2 = nodes
    dim = scan.kwargs.get("dim")
    if scan.op not in ANCHORS or not isinstance(dim, int) or group.output != f2.name:
        return group, False
    rank = len(scan.shape)
    same = [[d % rank for d in (_flip_dims(f) or [])] for f in (f1, f2)]
    if same != [[dim % rank]] * 2 or scan.operands[:1] != [f1.name] or f2.operands[:1] != [scan.name]:
        return group, False
    inner = scan.model_copy(update={"operands": [f1.operands[0], *scan.operands[1:]],
                                    "kwargs": {**scan.kwargs, "reverse": True}})
    return group.model_copy(update={"nodes": [inner], "output": inner.name, "anchor": inner.name}), True


def _spec(group: GroupSpec) -> _Spec | None:
    group, _ = _strip_flips(group)
    fusion = parse_fusion(group, ANCHORS)
    if fusion is None:
        return None
    a = fusion.anchor
    x = a.operands[0] if a.operands else None
    full = value_shape(group, x)
    dim = a.kwargs.get("dim")
    if not full or len(a.operands) != 1 or not isinstance(dim, int) or isinstance(dim, bool):
        return None
    if input_dtype(group, x) not in FLOAT_DTYPES or group.out.dtype not in FLOAT_DTYPES:
        return None
    if not -len(full) <= dim < len(full):
        return None
    flags = [a.kwargs.get(k, False) for k in ("reverse", "exclusive")]
    if any(not isinstance(v, bool) for v in flags):
        return None
    if list(group.out.shape) != full or not fusion.shapes_ok(full, full):
        return None
    return _Spec(fusion, full, dim % len(full), *flags)


def _default(spec: _Spec) -> dict[str, Any]:
    o = prod(spec.full[: spec.dim])
    r = spec.full[spec.dim]
    i = prod(spec.full[spec.dim + 1 :])
    if spec.row:
        br = min(next_pow2(r), 2048)
        bm = max(1, min(next_pow2(o), 2048 // br))
        return {"block_r": br, "block_m": bm, "block_i": 1, "num_warps": num_warps_for(br * bm)}
    bi = min(next_pow2(i), 64)
    br = max(1, min(next_pow2(r), 2048 // bi))
    return {"block_r": br, "block_m": 1, "block_i": bi, "num_warps": num_warps_for(br * bi)}


def _kernel(spec: _Spec, p: str) -> str:
    f = spec.fusion
    pre, post = f.pre_region([spec.x]), f.post_region()
    ax = 1 if spec.row else 0
    keep = "[BLOCK_M, 1]" if spec.row else "[1, BLOCK_I]"
    ident = "1.0" if spec.op == "cumprod" else "0.0"
    offs = {"o": "o", "r": "rs"} if spec.row else {"o": "o", "r": "rs", "i": "i"}
    out_offs = {"o": "o", "r": "r"} if spec.row else {"o": "o", "r": "r", "i": "i"}
    chunk = "(NCH - 1 - kb) * BLOCK_R" if spec.reverse else "kb * BLOCK_R"
    rev = "True" if spec.reverse else "False"
    if spec.op == "cumsum":
        scan, total = f"tl.cumsum(x, axis={ax}, reverse={rev})", f"tl.sum(x, axis={ax}, keep_dims=True)"
        join, carry = "c + carry", f"carry + {total}"
    else:
        scan = f"tl.associative_scan(x, {ax}, {p}_mul, reverse={rev})"
        total = f"tl.reduce(x, {ax}, {p}_mul, keep_dims=True)"
        join, carry = "c * carry", f"carry * {total}"
    # exclusive: element r takes the inclusive scan of the input shifted by one toward the start
    shift = (" + 1" if spec.reverse else " - 1") if spec.exclusive else ""
    b = [f"@triton.jit\ndef {p}_mul(a, b):\n    return a * b\n", "@triton.jit", f"def {p}_scan(",
         f"    {region_params(pre, '3d')}{scalar_params(f)}out_ptr, {region_params(post, '3d')}",
         "    M, R, I, NIB, NCH,",
         "    BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr,", "):",
         *lane_setup(spec.row), f"    carry = tl.full({keep}, {ident}, tl.float32)",
         "    for kb in range(0, NCH):", f"        r = {chunk} + kk", "        mask = lane_ok & (r < R)",
         f"        rs = r{shift}", "        lmask = mask & (rs >= 0) & (rs < R)",
         "        r = r.to(tl.int64)", "        rs = rs.to(tl.int64)"]
    b += emit_region(f, pre, offsets=offs, mask="lmask", indent="        ")
    b += [f"        x = tl.where(lmask, {ref(f, spec.x)}, {ident})", f"        c = {scan}",
          f"        v_{f.anchor.name} = {join}"]
    b += emit_region(f, post, offsets=out_offs, mask="mask", indent="        ")
    addr = "o * R + r" if spec.row else "(o * R + r) * I + i"
    b += [f"        tl.store(out_ptr + {addr}, "
          f"{store_cast(f'v_{f.group.output}', f.group.out.dtype)}, mask=mask)",
          f"        carry = {carry}"]
    return "\n".join(b) + "\n"


def _launcher(spec: _Spec, cfg: dict[str, Any], launcher: str, p: str) -> str:
    f = spec.fusion
    pre, post = f.pre_region([spec.x]), f.post_region()
    params = launcher_params(f.group)
    bm, br, bi = int(cfg["block_m"]), int(cfg["block_r"]), int(cfg["block_i"])
    grid = "(_egg_cdiv(M, BM),)" if spec.row else "(O * NIB,)"
    L = [f"def {launcher}({params}):", f"    shape = {launcher_shape(pre.tensors)}",
         *launcher_dims([spec.dim], len(spec.full), True, launcher), "    out_shape = list(shape)",
         f"    out = torch.empty(out_shape, dtype=torch.{f.group.out.dtype}, "
         f"device=g_{pre.tensors[0]}.device)",
         *region_views(pre, "3d", launcher), *region_views(post, "3d", launcher),
         f"    M, BM, BR, BI = O * I, {bm if spec.row else 1}, {br}, {1 if spec.row else bi}",
         "    NIB = _egg_cdiv(I, BI)",
         f"    {p}_scan[{grid}]({region_args(pre, '3d')}{scalar_args(f)}out, "
         f"{region_args(post, '3d')}M, R, I, NIB, _egg_cdiv(R, BR), BLOCK_M=BM, BLOCK_R=BR, "
         f"BLOCK_I=BI, num_warps={int(cfg['num_warps'])})", "    return out"]
    return "\n".join(L) + "\n"


class ScanTemplate:
    """Chunked scan with a running carry; inclusive/exclusive, forward/reverse."""

    name = "reduce_scan"

    def match(self, group: GroupSpec) -> bool:
        return _spec(group) is not None

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        spec = _spec(group)
        if spec is None:
            return {}
        if spec.row:
            return {"block_r": [512, 1024, 2048, 4096], "block_m": [1, 2, 4], "num_warps": [4, 8]}
        return {"block_r": [8, 16, 32, 64], "block_i": [32, 64, 128], "num_warps": [4, 8]}

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        spec = _spec(group)
        return _default(spec) if spec else {}

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        spec = _spec(group)
        if spec is None:
            raise ValueError(f"{self.name} cannot compute this group")
        cfg = {**_default(spec), **config}
        p = f"_{launcher}"
        source = "\n".join([as3_helper(launcher), _kernel(spec, p), _launcher(spec, cfg, launcher, p)])
        variant = ("reverse " if spec.reverse else "") + ("exclusive " if spec.exclusive else "")
        log.debug("reduce_scan.render", op=spec.op, variant=variant, row=spec.row)
        return KernelPlan(
            launcher=launcher, source=source,
            structure=f"{variant}{spec.op} along dim {spec.dim}: chunked scan + carry, "
            f"{'rows' if spec.row else 'strided columns'} per program",
            principle_ids=PRINCIPLES, config=cfg,
        )


TEMPLATES: list[Any] = [ScanTemplate()]
