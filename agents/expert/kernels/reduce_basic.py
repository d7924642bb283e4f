"""Plain reductions: sum, mean, amax/amin, max/min, argmax/argmin, prod, var/std, norms, any/all.

Operand/kwarg convention (torch signatures; see REDUCE_CONTRACT.md):

* operands ``[input]`` - exactly one tensor (``torch.max(a, b)`` is elementwise: not matched).
* ``dim`` (int | list[int] | None/[] = all dims; a list must be a contiguous run of dims),
  ``keepdim`` (default False). ``torch.max/min(x, d)`` as traced by fx carries ``args: [d]`` or
  ``[d, keepdim]``; ``dim``/``keepdim`` kwargs are read too.
* ``max``/``min`` with a dim return ``(values, indices)``: the group must then contain the
  ``tuple_getitem``/``getitem`` node (``kwargs.index`` or ``operands[1]`` = 0 values, 1 indices);
  without a dim they are ``amax``/``amin`` over everything.
* ``var``/``std``: ``correction`` (default 1) or ``unbiased`` (bool).
* ``norm``: ``p`` in {"fro", 0, 1, 2, inf, -inf, any p > 0} ("nuc" declined); ``vector_norm``
  (``torch.linalg.vector_norm``): ``ord``, default 2; ``linalg_norm``: ``ord`` None, or numeric with
  a single dim (matrix norms declined).
* ``dtype`` kwargs are honoured through the node's dtype (the output dtype).

Inputs must be float16/bfloat16/float32; accumulation is fp32; the output has the traced dtype
(sum of fp16 stays fp16, argmax int64, any/all bool). Integer/float64 inputs are declined (exact
integer accumulation and fp64 are not what these kernels do). NaN: max-family propagates NaN;
argmax/argmin ignore NaN (torch would return the NaN's index).
"""

from __future__ import annotations

import math
from typing import Any

import structlog

from agents.expert.kernels import reduce_engine as engine
from agents.expert.kernels.base import GroupSpec, KernelPlan
from agents.expert.kernels.reduce_common import (
    ALIAS_OPS,
    FLOAT_DTYPES,
    input_dtype,
    norm_dims,
    parse_fusion,
    ref,
    value_shape,
)

log = structlog.get_logger(__name__)

