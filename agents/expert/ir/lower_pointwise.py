"""Lowerings of pointwise ATen ops, casts and factories: lazy loaders, never nodes.

Every pointwise op follows torch's type promotion (:func:`agents.expert.ir.dtypes.promote`):
tensor operands are cast to the promoted dtype (a 16-bit cast rounds), Python scalars enter in
the op's math dtype unrounded (as torch passes them to its kernels), and the result has the
dtype the captured metadata says. Composite formulas torch evaluates in one kernel with one
rounding (``add`` with ``alpha``, ``addcmul``, ``lerp``) keep their intermediate steps in fp32.
"""

from __future__ import annotations

from typing import Any

from torch import fx

from agents.expert.ir import dtypes
from agents.expert.ir.expr import Const, Expr, IndexValue, Op, cast
from agents.expert.ir.fold import index_arith
from agents.expert.ir.fx_patterns import mish_of
from agents.expert.ir.index import Affine
from agents.expert.ir.lower import Lowering, meta_layout, register
from agents.expert.ir.values import TV, broadcast_to
from agents.expert.ir.where_loads import where

_UNARY = {
    "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
    "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "tan": "tan",
    "tanh": "tanh", "sigmoid": "sigmoid", "erf": "erf", "erfc": "erfc", "sinh": "sinh", "cosh": "cosh",
    "reciprocal": "reciprocal", "neg": "neg", "abs": "abs", "floor": "floor", "ceil": "ceil",
    "trunc": "trunc", "frac": "frac", "sign": "sign", "sgn": "sign", "relu": "relu", "silu": "silu",
    "mish": "mish", "selu": "selu", "hardsigmoid": "hardsigmoid", "hardswish": "hardswish",
    "logical_not": "logical_not", "bitwise_not": "bitwise_not", "isnan": "isnan", "isinf": "isinf",
}
_FLOAT_ONLY = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "erfc", "hypot",
               "tanh", "sigmoid", "erf", "sinh", "cosh", "reciprocal", "silu", "mish", "selu", "hardsigmoid",
               "hardswish", "gelu", "elu", "softplus", "leaky_relu", "frac", "round", "floor", "ceil", "trunc"}
_BINARY = {
    "add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "maximum", "minimum": "minimum",
    "fmax": "fmax", "fmin": "fmin", "remainder": "remainder", "fmod": "fmod", "pow": "pow", "hypot": "hypot",
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "bitwise_left_shift": "bitwise_left_shift", "bitwise_right_shift": "bitwise_right_shift",
    "__lshift__": "bitwise_left_shift", "__rshift__": "bitwise_right_shift",
}
_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
_LOGICAL = {"logical_and", "logical_or", "logical_xor", "logical_not"}


def _operand(x: Any) -> tuple[str, int] | Any:
    return (x.dtype, x.ndim) if isinstance(x, TV) else x


def pointwise(lw: Lowering, node: fx.Node, op: str, operands: list[Any], params: dict[str, Any] | None = None,
              math_dtype: str | None = None) -> TV | None:
    """A lazy elementwise value: ``op`` over broadcast ``operands`` (TVs or Python numbers)."""
    out = meta_layout(node)
    if op in _LOGICAL:
        common = "bool"
    else:
        common = math_dtype or dtypes.promote([_operand(o) for o in operands])
        if dtypes.is_float(out.dtype) and not dtypes.is_float(common):
            common = out.dtype  # int -> float ops (exp, true division) compute in the result dtype
    if op in _FLOAT_ONLY and not dtypes.is_float(common):
        return None  # integer rounding ops etc.: leave to torch
    loaders = [broadcast_to(o, out.shape) if isinstance(o, TV) else o for o in operands]
    result_dtype = out.dtype
    items = tuple(sorted((params or {}).items()))

    # torch compares a 16-bit tensor with a Python number cast to the tensor's dtype (arithmetic
    # takes the number unrounded, in fp32)
    rounded = op in _COMPARE and common in dtypes.HALVES

    def load(idx: list[Affine]) -> Expr:
        args = [cast(f(idx), common) if callable(f) else
                (cast(Const(float(f), "float64"), common) if rounded else scalar(f, common)) for f in loaders]
        return index_arith(Op(op, tuple(args), result_dtype, items))  # positions stay index arithmetic

    return TV(out.shape, out.dtype, load)


