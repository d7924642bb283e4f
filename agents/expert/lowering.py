"""Lower fx nodes to the canonical op vocabulary: key, operands, static kwargs, in-place flag.

Conventions (what templates see in a :class:`~agents.expert.kernels.base.NodeSpec`):

* ``op`` is the optable key (``egg.analysis.optable``), with elementwise spellings canonicalised
  by :func:`agents.expert.kernels.expr.canonical` (``iadd`` -> ``add``, ``swish`` -> ``silu``).
  ``torch.max(x, dim)[0]`` / ``torch.min(x, dim)[0]`` become ``amax`` / ``amin``; a global
  adaptive pool (output size 1 in every spatial dim) becomes ``mean`` / ``amax`` over the spatial
  dims with ``keepdim`` (a reduction, not a library pooling op).
* ``operands``: the tensor arguments in the function's signature order (``None`` for an absent
  optional tensor such as a LayerNorm without bias), plus, for elementwise ops, scalar literals in
  operand positions (``x + 1.0`` -> ``[x, 1.0]``). Module calls use the functional order:
  ``nn.LayerNorm`` -> ``layer_norm(input, weight, bias)``, ``nn.Linear`` -> ``linear(input,
  weight, bias)``; their parameters are :class:`ParamRef` operands.
* ``kwargs``: every other argument by torch's parameter name, defaults filled in (``dim``,
  ``keepdim``, ``eps``, ``normalized_shape``, ``negative_slope``, ``training`` ...), as JSON
  values (dtypes as ``"float16"``). Module configuration comes from the module's attributes.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx, nn
from torch.fx.node import _get_qualified_name
from torch.fx.operator_schemas import normalize_function

from agents.expert.fxpatch import setitem_copy
from agents.expert.kernels.elementwise import SCALAR64_INPUT_DTYPES, scalar64_op_reason
from agents.expert.kernels.expr import (
    EXACT_INT_DTYPES,
    FLOAT_DTYPES,
    SUPPORTED_ELEMENTWISE,
    canonical,
    unsupported_reason,
)
from agents.expert.trace import Meta, TracedProblem
from egg.analysis.ops import module_args, to_json
from egg.analysis.optable import canonical_target, classify, module_key, op_key
from egg.vocabulary import OpClass

_OPERATOR_FUNCS = {f for f in vars(operator).values() if callable(f)}
_OPERAND_NAMES = {"input", "self", "other", "condition", "tensor1", "tensor2", "end"}
_CASTS = {"to", "type", "type_as", "float", "half", "bfloat16", "double"}
_DROP_KWARGS = {"inplace", "out", "memory_format", "generator", "layout", "device", "pin_memory"}
# Functional operand order of module parameters (other modules: their direct parameters in order).
_MODULE_PARAMS: dict[str, tuple[str, ...]] = {
    "linear": ("weight", "bias"),
    "layer_norm": ("weight", "bias"),
    "group_norm": ("weight", "bias"),
    "rms_norm": ("weight",),
    # the step counter too: a fused training-mode batch norm advances it as the module does
    "batch_norm": ("running_mean", "running_var", "weight", "bias", "num_batches_tracked"),
    "instance_norm": ("running_mean", "running_var", "weight", "bias"),
    # loss modules keep class weights as buffers: dropping them would silently change the loss
    "cross_entropy": ("weight",),
    "nll_loss": ("weight",),
    "binary_cross_entropy": ("weight",),
    "binary_cross_entropy_with_logits": ("weight", "pos_weight"),
}


@dataclass(frozen=True)
class ParamRef:
    """A module parameter used as an operand: ``self.ln.weight`` in the forward."""

    name: str  # identifier
    expr: str  # forward expression
    meta: Meta = field(compare=False, hash=False)


@dataclass(frozen=True)
class StepRef:
    """The value of an earlier step of the same fx node (clamp's ``maximum`` before its ``minimum``)."""

    name: str


@dataclass
class Step:
    """One canonical op; an fx node lowers to one step, or a few (clamp with tensor bounds)."""

    name: str
    op: str
    operands: list[Any]  # fx.Node | ParamRef | StepRef | literal | None
    kwargs: dict[str, Any]


@dataclass
class Lowered:
    node: fx.Node
    key: str
    op_class: OpClass | None  # None: a view
    steps: list[Step]
    inplace: bool = False
    elementwise: bool = False  # fusable by the elementwise template
    why_not: str | None = None  # why it is not fusable (elementwise ops only)
    # fusable where each operand is loaded and converted to fp32 by the consumer (a matmul's operand
    # prologue), which also reads small-int tensors exactly: ``w_int8.to(bf16) * scale``
    tile_fusable: bool = False
    # a 0-d float64 op on 0-d operands (AdamW's ``1 - beta ** step.double()``): the elementwise
    # template can compute it in fp64 inside the kernel it feeds (the ``fused-scalars`` variant)
    scalar64: bool = False
    extra_nodes: list[fx.Node] = field(default_factory=list)  # max(dim) folded into its getitem


def qualified(fn: Any) -> str:
    try:
        return canonical_target(_get_qualified_name(fn))
    except Exception:  # noqa: BLE001 - some builtins have no qualified name
        return getattr(fn, "__name__", repr(fn))


def _example(value: Any, meta: dict[str, Meta]) -> Any:
    """A cheap stand-in for a node's value (meta tensors) so torch's schemas can bind arguments."""
    if isinstance(value, fx.Node):
        m = meta.get(value.name)
        if m is None:
            return None
        if m.is_tensor:
            return torch.empty(m.shape, dtype=getattr(torch, m.dtype), device="meta")
        return m.value
    if isinstance(value, (list, tuple)):
        return type(value)(_example(v, meta) for v in value)
    return value


def _named_args(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], meta: dict[str, Meta]) -> list[tuple[str, Any]] | None:
    """(parameter name, original argument) in signature order, defaults filled in; None if unknown."""
    if fn in _OPERATOR_FUNCS:
        return list(zip(("input", "other"), args))
    ex_args = tuple(_example(a, meta) for a in args)
    ex_kwargs = {k: _example(v, meta) for k, v in kwargs.items()}
    def kind(v: Any) -> type:
        return torch.Tensor if isinstance(v, torch.Tensor) else type(v)

    pair = None
    for typed in (False, True):  # overloaded builtins (torch.add, torch.clamp) need argument types
        types: dict[str, Any] = {}
        if typed:
            types = {"arg_types": tuple(kind(a) for a in ex_args),
                     "kwarg_types": {k: kind(v) for k, v in ex_kwargs.items()}}
        try:
            pair = normalize_function(fn, ex_args, ex_kwargs, normalize_to_only_use_kwargs=True, **types)
        except Exception:  # noqa: BLE001 - ambiguous overloads: retry with types
            pair = None
        if pair is not None:
            break
    if pair is None:
        return None
    names = list(pair.kwargs)
    out: list[tuple[str, Any]] = []
    for i, name in enumerate(names):
        if i < len(args):
            out.append((name, args[i]))
        elif name in kwargs:
            out.append((name, kwargs[name]))
        else:
            out.append((name, pair.kwargs[name]))
    return out


