"""softmax, log_softmax, softmin and logsumexp over any dim (Liger-style row kernels).

Operand/kwarg convention (see REDUCE_CONTRACT.md): operands ``[input]``; ``softmax``/
``log_softmax``/``softmin``: ``dim`` (int, required: the legacy implicit dim is declined), optional
``dtype`` (honoured through the node dtype); ``logsumexp``: ``dim`` (int or contiguous list),
``keepdim`` (default False). nn.Softmax/nn.LogSoftmax/nn.Softmin leaves carry ``dim`` too.

Structures (config ``structure``):

* ``one_pass`` - the whole reduced extent sits in registers (``BLOCK_R = next_pow2(R)``, chosen at
  run time): one read, one write. Rows longer than ``max_block`` fall back to ``online`` at run
  time, so a plan works for every shape set.
* ``online`` - pass 1 streams the row in ``block_r`` chunks keeping a per-lane running max and
  rescaled sum (one read: max and sum together), pass 2 re-reads and writes; logsumexp needs
  pass 1 only.

Layouts: *row* when ``dim`` is the last dim (``[BLOCK_M rows, BLOCK_R]`` tiles, several short rows
per program) and *col* otherwise (``[BLOCK_R, BLOCK_I]`` tiles over ``[O, R, I]``: loads stay
coalesced along the contiguous inner dim, no transpose copy). fp32 math, output in the node dtype.
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

ANCHORS = frozenset({"softmax", "log_softmax", "softmin", "logsumexp"})
PRINCIPLES = [
    "algorithm-structure/softmax-one-pass-or-online",
    "tiling/one-pass-row-limit",
    "parallel-mapping/rows-per-program-for-short-rows",
    "parallel-mapping/reduce-non-contiguous-axis",
]
NEG_INF = "float('-inf')"


class _Spec:
    def __init__(self, fusion: Fusion, full: list[int], dims: list[int], keepdim: bool) -> None:
        self.fusion, self.full, self.dims, self.keepdim = fusion, full, dims, keepdim
        self.op = fusion.anchor.op
        self.x = fusion.anchor.operands[0]
        self.row = dims[-1] == len(full) - 1
        self.reduced = self.op == "logsumexp"


def _spec(group: GroupSpec) -> _Spec | None:
    fusion = parse_fusion(group, ANCHORS)
    if fusion is None:
        return None
    a = fusion.anchor
    x = a.operands[0] if a.operands else None
    full = value_shape(group, x)
    if not full or len(a.operands) != 1 or input_dtype(group, x) not in FLOAT_DTYPES:
        return None
    dim = a.kwargs.get("dim")
    if dim is None or (a.op != "logsumexp" and not isinstance(dim, int)):
        return None
    dims = norm_dims(dim, len(full))
    keepdim = bool(a.kwargs.get("keepdim", False)) if a.op == "logsumexp" else True
    if not isinstance(dims, list):
        return None
    spec = _Spec(fusion, full, dims, keepdim)
    if spec.reduced:
        kept = [1] * len(dims) if keepdim else []
        out_shape = full[: dims[0]] + kept + full[dims[-1] + 1 :]
    else:
        out_shape = list(full)
    if list(group.out.shape) != out_shape or group.out.dtype not in FLOAT_DTYPES:
        return None
    return spec if fusion.shapes_ok(full, out_shape) else None


def _sizes(spec: _Spec) -> tuple[int, int, int]:
    d0, d1 = spec.dims[0], spec.dims[-1]
    return prod(spec.full[:d0]), prod(spec.full[d0 : d1 + 1]), prod(spec.full[d1 + 1 :])


def _default(spec: _Spec) -> dict[str, Any]:
    o, r, i = _sizes(spec)
    cap = 16384
    br = next_pow2(r)
    if spec.row:
        bm = max(1, min(next_pow2(o), 4096 // br)) if br <= cap else 1
        one = br <= cap
        tile = br * bm if one else 4096
        return {"structure": "one_pass" if one else "online", "max_block": cap, "block_m": bm,
                "block_r": 4096, "block_i": 1, "num_warps": num_warps_for(tile)}
    bi = min(next_pow2(i), 64)
    one = br * min(bi, 4) <= cap  # one-pass while at least 4 inner lanes fit with the column
    bi_one = max(1, min(bi, cap // br))
    block_r = max(1, min(br, 4096 // bi))
    tile = br * bi_one if one else block_r * bi
    return {"structure": "one_pass" if one else "online", "max_block": cap, "block_m": 1,
            "block_r": block_r, "block_i": bi, "num_warps": num_warps_for(tile)}


def _value(spec: _Spec, mask: str) -> str:
    v = ref(spec.fusion, spec.x)
    v = f"-{v}" if spec.op == "softmin" else v
    return f"tl.where({mask}, {v}, {NEG_INF})"


def _offsets(spec: _Spec) -> dict[str, str]:
    return {"o": "o", "r": "r"} if spec.row else {"o": "o", "r": "r", "i": "i"}


def _write(spec: _Spec, ind: str, ax: int) -> list[str]:
    """Output value ``y`` (full shape) or the logsumexp ``lse`` (reduced) -> epilogue -> store."""
    f = spec.fusion
    post = f.post_region()
    if spec.reduced:
        lines = [f"{ind}v_{f.anchor.name} = tl.sum(lse, axis={ax})"]
        lines += emit_region(f, post, offsets="m", mask="m_ok", indent=ind)
        return lines + [f"{ind}tl.store(out_ptr + m, "
                        f"{store_cast(f'v_{f.group.output}', f.group.out.dtype)}, mask=m_ok)"]
    lines = [f"{ind}v_{f.anchor.name} = y"]
    lines += emit_region(f, post, offsets=_offsets(spec), mask="mask", indent=ind)
    addr = "o * R + r" if spec.row else "(o * R + r) * I + i"
    return lines + [f"{ind}tl.store(out_ptr + {addr}, "
                    f"{store_cast(f'v_{f.group.output}', f.group.out.dtype)}, mask=mask)"]


def _y(spec: _Spec) -> str:
    return {"log_softmax": "(x - mx) - tl.log(s)"}.get(spec.op, "tl.exp(x - mx) * (1.0 / s)")


def _params(spec: _Spec, p: str, name: str) -> list[str]:
    f = spec.fusion
    pre = f.pre_region([spec.x])
    post_form = "flat" if spec.reduced else "3d"
    return ["@triton.jit", f"def {p}_{name}(",
            f"    {region_params(pre, '3d')}{scalar_params(f)}out_ptr, "
            f"{region_params(f.post_region(), post_form)}",
            "    M, R, I, NIB,",
            "    BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr,", "):",
            *lane_setup(spec.row)]


def _one_pass(spec: _Spec, p: str) -> str:
    f = spec.fusion
    ax = 1 if spec.row else 0
    b = _params(spec, p, "one_pass")
    b += ["    r = kk", "    mask = lane_ok & (r < R)", "    r = r.to(tl.int64)"]
    b += emit_region(f, f.pre_region([spec.x]), offsets=_offsets(spec), mask="mask", indent="    ")
    b += [f"    x = {_value(spec, 'mask')}",
          f"    mx = tl.max(x, axis={ax}, keep_dims=True)",
          f"    s = tl.sum(tl.exp(x - mx), axis={ax}, keep_dims=True)"]
    b.append("    lse = mx + tl.log(s)" if spec.reduced else f"    y = {_y(spec)}")
    b += _write(spec, "    ", ax)
    return "\n".join(b) + "\n"


def _online(spec: _Spec, p: str) -> str:
    f = spec.fusion
    ax = 1 if spec.row else 0
    tile = "[BLOCK_M, BLOCK_R]" if spec.row else "[BLOCK_R, BLOCK_I]"
    pre = f.pre_region([spec.x])
    loop = ["    for k0 in range(0, R, BLOCK_R):", "        r = k0 + kk",
            "        mask = lane_ok & (r < R)", "        r = r.to(tl.int64)"]
    loads = emit_region(f, pre, offsets=_offsets(spec), mask="mask", indent="        ")
    b = _params(spec, p, "online")
    b += [f"    m_run = tl.full({tile}, {NEG_INF}, tl.float32)",
          f"    d_run = tl.zeros({tile}, tl.float32)", *loop, *loads,
          f"        x = {_value(spec, 'mask')}",
          "        m_new = tl.maximum(m_run, x)",
          # -inf - -inf is NaN: lanes that saw only -inf keep d = 0 explicitly
          f"        alpha = tl.where(m_new == {NEG_INF}, 1.0, tl.exp(m_run - m_new))",
          f"        d_run = d_run * alpha + tl.where(x == {NEG_INF}, 0.0, tl.exp(x - m_new))",
          "        m_run = m_new",
          f"    mx = tl.max(m_run, axis={ax}, keep_dims=True)",
          f"    s = tl.sum(tl.where(m_run == {NEG_INF}, 0.0, d_run * tl.exp(m_run - mx)), "
          f"axis={ax}, keep_dims=True)"]
    if spec.reduced:
        b.append("    lse = mx + tl.log(s)")
        b += _write(spec, "    ", ax)
    else:
        b += [*loop, *loads, f"        x = {_value(spec, 'mask')}", f"        y = {_y(spec)}"]
        b += _write(spec, "        ", ax)
    return "\n".join(b) + "\n"


def _launcher(spec: _Spec, cfg: dict[str, Any], launcher: str, p: str) -> str:
    f = spec.fusion
    pre = f.pre_region([spec.x])
    post = f.post_region()
    params = launcher_params(f.group)
    post_form = "flat" if spec.reduced else "3d"
    L = [f"def {launcher}({params}):", f"    shape = {launcher_shape(pre.tensors)}",
         *launcher_dims(spec.dims, len(spec.full), spec.keepdim, launcher)]
    if not spec.reduced:
        L.append("    out_shape = list(shape)")
    L += [f"    out = torch.empty(out_shape, dtype=torch.{f.group.out.dtype}, "
          f"device=g_{pre.tensors[0]}.device)",
          *region_views(pre, "3d", launcher), *region_views(post, post_form, launcher),
          "    M = O * I",
          "    BR = _egg_next_pow2(R)",
          f"    one_pass = {cfg['structure'] == 'one_pass'} and BR <= {int(cfg['max_block'])}"]
    if spec.row:
        L += ["    if one_pass:",
              f"        BM, BI = max(1, min({int(cfg['block_m'])}, {int(cfg['max_block'])} // BR)), 1",
              "    else:", f"        BR = min({int(cfg['block_r'])}, BR)",
              f"        BM, BI = max(1, min({int(cfg['block_m'])}, {int(cfg['max_block'])} // BR)), 1",
              "    NIB, grid = 1, (_egg_cdiv(M, BM),)"]
    else:
        L += ["    if one_pass:",
              f"        BM, BI = 1, max(1, min({int(cfg['block_i'])}, {int(cfg['max_block'])} // BR))",
              "    else:", f"        BR = min({int(cfg['block_r'])}, BR)",
              f"        BM, BI = 1, max(1, min({int(cfg['block_i'])}, {int(cfg['max_block'])} // BR))",
              "    NIB = _egg_cdiv(I, BI)", "    grid = (O * NIB,)"]
    args = (f"{region_args(pre, '3d')}{scalar_args(f)}out, {region_args(post, post_form)}"
            f"M, R, I, NIB, BLOCK_M=BM, BLOCK_R=BR, BLOCK_I=BI, num_warps={int(cfg['num_warps'])}")
    L += ["    if one_pass:", f"        {p}_one_pass[grid]({args})",
          "    else:", f"        {p}_online[grid]({args})", "    return out"]
    return "\n".join(L) + "\n"


class SoftmaxTemplate:
    """softmax / log_softmax / softmin / logsumexp, one pass or online, any dim."""

    name = "reduce_softmax"

    def match(self, group: GroupSpec) -> bool:
        return _spec(group) is not None

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        spec = _spec(group)
        if spec is None:
            return {}
        space: dict[str, list[Any]] = {"structure": ["one_pass", "online"],
                                       "num_warps": [4, 8, 16], "max_block": [8192, 16384, 32768]}
        if spec.row:
            space.update(block_m=[1, 2, 4, 8], block_r=[1024, 2048, 4096, 8192])
        else:
            space.update(block_i=[16, 32, 64, 128], block_r=[8, 32, 64, 128])
        return space

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        spec = _spec(group)
        return _default(spec) if spec else {}

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        spec = _spec(group)
        if spec is None:
            raise ValueError(f"{self.name} cannot compute this group")
        cfg = {**_default(spec), **config}
        p = f"_{launcher}"
        source = "\n".join([as3_helper(launcher), _one_pass(spec, p), _online(spec, p),
                            _launcher(spec, cfg, launcher, p)])
        log.debug("reduce_softmax.render", op=spec.op, row=spec.row, structure=cfg["structure"])
        layout = "last dim, rows per program" if spec.row else "strided [O, R, I], coalesced on I"
        return KernelPlan(
            launcher=launcher, source=source,
            structure=f"{spec.op} ({layout}): {cfg['structure']} "
            f"(one pass in registers up to {cfg['max_block']} elements, else online max+sum)",
            principle_ids=PRINCIPLES, config=cfg,
        )


TEMPLATES: list[Any] = [SoftmaxTemplate()]
