"""Two-operand row reductions: cosine_similarity, pairwise_distance, triplet/cosine-embedding loss.

Operand/kwarg convention (torch.nn.functional order; see REDUCE_CONTRACT.md):

* ``cosine_similarity`` ``[x1, x2]`` (broadcastable), ``dim`` (1), ``eps`` (1e-8); any dim.
* ``pairwise_distance`` ``[x1, x2]``, ``p`` (2; any p > 0, inf declined), ``eps`` (1e-6),
  ``keepdim`` (False); over the last dim.
* ``triplet_margin_loss`` ``[anchor, positive, negative]`` ([N, D]), ``margin`` (1.0), ``p`` (2),
  ``eps`` (1e-6), ``swap`` (False), ``reduction`` (mean/sum/none).
* ``cosine_embedding_loss`` ``[input1, input2, target]`` ([N, D], [N, D], [N]), ``margin`` (0),
  ``reduction``.

Structure: every output lane (a row, or an inner column for ``cosine_similarity`` over a non-last
dim) accumulates its fp32 sums over R in ``block_r`` chunks reading each operand once (broadcast
operands by stride 0); per-row results are stored directly, mean/sum losses go through
per-program partials and an ordered one-program second pass (no atomics).
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
    broadcastable,
    emit_region,
    input_dtype,
    launcher_params,
    next_pow2,
    norm_dims,
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

ARITY = {"cosine_similarity": 2, "pairwise_distance": 2, "triplet_margin_loss": 3,
         "cosine_embedding_loss": 3}
PRINCIPLES = ["algorithm-structure/fuse-reduction-with-neighbours", "tiling/fp32-accumulators",
              "memory/avoid-atomics"]


def _num(kw: dict[str, Any], key: str, default: float) -> float | None:
    v = kw.get(key, default)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


class _Spec:
    def __init__(self, fusion: Fusion, full: list[int], dims: list[int], keepdim: bool,
                 accs: list[str], lane: str, red: str | None) -> None:
        self.fusion, self.full, self.dims, self.keepdim = fusion, full, dims, keepdim
        self.accs, self.lane, self.red = accs, lane, red  # accumulated exprs, per-lane result
        self.row = dims[-1] == len(full) - 1
        self.rowwise = fusion.anchor.op in ("triplet_margin_loss", "cosine_embedding_loss")


def _pow(expr: str, p: float) -> str:
    return {1.0: f"tl.abs({expr})", 2.0: f"({expr}) * ({expr})"}.get(
        p, f"tl.exp({p!r} * tl.log(tl.abs({expr})))")


def _root(expr: str, p: float) -> str:
    return {1.0: expr, 2.0: f"tl.sqrt({expr})"}.get(p, f"tl.exp(tl.log({expr}) / {p!r})")


def _spec(group: GroupSpec) -> _Spec | None:
    fusion = parse_fusion(group, set(ARITY))
    if fusion is None:
        return None
    a = fusion.anchor
    op, kw, n = a.op, dict(a.kwargs), ARITY[a.op]
    ops = list(a.operands)
    if len(ops) != n or not all(isinstance(o, str) for o in ops):
        return None
    shapes = [value_shape(group, o) for o in ops]
    if any(s is None for s in shapes) or any(input_dtype(group, o) not in FLOAT_DTYPES for o in ops[:2]):
        return None
    r = [ref(fusion, o) for o in ops]
    red = None
    if op in ("cosine_similarity", "pairwise_distance"):
        try:
            import torch

            full = list(torch.broadcast_shapes(*[tuple(s) for s in shapes]))  # type: ignore[misc]
        except RuntimeError:
            return None
        keepdim = bool(kw.get("keepdim", False)) if op == "pairwise_distance" else False
        dims = norm_dims(kw.get("dim", 1) if op == "cosine_similarity" else -1, len(full))
        if not isinstance(dims, list) or len(dims) != 1:
            return None
        if op == "cosine_similarity":
            eps = _num(kw, "eps", 1e-8)
            accs = [f"{r[0]} * {r[1]}", f"{r[0]} * {r[0]}", f"{r[1]} * {r[1]}"]
            lane = (f"acc0 / (tl.maximum(tl.sqrt(acc1), {eps!r}) * "
                    f"tl.maximum(tl.sqrt(acc2), {eps!r}))")
        else:
            p, eps = _num(kw, "p", 2.0), _num(kw, "eps", 1e-6)
            if p is None or not 0 < p < float("inf"):
                return None
            accs, lane = [_pow(f"{r[0]} - {r[1]} + {eps!r}", p)], _root("acc0", p)
        if eps is None:
            return None
        kept = [1] if keepdim else []
        out_shape = full[: dims[0]] + kept + full[dims[0] + 1 :]
    else:
        full, keepdim, dims = list(shapes[0]), False, [1]  # type: ignore[arg-type]
        red = kw.get("reduction", "mean")
        if len(full) != 2 or red not in ("mean", "sum", "none") or kw.get("size_average") is not None:
            return None
        if op == "triplet_margin_loss":
            mg, p, eps = _num(kw, "margin", 1.0), _num(kw, "p", 2.0), _num(kw, "eps", 1e-6)
            if shapes[1] != full or shapes[2] != full or mg is None or eps is None or p is None or not 0 < p < 1e9:
                return None
            accs = [_pow(f"{r[0]} - {r[1]} + {eps!r}", p), _pow(f"{r[0]} - {r[2]} + {eps!r}", p)]
            d_an = _root("acc1", p)
            if kw.get("swap", False):
                accs.append(_pow(f"{r[1]} - {r[2]} + {eps!r}", p))
                d_an = f"tl.minimum({d_an}, {_root('acc2', p)})"
            lane = f"tl.maximum({mg!r} + {_root('acc0', p)} - {d_an}, 0.0)"
        else:
            mg = _num(kw, "margin", 0.0)
            if shapes[1] != full or shapes[2] != full[:1] or mg is None:
                return None
            accs = [f"{r[0]} * {r[1]}", f"{r[0]} * {r[0]}", f"{r[1]} * {r[1]}"]
            cos = "(acc0 / tl.sqrt((acc1 + 1e-12) * (acc2 + 1e-12)))"
            tgt = f"tl.load(g_{ops[2]}_ptr + m, mask=m_ok, other=0).to(tl.float32)"
            lane = (f"tl.where({tgt} == 1, 1.0 - {cos}, 0.0) + "
                    f"tl.where({tgt} == -1, tl.maximum({cos} - {mg!r}, 0.0), 0.0)")
        out_shape = full[:1] if red == "none" else []
    if list(group.out.shape) != out_shape or group.out.dtype not in FLOAT_DTYPES:
        return None
    if any(not broadcastable(s, full) for s in shapes[:3] if s and op != "cosine_embedding_loss"):  # type: ignore[arg-type]
        return None
    if not fusion.shapes_ok(full, out_shape):
        return None
    return _Spec(fusion, full, dims, keepdim, accs, lane, red)


def _default(spec: _Spec) -> dict[str, Any]:
    d = spec.dims[0]
    o, r, i = prod(spec.full[:d]), spec.full[d], prod(spec.full[d + 1 :])
    if spec.row:
        br = min(next_pow2(r), 2048)
        bm = max(1, min(next_pow2(o), 2048 // br))
        return {"block_r": br, "block_m": bm, "block_i": 1, "num_warps": num_warps_for(br * bm)}
    bi = min(next_pow2(i), 64)
    br = max(1, min(next_pow2(r), 2048 // bi))
    return {"block_r": br, "block_m": 1, "block_i": bi, "num_warps": num_warps_for(br * bi)}


def _source(spec: _Spec, cfg: dict[str, Any], launcher: str) -> str:
    f = spec.fusion
    p = f"_{launcher}"
    a = f.anchor
    loaded = list(a.operands[:2]) if a.op == "cosine_embedding_loss" else list(a.operands)
    pre, post = f.pre_region(loaded), f.post_region()
    extra = f"g_{a.operands[2]}_ptr, " if a.op == "cosine_embedding_loss" else ""
    ax = 1 if spec.row else 0
    tile = "[BLOCK_M, BLOCK_R]" if spec.row else "[BLOCK_R, BLOCK_I]"
    offs = {"o": "o", "r": "r"} if spec.row else {"o": "o", "r": "r", "i": "i"}
    direct = spec.red in (None, "none")
    k = ["@triton.jit", f"def {p}_rows(",
         f"    {region_params(pre, '3d')}{scalar_params(f)}{extra}part_ptr, out_ptr, "
         f"{region_params(post, 'flat') if direct else ''}",
         "    M, R, I, NIB, BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr,",
         "):", *lane_setup(spec.row)]
    k += [f"    a{j} = tl.zeros({tile}, tl.float32)" for j in range(len(spec.accs))]
    k += ["    for k0 in range(0, R, BLOCK_R):", "        r = k0 + kk", "        mask = lane_ok & (r < R)",
          "        r = r.to(tl.int64)", *emit_region(f, pre, offsets=offs, mask="mask", indent="        ")]
    k += [f"        a{j} += tl.where(mask, {e}, 0.0)" for j, e in enumerate(spec.accs)]
    k += [f"    acc{j} = tl.sum(a{j}, axis={ax})" for j in range(len(spec.accs))]
    k.append(f"    lane = {spec.lane}")
    out_dt = f.group.out.dtype
    if direct:
        k += [f"    v_{a.name} = lane", *emit_region(f, post, offsets="m", mask="m_ok", indent="    "),
              f"    tl.store(out_ptr + m, {store_cast(f'v_{f.group.output}', out_dt)}, mask=m_ok)"]
    else:
        k.append("    tl.store(part_ptr + tl.program_id(0), tl.sum(tl.where(m_ok, lane, 0.0), axis=0))")
    fin = ["@triton.jit", f"def {p}_finish(",
           f"    part_ptr, out_ptr, {region_params(post, 'flat')}{scalar_params(f)}P, n_f, "
           "BLOCK: tl.constexpr,", "):", "    acc = tl.zeros([BLOCK], tl.float32)",
           "    for k0 in range(0, P, BLOCK):  # fixed order: deterministic",
           "        kx = k0 + tl.arange(0, BLOCK)",
           "        acc += tl.load(part_ptr + kx, mask=kx < P, other=0.0)",
           "    m = tl.arange(0, 1)", "    m_ok = m < 1",
           f"    v_{a.name} = tl.sum(acc, axis=0){' / n_f' if spec.red == 'mean' else ''} "
           "+ tl.zeros([1], tl.float32)",
           *emit_region(f, post, offsets="m", mask="m_ok", indent="    "),
           f"    tl.store(out_ptr + m, {store_cast(f'v_{f.group.output}', out_dt)}, mask=m_ok)"]
    bm, br, bi = int(cfg["block_m"]), int(cfg["block_r"]), int(cfg["block_i"])
    L = [f"def {launcher}({launcher_params(f.group)}):",
         f"    shape = {launcher_shape(pre.tensors)}",
         *launcher_dims(spec.dims, len(spec.full), spec.keepdim, launcher)]
    if not direct or spec.red == "none":
        L.append(f"    out_shape = {'[]' if not direct else 'list(shape[:1])'}")
    L += [f"    out = torch.empty(out_shape, dtype=torch.{out_dt}, device=g_{pre.tensors[0]}.device)",
          *region_views(pre, "3d", launcher), *region_views(post, "flat", launcher),
          f"    M, BM, BR, BI = O * I, {bm if spec.row else 1}, {br}, {1 if spec.row else bi}",
          "    NIB = _egg_cdiv(I, BI)",
          f"    P = {'_egg_cdiv(M, BM)' if spec.row else 'O * NIB'}",
          "    part = torch.empty(P, dtype=torch.float32, device=out.device)",
          f"    {p}_rows[(P,)]({region_args(pre, '3d')}{scalar_args(f)}"
          f"{'g_' + a.operands[2] + '.contiguous(), ' if extra else ''}part, out, "
          f"{region_args(post, 'flat') if direct else ''}M, R, I, NIB, BLOCK_M=BM, BLOCK_R=BR, "
          f"BLOCK_I=BI, num_warps={int(cfg['num_warps'])})"]
    if not direct:
        L.append(f"    {p}_finish[(1,)](part, out, {region_args(post, 'flat')}{scalar_args(f)}P, "
                 "float(M), BLOCK=min(_egg_next_pow2(P), 1024), num_warps=4)")
    L.append("    return out")
    return "\n".join([as3_helper(launcher), "\n".join(k), "", "\n".join(fin), "", "\n".join(L), ""])


class PairwiseTemplate:
    """Row-wise dot products / distances between two or three operands."""

    name = "reduce_pairwise"

    def match(self, group: GroupSpec) -> bool:
        return _spec(group) is not None

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        spec = _spec(group)
        if spec is None:
            return {}
        if spec.row:
            return {"block_r": [512, 1024, 2048, 4096], "block_m": [1, 2, 4, 8], "num_warps": [4, 8]}
        return {"block_r": [8, 16, 32, 64], "block_i": [32, 64, 128], "num_warps": [4, 8]}

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        spec = _spec(group)
        return _default(spec) if spec else {}

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        spec = _spec(group)
        if spec is None:
            raise ValueError(f"{self.name} cannot compute this group")
        cfg = {**_default(spec), **config}
        log.debug("reduce_pairwise.render", op=spec.fusion.anchor.op, config=cfg)
        return KernelPlan(
            launcher=launcher, source=_source(spec, cfg, launcher),
            structure=f"{spec.fusion.anchor.op}: per-lane fp32 sums over R"
            + (f", {spec.red} via ordered partials" if spec.red not in (None, "none") else ""),
            principle_ids=PRINCIPLES, config=cfg)


TEMPLATES: list[Any] = [PairwiseTemplate()]