def scalar(value: Any, dtype: str) -> Const:
    """A Python number as torch passes it to an op computing in ``dtype`` (no 16-bit rounding)."""
    if dtype == "bool":
        return Const(bool(value), "bool")
    if dtypes.is_int(dtype):
        return Const(int(value), dtype)
    return Const(float(value), dtypes.compute(dtype))


def _unary_lowering(op: str) -> Any:
    def lower(lw: Lowering, node: fx.Node, x: Any, *rest: Any, **kw: Any) -> TV | None:
        if not isinstance(x, TV) or rest or kw:
            return None
        return pointwise(lw, node, op, [x])
    return lower


def _binary_lowering(op: str) -> Any:
    def lower(lw: Lowering, node: fx.Node, a: Any, b: Any, *rest: Any, alpha: Any = 1, **kw: Any) -> TV | None:
        if rest or kw:
            return None
        if op == "pow" and isinstance(a, TV) and not isinstance(b, TV):
            return pointwise(lw, node, "pow_scalar", [a], {"exponent": float(b)}) if dtypes.is_float(a.dtype) else None
        if op == "pow" and not dtypes.is_float(meta_layout(node).dtype):
            return None
        if alpha != 1 and op in ("add", "sub"):
            return _with_alpha(lw, node, op, a, b, alpha)
        if op == "mul" and (i := mish_of(node)) is not None and isinstance((a, b)[i], TV):
            return pointwise(lw, node, "mish", [(a, b)[i]])
        return pointwise(lw, node, op, [a, b])
    return lower


for _aten, _op in _UNARY.items():
    register(f"aten.{_aten}")(_unary_lowering(_op))
for _aten, _op in _BINARY.items():
    register(f"aten.{_aten}")(_binary_lowering(_op))


def _with_alpha(lw: Lowering, node: fx.Node, op: str, a: Any, b: Any, alpha: Any) -> TV | None:
    out = meta_layout(node)
    common = dtypes.promote([_operand(a), _operand(b)])
    math = dtypes.compute(common)
    la = broadcast_to(a, out.shape) if isinstance(a, TV) else a
    lb = broadcast_to(b, out.shape) if isinstance(b, TV) else b

    def load(idx: list[Affine]) -> Expr:
        x = cast(la(idx), common) if callable(la) else scalar(la, common)
        y = cast(lb(idx), common) if callable(lb) else scalar(lb, common)
        return Op(op, (x, Op("mul", (y, scalar(alpha, common)), math)), out.dtype)

    return TV(out.shape, out.dtype, load)


@register("aten.rsub")
def _rsub(lw: Lowering, node: fx.Node, a: Any, b: Any, alpha: Any = 1) -> TV | None:
    return _with_alpha(lw, node, "sub", b, a, alpha) if alpha != 1 else pointwise(lw, node, "sub", [b, a])