ANCHORS = frozenset(
    ["sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "var", "std", "norm", "vector_norm", "linalg_norm", "any", "all"]
)
PRINCIPLES = [
    "parallel-mapping/reduce-non-contiguous-axis",
    "algorithm-structure/split-long-reductions",
    "tiling/fp32-accumulators",
    "memory/avoid-atomics",
]


def _getitem_index(node: Any) -> int | None:
    if "index" in node.kwargs:
        idx = node.kwargs["index"]
    elif len(node.operands) > 1:
        idx = node.operands[1]
    else:
        return None
    return idx if isinstance(idx, int) and not isinstance(idx, bool) else None


def _norm_p(op: str, kw: dict[str, Any], dims: Any) -> float | None:
    """The vector-norm order, or None when the call is a matrix norm / unsupported."""
    if op == "norm":
        p = kw.get("p", "fro")
    elif op == "vector_norm":
        p = kw.get("ord", 2)
    else:  # linalg_norm: ord None is the 2-norm of the flattened/selected dims
        p = kw.get("ord")
        if p is not None and (dims is None or len(dims) != 1):
            return None
        p = 2 if p is None else p
    if p == "fro":
        return 2.0
    if isinstance(p, str):
        p = {"inf": math.inf, "-inf": -math.inf}.get(p)
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        return None
    return float(p) if (p >= 0 or p == -math.inf) else None


def _semantics(op: str, p: float | None) -> tuple[str, str, str]:
    """(accumulator kind, value of ``{x}``, final of ``acc``/``var``/``n``)."""
    table = {
        "sum": ("sum", "{x}", "acc"),
        "mean": ("sum", "{x}", "acc / n"),
        "prod": ("prod", "{x}", "acc"),
        "amax": ("max", "{x}", "acc"),
        "max": ("max", "{x}", "acc"),
        "amin": ("max", "-({x})", "-acc"),
        "min": ("max", "-({x})", "-acc"),
        "argmax": ("arg", "{x}", ""),
        "argmin": ("arg", "-({x})", ""),
        "var": ("var", "{x}", "var"),
        "std": ("var", "{x}", "tl.sqrt(var)"),
        "any": ("max", "({x} != 0).to(tl.float32)", "acc"),
        "all": ("max", "-(({x} != 0).to(tl.float32))", "-acc"),
    }
    if op in table:
        return table[op]
    assert p is not None
    if p == 1:
        return "sum", "tl.abs({x})", "acc"
    if p == 2:
        return "sum", "{x} * {x}", "tl.sqrt(acc)"
    if p == math.inf:
        return "max", "tl.abs({x})", "acc"
    if p == -math.inf:
        return "max", "-tl.abs({x})", "-acc"
    if p == 0:
        return "sum", "({x} != 0).to(tl.float32)", "acc"
    return "sum", f"tl.exp({p!r} * tl.log(tl.abs({{x}})))", f"tl.exp(tl.log(acc) / {p!r})"


def build_job(group: GroupSpec) -> engine.ReduceJob | None:
    """The reduction this group computes, or None when it cannot be computed exactly."""
    fusion = parse_fusion(group, ANCHORS)
    if fusion is None:
        return None
    a = fusion.anchor
    tensors = [o for o in a.operands if isinstance(o, str) and value_shape(group, o) is not None]
    if len(tensors) != 1 or a.operands[0] != tensors[0]:
        return None
    x = a.operands[0]
    full = value_shape(group, x)
    if not full or input_dtype(group, x) not in FLOAT_DTYPES:
        return None
    kw = dict(a.kwargs)
    op = a.op
    dim, keepdim = kw.get("dim"), kw.get("keepdim", False)
    if op in ("max", "min") and "args" in kw:
        args = kw["args"] if isinstance(kw["args"], list) else [kw["args"]]
        dim = args[0] if args else dim
        keepdim = args[1] if len(args) > 1 else keepdim
    if not isinstance(keepdim, bool):
        return None
    dims = norm_dims(dim, len(full))
    if dims == "bad" or (op == "prod" and dims is not None and len(dims) != 1):
        return None
    post = list(fusion.post)
    if op in ("max", "min") and dim is not None:
        # torch.max(x, d) is a (values, indices) tuple: its selection must be in the group
        if not post or post[0].op not in ("tuple_getitem", "getitem") or post[0].operands[0] != a.name:
            return None
        index = _getitem_index(post[0])
        if index not in (0, 1):
            return None
        if index == 1:
            op = "argmax" if op == "max" else "argmin"
        if any(a.name in n.operands for n in post[1:]):
            return None
    elif any(n.op in ALIAS_OPS and n.op != "identity" for n in post):
        return None
    p = _norm_p(op, kw, dims) if op in ("norm", "vector_norm", "linalg_norm") else None
    if op in ("norm", "vector_norm", "linalg_norm") and p is None:
        return None
    kind, value, final = _semantics(op, p)
    if kind == "arg" and any(n.op not in ALIAS_OPS for n in post):
        return None  # no float epilogue on indices
    correction = 0.0
    if kind == "var":
        corr = kw.get("correction", 1 if kw.get("unbiased", True) else 0)
        if isinstance(corr, bool) or not isinstance(corr, (int, float)):
            return None
        correction = float(corr)
    rank = len(full)
    if dims is None:
        out_shape = [1] * rank if keepdim else []
    else:
        kept = [1] * len(dims) if keepdim else []
        out_shape = full[: dims[0]] + kept + full[dims[-1] + 1 :]
    out_dtype = group.out.dtype
    want = {"arg": {"int64"}, "max": FLOAT_DTYPES}.get(kind, FLOAT_DTYPES)
    if op in ("any", "all"):
        want = {"bool"}
    if out_dtype not in want or list(group.out.shape) != out_shape:
        return None
    if not fusion.shapes_ok(full, out_shape):
        return None
    return engine.ReduceJob(
        fusion=fusion, operands=[x], value=value.format(x=ref(fusion, x)), kind=kind,
        final=final, dims=dims, keepdim=keepdim, rank=rank, out_dtype=out_dtype,
        correction=correction,
    )


class BasicReduceTemplate:
    """Reductions over one contiguous run of dims (any position) or over all dims."""

    name = "reduce_basic"

    def match(self, group: GroupSpec) -> bool:
        return build_job(group) is not None

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        job = build_job(group)
        return engine.tuning_space(job) if job else {}

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        job = build_job(group)
        if job is None:
            return {}
        return engine.default_config(job, value_shape(group, job.operands[0]) or [])

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        job = build_job(group)
        if job is None:
            raise ValueError(f"{self.name} cannot compute this group")
        cfg = {**self.default_config(group, "cuda"), **config}
        source = engine.render(job, cfg, launcher)
        where = "all dims" if job.dims is None else f"dims {job.dims} ({job.layout} layout)"
        log.debug("reduce_basic.render", op=job.fusion.anchor.op, kind=job.kind, where=where)
        return KernelPlan(
            launcher=launcher,
            source=source,
            structure=f"{job.fusion.anchor.op} over {where}: fp32 {job.kind} accumulator, "
            f"R split into chunks + ordered second pass when rows are few",
            principle_ids=PRINCIPLES,
            config=cfg,
        )


TEMPLATES: list[Any] = [BasicReduceTemplate()]