def _is_tensor(value: Any, tp: TracedProblem) -> bool:
    if isinstance(value, ParamRef):
        return value.meta.is_tensor
    return isinstance(value, fx.Node) and tp.meta.get(value.name, Meta(False)).is_tensor


def _json_kwargs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {n: to_json(v) for n, v in pairs if not n.startswith("_") and n not in _DROP_KWARGS}


def target_info(node: fx.Node, tp: TracedProblem) -> tuple[str, Any, bool]:
    """Canonical key, the callable (for schemas) and whether the call mutates its first argument."""
    if node.op == "call_module":
        sub = tp.submodule(str(node.target))
        return module_key(type(sub).__name__), sub, bool(getattr(sub, "inplace", False))
    if node.op == "call_method":
        name = str(node.target)
        inplace = name.endswith("_") and not name.startswith("__")
        base = name[:-1] if inplace else name
        fn = getattr(torch, base, None) or getattr(torch.Tensor, base, None)
        return op_key(f"Tensor.{base}"), fn, inplace or bool(node.kwargs.get("inplace"))
    fn = node.target
    name = qualified(fn).rsplit(".", 1)[-1]
    inplace = (name.endswith("_") and not name.startswith("__")) or name in ("iadd", "isub", "imul", "itruediv")
    return op_key(qualified(fn)), fn, inplace or bool(node.kwargs.get("inplace"))


