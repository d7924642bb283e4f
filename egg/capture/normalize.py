"""Exact rewrites of a decomposed graph: ones that do not change a single bit of any result.

Applied once, in graph order, after decomposition:

* runtime assertions (``_assert_tensor_metadata``, ``_assert_scalar``, ...) are dropped: they
  check what the capture already specialised on;
* identities disappear: ``alias``/``detach``/``lift_fresh_copy``, a ``clone`` or view whose
  result has its input's shape, strides and offset, a cast to the dtype the value already has,
  ``x * 1`` and ``x / 1`` of the same dtype, and a round trip through a wider type
  (``fp16 -> fp32 -> fp16``: the widening is exact, so narrowing gives the value back);
* ``as_strided`` that is only a contiguous reshape of a contiguous tensor becomes ``view``;
* ``pow(x, e)`` of a floating ``x`` becomes what ATen's own pow kernels compute for these
  exponents (CPU and CUDA special-case them): ``e=2 -> x*x``, ``0.5 -> sqrt``,
  ``-1 -> reciprocal``, and in fp32/fp64 ``3 -> x*x*x`` and ``-0.5 -> rsqrt``;
* then dead code is removed.

A replacement never makes a graph output *be* a graph input (eager returns a new tensor there).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
from torch import fx
from torch._subclasses.fake_tensor import FakeTensor

aten = torch.ops.aten


def _ops(*names: str) -> frozenset[Any]:
    """The OpOverloads named (``"alias.default"``) that this torch version has."""
    found = []
    for name in names:
        packet, overload = name.split(".")
        op = getattr(getattr(aten, packet, None), overload, None)
        if op is not None:
            found.append(op)
    return frozenset(found)


ASSERTIONS = _ops(
    "_assert_tensor_metadata.default",
    "_assert_scalar.default",
    "_assert_async.default",
    "_assert_async.msg",
    "sym_constrain_range.default",
    "sym_constrain_range_for_size.default",
    "_functional_assert_scalar.default",
    "_functional_assert_async.msg",
)
_ALIASES = _ops("alias.default", "detach.default", "lift_fresh_copy.default")
_VIEWS = _ops(
    "view.default", "expand.default", "permute.default", "slice.Tensor", "squeeze.dims",
    "squeeze.dim", "squeeze.default", "as_strided.default", "_unsafe_view.default",
)
_NUMERIC = frozenset({
    torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
})
# x -> wide -> x is exact when every value of x is a value of wide.
_LOSSLESS: dict[torch.dtype, frozenset[torch.dtype]] = {
    torch.bool: _NUMERIC,
    torch.uint8: frozenset({torch.int16, torch.int32, torch.int64, torch.float16, torch.float32, torch.float64}),
    torch.int8: frozenset({torch.int16, torch.int32, torch.int64, torch.float16, torch.float32, torch.float64}),
    torch.int16: frozenset({torch.int32, torch.int64, torch.float32, torch.float64}),
    torch.int32: frozenset({torch.int64, torch.float64}),
    torch.float16: frozenset({torch.float32, torch.float64}),
    torch.bfloat16: frozenset({torch.float32, torch.float64}),
    torch.float32: frozenset({torch.float64}),
}


def _val(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, fx.Node) else node


def _same_layout(a: Any, b: Any) -> bool:
    return (
        isinstance(a, torch.Tensor)
        and isinstance(b, torch.Tensor)
        and a.shape == b.shape
        and a.dtype == b.dtype
        and a.device == b.device
        and a.stride() == b.stride()
        and a.storage_offset() == b.storage_offset()
    )


def _is_plain_cast(node: fx.Node) -> bool:
    """``_to_copy`` that changes at most the dtype (same device, layout and strides)."""
    if node.target is not aten._to_copy.default or not isinstance(node.args[0], fx.Node):
        return False
    extra = set(node.kwargs) - {"dtype", "device", "layout", "memory_format", "non_blocking"}
    src, out = _val(node.args[0]), _val(node)
    return (
        not extra
        and isinstance(src, torch.Tensor)
        and isinstance(out, torch.Tensor)
        and src.device == out.device
        and src.stride() == out.stride()
    )


def _identity_of(node: fx.Node) -> fx.Node | None:
    """The input ``node`` is bit-for-bit equal to (same value and layout), or None."""
    first = node.args[0] if node.args else None
    if not isinstance(first, fx.Node):
        return None
    if node.target in _ALIASES:
        return first
    if node.target is aten.clone.default or node.target in _VIEWS:
        return first if _same_layout(_val(first), _val(node)) else None
    if _is_plain_cast(node):
        if _same_layout(_val(first), _val(node)):
            return first
        inner = first.args[0] if _is_plain_cast(first) else None
        if isinstance(inner, fx.Node):
            original, wide, out = _val(inner), _val(first), _val(node)
            if _same_layout(original, out) and wide.dtype in _LOSSLESS.get(original.dtype, ()):
                return inner
        return None
    if node.target in (aten.mul.Tensor, aten.div.Tensor) and len(node.args) == 2:
        other = node.args[1]
        if isinstance(other, (int, float)) and not isinstance(other, bool) and other == 1:
            return first if _same_layout(_val(first), _val(node)) else None
    return None


def _contiguous_strides(shape: list[int]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return strides[::-1]


# exponent -> (label, ops applied in turn, dtypes): each op takes the previous result (and x for
# mul), as ATen's pow kernels compute these exponents. For fp16/bf16, pow(x, 3) and pow(x, -0.5)
# are computed in fp32 and rounded once, unlike x*x*x or rsqrt in half precision: not rewritten.
_FULL = frozenset({torch.float32, torch.float64})
_FLOATS = _FULL | {torch.float16, torch.bfloat16}
_POW: dict[float, tuple[str, tuple[Any, ...], frozenset[torch.dtype]]] = {
    2.0: ("pow(x, 2) -> x*x", (aten.mul.Tensor,), _FLOATS),
    3.0: ("pow(x, 3) -> x*x*x", (aten.mul.Tensor, aten.mul.Tensor), _FULL),
    0.5: ("pow(x, 0.5) -> sqrt", (aten.sqrt.default,), _FLOATS),
    -0.5: ("pow(x, -0.5) -> rsqrt", (aten.rsqrt.default,), _FULL),
    -1.0: ("pow(x, -1) -> reciprocal", (aten.reciprocal.default,), _FLOATS),
}


def _rewrite(node: fx.Node) -> tuple[str, Callable[[fx.Graph], fx.Node]] | None:
    """(label, builder) of a replacement computation for ``node``, or None."""
    first = node.args[0] if node.args else None
    if not isinstance(first, fx.Node):
        return None
    src = _val(first)
    if node.target is aten.as_strided.default and isinstance(src, torch.Tensor):
        size, stride = list(node.args[1]), list(node.args[2])
        offset = node.args[3] if len(node.args) > 3 else node.kwargs.get("storage_offset", 0)
        if (
            src.is_contiguous()
            and src.storage_offset() == 0
            and not offset
            and stride == _contiguous_strides(size)
            and src.numel() == _val(node).numel()
        ):
            return "as_strided -> view", lambda g: _emit(g, node, aten.view.default, (first, size))
    exponent = node.args[1] if len(node.args) > 1 else None
    if (
        node.target is aten.pow.Tensor_Scalar
        and isinstance(src, torch.Tensor)
        and isinstance(exponent, (int, float))
        and not isinstance(exponent, bool)
        and float(exponent) in _POW
        and src.dtype in _POW[float(exponent)][2]
        and _val(node).dtype == src.dtype
    ):
        label, ops, _dtypes = _POW[float(exponent)]

        def build(graph: fx.Graph) -> fx.Node:
            result = first
            for op in ops:
                args = (result, first) if op is aten.mul.Tensor else (result,)
                result = _emit(graph, node, op, args)
            return result

        return label, build
    return None


def _emit(graph: fx.Graph, node: fx.Node, op: Any, args: tuple[Any, ...]) -> fx.Node:
    """A new ``op(*args)`` node before ``node``, with its fake value computed like export's."""
    mode = _val(node).fake_mode if isinstance(_val(node), FakeTensor) else None
    with graph.inserting_before(node):
        new = graph.call_function(op, args)
    new.meta = {k: v for k, v in node.meta.items() if k not in ("val", "tensor_meta")}
    with mode if mode is not None else contextlib.nullcontext():
        new.meta["val"] = op(*(_val(a) for a in args))
    return new


def normalize(gm: fx.GraphModule) -> dict[str, int]:
    """Apply the exact rewrites to ``gm`` in place; counts of what was rewritten, by kind."""
    graph = gm.graph
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    counts: dict[str, int] = {}

    def count(kind: str) -> None:
        counts[kind] = counts.get(kind, 0) + 1

    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if node.target in ASSERTIONS:
            graph.erase_node(node)
            count("assertions")
            continue
        same = _identity_of(node)
        if same is not None:
            if same.op == "placeholder" and output in node.users:
                continue  # the output would alias an input: keep the copy
            node.replace_all_uses_with(same)
            graph.erase_node(node)
            count("identities")
            continue
        rewrite = _rewrite(node)
        if rewrite is not None:
            label, build = rewrite
            node.replace_all_uses_with(build(graph))
            graph.erase_node(node)
            count(label)
    graph.eliminate_dead_code()
    graph.lint()
    gm.recompile()
    return counts