@register("aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div_mode(lw: Lowering, node: fx.Node, a: Any, b: Any, rounding_mode: str | None = None) -> TV | None:
    if rounding_mode is None:
        return pointwise(lw, node, "div", [a, b])
    return pointwise(lw, node, "div_mode", [a, b], {"rounding_mode": rounding_mode})


@register("aten.floor_divide")
def _floor_divide(lw: Lowering, node: fx.Node, a: Any, b: Any) -> TV | None:
    return pointwise(lw, node, "div_mode", [a, b], {"rounding_mode": "floor"})


@register("aten.pow.Scalar")
def _pow_scalar_base(lw: Lowering, node: fx.Node, base: Any, exponent: Any) -> TV | None:
    if not dtypes.is_float(meta_layout(node).dtype):
        return None
    return pointwise(lw, node, "pow", [base, exponent])


@register("aten.round.default", "aten.round.decimals")
def _round(lw: Lowering, node: fx.Node, x: Any, *, decimals: int = 0) -> TV | None:
    if decimals == 0:
        return pointwise(lw, node, "round", [x])
    out = meta_layout(node)  # torch: nearbyint(x * 10**d) / 10**d, in the tensor's math dtype
    if not dtypes.is_float(out.dtype):
        return None
    math = dtypes.compute(out.dtype)
    scale = scalar(10.0 ** decimals, out.dtype)
    return TV(out.shape, out.dtype, lambda idx: cast(Op("div", (Op("round", (Op("mul", (cast(x.at(idx), out.dtype), scale),
                                                                               math),), math), scale), math), out.dtype))


@register("aten.gelu")
def _gelu(lw: Lowering, node: fx.Node, x: Any, approximate: str = "none") -> TV | None:
    return pointwise(lw, node, "gelu", [x], {"approximate": approximate}) if approximate in ("none", "tanh") else None


@register("aten.leaky_relu")
def _leaky(lw: Lowering, node: fx.Node, x: Any, negative_slope: float = 0.01) -> TV | None:
    return pointwise(lw, node, "leaky_relu", [x], {"negative_slope": float(negative_slope)})


@register("aten.elu")
def _elu(lw: Lowering, node: fx.Node, x: Any, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0) -> TV | None:
    return pointwise(lw, node, "elu", [x], {"alpha": float(alpha), "scale": float(scale), "input_scale": float(input_scale)})


@register("aten.softplus")
def _softplus(lw: Lowering, node: fx.Node, x: Any, beta: float = 1.0, threshold: float = 20.0) -> TV | None:
    return pointwise(lw, node, "softplus", [x], {"beta": float(beta), "threshold": float(threshold)})


def _in_dtype(value: float, dtype: str) -> float:
    """A scalar argument as torch's kernel sees it: cast to the tensor's dtype (``to<scalar_t>``)."""
    return cast(Const(float(value), "float64"), dtype).value if dtype in dtypes.HALVES else float(value)  # type: ignore[attr-defined]


@register("aten.threshold")
def _threshold(lw: Lowering, node: fx.Node, x: Any, threshold: float, value: float) -> TV | None:
    return pointwise(lw, node, "threshold", [x], {"threshold": _in_dtype(threshold, x.dtype),
                                                  "value": _in_dtype(value, x.dtype)})


@register("aten.hardshrink")
def _hardshrink(lw: Lowering, node: fx.Node, x: Any, lambd: float = 0.5) -> TV | None:
    return pointwise(lw, node, "hardshrink", [x], {"lambd": _in_dtype(lambd, x.dtype)})


@register("aten.hardtanh")
def _hardtanh(lw: Lowering, node: fx.Node, x: Any, min_val: float = -1.0, max_val: float = 1.0) -> TV | None:
    return pointwise(lw, node, "clamp", [x], {"min": min_val, "max": max_val})


@register("aten.clamp.default", "aten.clip.default")
def _clamp(lw: Lowering, node: fx.Node, x: Any, min: Any = None, max: Any = None) -> TV | None:  # noqa: A002
    return pointwise(lw, node, "clamp", [x], {"min": min, "max": max},
                     math_dtype=meta_layout(node).dtype)


@register("aten.clamp_min")
def _clamp_min(lw: Lowering, node: fx.Node, x: Any, min: Any) -> TV | None:  # noqa: A002
    if isinstance(min, TV):
        return pointwise(lw, node, "maximum", [x, min])
    return pointwise(lw, node, "clamp", [x], {"min": min, "max": None}, math_dtype=meta_layout(node).dtype)


@register("aten.clamp_max")
def _clamp_max(lw: Lowering, node: fx.Node, x: Any, max: Any) -> TV | None:  # noqa: A002
    if isinstance(max, TV):
        return pointwise(lw, node, "minimum", [x, max])
    return pointwise(lw, node, "clamp", [x], {"min": None, "max": max}, math_dtype=meta_layout(node).dtype)


@register("aten.clamp.Tensor")
def _clamp_tensor(lw: Lowering, node: fx.Node, x: Any, min: Any = None, max: Any = None) -> TV | None:  # noqa: A002
    out = meta_layout(node)
    operands = [o for o in (x, min, max) if o is not None]
    common = dtypes.promote([_operand(o) for o in operands])
    lx = broadcast_to(x, out.shape)
    lmin = broadcast_to(min, out.shape) if isinstance(min, TV) else min
    lmax = broadcast_to(max, out.shape) if isinstance(max, TV) else max

    def load(idx: list[Affine]) -> Expr:
        v = cast(lx(idx), common)
        if lmin is not None:
            v = Op("maximum", (v, cast(lmin(idx), common) if callable(lmin) else scalar(lmin, common)), common)
        if lmax is not None:
            v = Op("minimum", (v, cast(lmax(idx), common) if callable(lmax) else scalar(lmax, common)), common)
        return cast(v, out.dtype)

    return TV(out.shape, out.dtype, load)


@register("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where(lw: Lowering, node: fx.Node, cond: Any, a: Any, b: Any) -> TV | None:
    out = meta_layout(node)
    lc = broadcast_to(cond, out.shape)
    la = broadcast_to(a, out.shape) if isinstance(a, TV) else a
    lb = broadcast_to(b, out.shape) if isinstance(b, TV) else b

    def load(idx: list[Affine]) -> Expr:
        x = cast(la(idx), out.dtype) if callable(la) else scalar(la, out.dtype)
        y = cast(lb(idx), out.dtype) if callable(lb) else scalar(lb, out.dtype)
        return where(cast(lc(idx), "bool"), x, y)  # a branch's loads fetched only in runs it keeps

    return TV(out.shape, out.dtype, load)


@register("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(lw: Lowering, node: fx.Node, x: Any, mask: Any, value: Any) -> TV | None:
    return _where(lw, node, mask, value, x)


@register("aten.lerp.Scalar", "aten.lerp.Tensor")
def _lerp(lw: Lowering, node: fx.Node, start: Any, end: Any, weight: Any) -> TV | None:
    return pointwise(lw, node, "lerp", [start, end, weight])


@register("aten.addcmul", "aten.addcdiv")
def _addc(lw: Lowering, node: fx.Node, x: Any, t1: Any, t2: Any, value: Any = 1) -> TV | None:
    out = meta_layout(node)
    common = dtypes.promote([_operand(o) for o in (x, t1, t2)])
    math = dtypes.compute(common)
    inner = "mul" if "addcmul" in str(node.target) else "div"
    ls = [broadcast_to(t, out.shape) for t in (x, t1, t2)]

    def load(idx: list[Affine]) -> Expr:
        a, b, c = (cast(f(idx), common) for f in ls)
        prod = Op("mul", (scalar(value, common), Op(inner, (b, c), math)), math)
        return Op("add", (a, prod), out.dtype)

    return TV(out.shape, out.dtype, load)


# -- casts and copies -------------------------------------------------------------------------

@register("aten._to_copy", "aten.clone", "aten.alias", "aten.lift_fresh_copy", "aten.detach",
          "aten.contiguous", "prims.convert_element_type")
def _to_copy(lw: Lowering, node: fx.Node, x: Any, *args: Any, dtype: Any = None, **kw: Any) -> TV | None:
    if not isinstance(x, TV):
        return None
    out = meta_layout(node)
    if not dtypes.supported(out.dtype):
        return None
    if out.dtype == x.dtype and out.shape == x.shape:
        return x  # clone/alias of a value: a functional graph never sees the difference
    return TV(out.shape, out.dtype, lambda idx: cast(x.at(idx), out.dtype))


# -- factories --------------------------------------------------------------------------------

def _constant(lw: Lowering, node: fx.Node, value: Any) -> TV | None:
    out = meta_layout(node)
    natural = "bool" if isinstance(value, bool) else "int64" if isinstance(value, int) else "float64"
    const = cast(Const(value, natural), out.dtype)
    return TV(out.shape, out.dtype, lambda idx: const)


@register("aten.full.default", "aten.new_full.default")
def _full(lw: Lowering, node: fx.Node, *args: Any, **kw: Any) -> TV | None:
    return _constant(lw, node, args[-1] if node.target != "aten.new_full.default" else args[2])


@register("aten.full_like.default")
def _full_like(lw: Lowering, node: fx.Node, x: Any, value: Any, **kw: Any) -> TV | None:
    return _constant(lw, node, value)


@register("aten.scalar_tensor.default")
def _scalar_tensor(lw: Lowering, node: fx.Node, value: Any, **kw: Any) -> TV | None:
    return _constant(lw, node, value)


@register("aten.zeros_like.default", "aten.zeros.default", "aten.new_zeros.default", "aten.empty_like.default",
          "aten.empty.memory_format", "aten.new_empty.default", "aten.empty_strided.default",
          "aten.empty_permuted.default")
def _zeros(lw: Lowering, node: fx.Node, *args: Any, **kw: Any) -> TV | None:
    return _constant(lw, node, 0)  # empty: any value is correct, zero is one


@register("aten.ones_like.default", "aten.ones.default", "aten.new_ones.default")
def _ones(lw: Lowering, node: fx.Node, *args: Any, **kw: Any) -> TV | None:
    return _constant(lw, node, 1)


@register("aten.fill.Scalar")
def _fill(lw: Lowering, node: fx.Node, x: Any, value: Any) -> TV | None:
    return _constant(lw, node, value)


@register("aten.arange.start_step", "aten.arange.default", "aten.arange.start")
def _arange(lw: Lowering, node: fx.Node, *args: Any, **kw: Any) -> TV | None:
    nums = [a for a in args if isinstance(a, (int, float))]
    start, step = (0, 1)
    if len(nums) >= 2:
        start = nums[0]
    if len(nums) >= 3:
        step = nums[2]
    out = meta_layout(node)
    if not all(isinstance(v, int) for v in (start, step)):
        if not dtypes.is_float(out.dtype):
            return None

        def fload(idx: list[Affine]) -> Expr:
            i = cast(IndexValue(idx[0]), "float64")
            return cast(Op("add", (scalar(start, "float64"), Op("mul", (i, scalar(step, "float64")), "float64")),
                           "float64"), out.dtype)
        return TV(out.shape, out.dtype, fload)
    return TV(out.shape, out.dtype, lambda idx: cast(IndexValue(idx[0] * int(step) + int(start)), out.dtype))


@register("aten.iota.default")
def _iota(lw: Lowering, node: fx.Node, length: int, *, start: int = 0, step: int = 1, **kw: Any) -> TV | None:
    out = meta_layout(node)
    return TV(out.shape, out.dtype, lambda idx: cast(IndexValue(idx[0] * step + start), out.dtype))


@register("aten.triu.default", "aten.tril.default")
def _tri(lw: Lowering, node: fx.Node, x: Any, diagonal: int = 0) -> TV | None:
    upper = "triu" in str(node.target)

    def load(idx: list[Affine]) -> Expr:
        diff = IndexValue(idx[-1] - idx[-2])
        keep = Op("ge" if upper else "le", (diff, Const(int(diagonal), "int64")), "bool")
        return Op("where", (keep, x.at(idx), cast(Const(0, "int64"), x.dtype)), x.dtype)

    return TV(x.shape, x.dtype, load)