def _module_step(node: fx.Node, key: str, sub: nn.Module, tp: TracedProblem) -> Step:
    path = str(node.target)
    expr = "self." + path if all(p.isidentifier() for p in path.split(".")) else f'self.get_submodule("{path}")'
    names = _MODULE_PARAMS.get(key) or tuple(
        n for n, _ in [*sub.named_parameters(recurse=False), *sub.named_buffers(recurse=False)])
    operands: list[Any] = list(node.args)
    for pname in names:
        value = getattr(sub, pname, None)
        if isinstance(value, torch.Tensor):
            meta = Meta(is_tensor=True, shape=list(value.shape), dtype=str(value.dtype).removeprefix("torch."))
            ident = "".join(c if c.isalnum() else "_" for c in f"{path}_{pname}")
            operands.append(ParamRef(name=ident, expr=f"{expr}.{pname}", meta=meta))
        else:
            operands.append(None)
    kwargs = {k: v for k, v in module_args(sub, key).items() if k not in ("inplace", "bias")}
    if key.startswith("dropout") or "dropout" in key:
        kwargs["training"] = sub.training
    return Step(name=node.name, op=key, operands=operands, kwargs=kwargs)


def _elementwise_steps(node: fx.Node, key: str, pairs: list[tuple[str, Any]], tp: TracedProblem) -> list[Step] | str:
    """Steps of a fusable elementwise call, or why it is not fusable."""
    operands: list[Any] = []
    rest: list[tuple[str, Any]] = []
    for name, value in pairs:
        is_node = isinstance(value, fx.Node)
        if key in ("pow",) and name in ("exponent", "other") and not is_node:
            rest.append(("exponent", value))
        elif key == "lerp" and name == "weight" and not is_node:
            rest.append((name, value))
        elif name in _OPERAND_NAMES or (is_node and name not in ("min", "max")) or (key == "pow" and name == "exponent"):
            operands.append(value)
        else:
            rest.append((name, value))
    kwargs = _json_kwargs(rest)
    if any(isinstance(v, fx.Node) for _, v in rest):
        tensor_bounds = key in ("clamp", "clip") and all(n in ("min", "max") for n, v in rest if isinstance(v, fx.Node))
        if not tensor_bounds:
            return f"{key}: a graph value in a static argument"
        # clamp(x, min=t, max=u) with tensor bounds = minimum(maximum(x, t), u), NaN-propagating like torch
        steps, current = [], operands[0]
        for bound, op in (("min", "maximum"), ("max", "minimum")):
            value = dict(rest).get(bound)
            if value is not None:
                step = Step(name=f"{node.name}_{bound}", op=op, operands=[current, value], kwargs={})
                steps.append(step)
                current = StepRef(step.name)
        steps[-1].name = node.name
        return steps
    return [Step(name=node.name, op=canonical(key), operands=operands, kwargs=kwargs)]


def lower(node: fx.Node, tp: TracedProblem) -> Lowered | None:
    """The canonical form of a call node (None for placeholders, get_attr and output)."""
    if node.op not in ("call_function", "call_method", "call_module"):
        return None
    key, fn, inplace = target_info(node, tp)
    out = tp.meta.get(node.name, Meta(False))
    if key == "getitem" and node.args and isinstance(node.args[0], fx.Node) and tp.meta.get(
            node.args[0].name, Meta(False)).is_tuple:
        key = "tuple_getitem"  # picks an element of a tuple result (max(dim)[0]): moves no data
    if key in ("max", "min") and out.is_tuple:
        key = "a" + key  # values of max(dim)/min(dim), folded into their getitem by the partitioner
    op_class = classify(key) if key not in ("amax", "amin") else OpClass.REDUCTION
    if key in ("max", "min") and sum(_is_tensor(a, tp) for a in node.args) == 2:
        key, op_class = ("maximum" if key == "max" else "minimum"), OpClass.ELEMENTWISE
    low = Lowered(node=node, key=key, op_class=op_class, steps=[], inplace=inplace)
    if node.target is setitem_copy:
        low.key, low.op_class, low.steps = "setitem", OpClass.INDEXING, [setitem_step(node)]
        return low
    if key == "masked_fill" and len(node.args) >= 3 and not node.kwargs and not _is_tensor(node.args[2], tp):
        # x.masked_fill(mask, v) == where(mask, v, x): elementwise, so it fuses with x's chain
        low.key, low.op_class = "where", OpClass.ELEMENTWISE
        low.steps = [Step(name=node.name, op="where", operands=[node.args[1], node.args[2], node.args[0]], kwargs={})]
        low.elementwise, low.why_not = _fusable(low, tp)
        return low
    if node.op == "call_module":
        sub = tp.submodule(str(node.target))
        low.steps = [_module_step(node, key, sub, tp)]
    elif key in _CASTS:
        first = node.args[0]
        dtype = out.dtype if out.is_tensor else None
        low.steps = [Step(name=node.name, op="to", operands=[first], kwargs={"dtype": dtype})]
        low.key = "to"
    else:
        pairs = _named_args(fn, tuple(node.args), dict(node.kwargs), tp.meta)
        if pairs is None:
            low.why_not = f"cannot read the arguments of {qualified(fn) if node.op == 'call_function' else node.target}"
            low.steps = [Step(name=node.name, op=key, operands=[a for a in node.args if isinstance(a, fx.Node)], kwargs={})]
            return low
        canon = canonical(key)
        if canon in SUPPORTED_ELEMENTWISE:
            steps = _elementwise_steps(node, canon, pairs, tp)
            if isinstance(steps, str):
                low.why_not = steps
                steps = [Step(name=node.name, op=canon, operands=[v for _, v in pairs if isinstance(v, fx.Node)], kwargs={})]
            low.steps = steps
        else:
            operands = [v for n, v in pairs if _is_tensor(v, tp) or (v is None and n in ("weight", "bias"))]
            kwargs = _json_kwargs([(n, v) for n, v in pairs if not _is_tensor(v, tp) and not (v is None and n in ("weight", "bias"))])
            low.steps = [Step(name=node.name, op=key, operands=operands, kwargs=kwargs)]
    _global_pool_as_reduction(low, tp)
    low.tile_fusable = _fusable(low, tp, TILE_INT_DTYPES)[0]
    lowered_ok = low.why_not is None
    low.elementwise, reason = _fusable(low, tp)
    low.why_not = low.why_not or reason
    low.scalar64 = lowered_ok and not low.elementwise and _scalar64(low, tp)
    return low


def _scalar64(low: Lowered, tp: TracedProblem) -> bool:
    """A 0-d float64 result computed from 0-d tensors and numbers only, by ops the fold supports."""
    out = tp.meta.get(low.node.name)
    if out is None or not out.is_tensor or out.dtype != "float64" or out.shape != []:
        return False
    for step in low.steps:
        if scalar64_op_reason(step.op, step.kwargs) is not None:
            return False
        for operand in step.operands:
            if isinstance(operand, fx.Node):
                m = tp.meta.get(operand.name)
                if m is None or not m.is_tensor or m.shape != [] or m.dtype not in SCALAR64_INPUT_DTYPES:
                    return False
            elif not isinstance(operand, (int, float, StepRef)) or isinstance(operand, bool):
                return False
    return True


TILE_INT_DTYPES = frozenset({"int8", "uint8", "int16"})  # exact in fp32 registers


_GLOBAL_POOLS = {f"adaptive_{kind}_pool{n}d": (op, n) for kind, op in (("avg", "mean"), ("max", "amax"))
                 for n in (1, 2, 3)}


def _global_pool_as_reduction(low: Lowered, tp: TracedProblem) -> None:
    """An adaptive pool to size 1 in every spatial dim (a global average/max pool) is a mean/amax
    over the spatial dims with keepdim: a reduction template computes it, with the elementwise
    ops around it fused (AdaptiveAvgPool3d((1, 1, 1)) -> clamp is one kernel). The node is still
    written as the reference's own call where it stays unfused."""
    found = _GLOBAL_POOLS.get(low.key)
    x = low.node.args[0] if low.node.args else None
    if found is None or not isinstance(x, fx.Node) or len(low.steps) != 1:
        return
    op, nd = found
    src, out = tp.meta.get(x.name), tp.meta.get(low.node.name)
    if src is None or out is None or not src.is_tensor or not out.is_tensor or len(src.shape) not in (nd + 1, nd + 2):
        return  # a tuple result (return_indices=True) or an unexpected rank stays a torch call
    rank = len(src.shape)
    if out.shape != src.shape[:-nd] + [1] * nd or out.dtype != src.dtype:
        return
    low.op_class = OpClass.REDUCTION
    low.steps = [Step(name=low.node.name, op=op, operands=[x],
                      kwargs={"dim": list(range(rank - nd, rank)), "keepdim": True})]


def _fusable(low: Lowered, tp: TracedProblem, ints: frozenset[str] = frozenset()) -> tuple[bool, str | None]:
    """Whether the elementwise template can compute this node exactly (``ints``: integer tensor
    dtypes the consumer converts to fp32 exactly, for operand prologues)."""
    if low.why_not:
        return False, low.why_not
    if not low.steps or any(canonical(s.op) not in SUPPORTED_ELEMENTWISE for s in low.steps):
        return False, f"{low.key} is not an elementwise op"
    out = tp.meta.get(low.node.name)
    if out is None or not out.is_tensor or out.dtype not in FLOAT_DTYPES | {"bool"}:
        return False, f"{low.key} produces {out.dtype if out else 'nothing'} (floating/bool only)"
    for step in low.steps:
        reason = unsupported_reason(step.op, step.kwargs)
        if reason:
            return False, reason
        for operand in step.operands:
            if isinstance(operand, fx.Node):
                m = tp.meta.get(operand.name)
                if m is not None and _fp64_scalar_operand(m, out.dtype):
                    continue
                if m is None or (m.is_tensor and m.dtype not in FLOAT_DTYPES | EXACT_INT_DTYPES | {"bool"} | ints):
                    return False, f"{low.key} reads {m.dtype if m else 'an unknown value'} (floating/bool only)"
                if not m.is_tensor and not isinstance(m.value, (int, float, bool)):
                    return False, f"{low.key} reads a non-numeric value"
            elif isinstance(operand, StepRef):
                continue
            elif isinstance(operand, str) or operand is None:
                return False, f"{low.key} has a non-numeric operand {operand!r}"
    return True, None


def _fp64_scalar_operand(operand: Meta, out_dtype: str) -> bool:
    """A 0-d float64 tensor read by an op whose result is float32 (AdamW's ``step_size * m``, with
    ``step_size`` computed from ``step.double()``): torch casts it to the common dtype float32
    first, exactly what the kernel's fp32 load does, so the op stays fusable."""
    return operand.is_tensor and operand.dtype == "float64" and operand.shape == [] and out_dtype == "float32"


def setitem_step(node: fx.Node) -> Step:
    """``setitem_copy(base, index, value)`` as one step: operands ``[base, value, *index graph
    values]``, kwargs ``index``: one entry per index item, ``["tensor", k]``, ``["slice", start,
    stop, step]``, ``["int", i]``, ``["ellipsis"]``, ``["none"]`` or ``["other", repr]``, where a
    graph value (a tensor index, a size read at run time) is ``["operand", k]`` (``operands[k]``)."""
    base, index, value = node.args
    operands: list[Any] = [base, value]

    def item(v: Any) -> Any:
        if isinstance(v, fx.Node):
            operands.append(v)
            return ["operand", len(operands) - 1]
        return v

    layout: list[list[Any]] = []
    for entry in index if isinstance(index, tuple) else (index,):
        if isinstance(entry, slice):
            layout.append(["slice", item(entry.start), item(entry.stop), item(entry.step)])
        elif isinstance(entry, fx.Node):
            layout.append(["tensor", item(entry)[1]])
        elif entry is Ellipsis:
            layout.append(["ellipsis"])
        elif entry is None:
            layout.append(["none"])
        elif isinstance(entry, int) and not isinstance(entry, bool):
            layout.append(["int", entry])
        else:
            layout.append(["other", repr(entry)[:80]])
    return Step(name=node.name, op="setitem", operands=operands, kwargs={"index": layout})
