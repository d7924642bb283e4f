"""Pointwise ops as Triton expressions with torch's exact semantics.

Operands arrive in the kernel's *compute* representation of their dtype (16-bit floats as fp32
values already rounded to their dtype, bool as ``tl.int1``, ints and fp32/fp64 as themselves);
the lowering has already cast them to the dtype torch computes the op in (its promoted dtype),
so a rule only spells the math. The writer rounds a 16-bit result back to its dtype after every
op, as eager does per op: 16-bit chains match eager bit for bit where fp32 math does.

Knowledge kept from the earlier expert kernels: torch's special cases of ``pow`` by a scalar
(``x*x`` for 2, ``sqrt`` for 0.5, ...), NaN-propagating max/min/clamp/relu, ``round`` half to
even, ``gelu``'s exact constants, ``softplus``'s threshold, tanh/expm1/log1p that keep precision
near 0 (:mod:`agents.expert.helpers`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from agents.expert.ir.dtypes import TL, compute, is_float

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_2_OVER_PI = 0.7978845608028654
_INV_SQRT2 = 0.7071067811865476
_LOG10_E = 0.4342944819032518
_NAN = "propagate_nan=tl.PropagateNan.ALL"

Rule = Callable[[list[str], list[str], str, dict[str, Any]], str]


def literal(value: Any, dtype: str = "float32") -> str:
    """A Python number as a Triton literal of ``dtype`` (fp64 constants keep all their digits)."""
    if isinstance(value, bool) or dtype == "bool":
        return "1" if value else "0"
    if dtype.startswith(("int", "uint")):
        return str(int(value))
    v = float(value)
    if math.isnan(v):
        text = 'float("nan")'
    elif math.isinf(v):
        text = 'float("inf")' if v > 0 else 'float("-inf")'
    else:
        text = repr(v)
    if dtype == "float64":
        return f"tl.full([], {text}, tl.float64)"
    return text


def _f(dtype: str, value: float) -> str:
    return literal(value, compute(dtype))


def _bin(sym: str) -> Rule:
    return lambda a, t, d, p: f"({a[0]} {sym} {a[1]})"


def _un(fmt: str) -> Rule:
    return lambda a, t, d, p: fmt.format(x=a[0])


def _max(a: str, b: str, dtype: str) -> str:
    return f"tl.maximum({a}, {b}, {_NAN})" if is_float(dtype) else f"tl.maximum({a}, {b})"


def _min(a: str, b: str, dtype: str) -> str:
    return f"tl.minimum({a}, {b}, {_NAN})" if is_float(dtype) else f"tl.minimum({a}, {b})"


def _clamp(x: str, lo: Any, hi: Any, dtype: str) -> str:
    out = x if lo is None else _max(x, literal(lo, compute(dtype)), dtype)
    return out if hi is None else _min(out, literal(hi, compute(dtype)), dtype)


def _pow_scalar(a: list[str], t: list[str], d: str, p: dict[str, Any]) -> str:
    x, e = a[0], float(p["exponent"])
    exact = {
        0.0: "tl.where({x} == {x}, 1.0, 1.0)", 1.0: "{x}", 2.0: "({x} * {x})", 3.0: "({x} * {x} * {x})",
        4.0: "(({x} * {x}) * ({x} * {x}))", 0.5: "tl.sqrt({x})", -0.5: "tl.rsqrt({x})", -1.0: "(1.0 / {x})",
        -2.0: "(1.0 / ({x} * {x}))",
    }
    if e in exact:
        return exact[e].format(x=x)
    mag = f"tl.exp2({_f(d, e)} * tl.log2(tl.abs({x})))"
    if e != math.floor(e):
        return f'tl.where({x} < 0.0, float("nan"), {mag})'
    if e % 2 == 1:
        return f"tl.where({x} < 0.0, -{mag}, {mag})"
    return mag


def _gelu(a: list[str], t: list[str], d: str, p: dict[str, Any]) -> str:
    x = a[0]
    if p.get("approximate", "none") == "tanh":
        return f"(0.5 * {x} * (1.0 + _egg_tanh({_SQRT_2_OVER_PI} * ({x} + 0.044715 * {x} * {x} * {x}))))"
    return f"(0.5 * {x} * (1.0 + tl.erf({x} * {_INV_SQRT2})))"


def _lerp(a: list[str], t: list[str], d: str, p: dict[str, Any]) -> str:
    s, e, w = a
    return f"tl.where(tl.abs({w}) < 0.5, {s} + {w} * ({e} - {s}), {e} - ({e} - {s}) * (1.0 - {w}))"


def _elu(a: list[str], t: list[str], d: str, p: dict[str, Any]) -> str:
    x = a[0]
    alpha, scale, iscale = p.get("alpha", 1.0), p.get("scale", 1.0), p.get("input_scale", 1.0)
    neg = f"{_f(d, alpha)} * _egg_expm1({x} * {_f(d, iscale)})"
    body = f"tl.where({x} > 0.0, {x}, {neg})"
    return body if scale == 1.0 else f"({_f(d, scale)} * {body})"


def _div_mode(a: list[str], t: list[str], d: str, p: dict[str, Any]) -> str:
    mode = p.get("rounding_mode")
    if is_float(d):
        q = f"({a[0]} / {a[1]})"
        return f"tl.floor({q})" if mode == "floor" else f"_egg_trunc({q})"
    return f"_egg_floordiv({a[0]}, {a[1]})" if mode == "floor" else f"_egg_truncdiv({a[0]}, {a[1]})"


def _remainder(a: list[str], t: list[str], d: str, p: dict[str, Any]) -> str:
    if is_float(d):
        return f"({a[0]} - tl.floor({a[0]} / {a[1]}) * {a[1]})"
    return f"({a[0]} - _egg_floordiv({a[0]}, {a[1]}) * {a[1]})"


def _fmod(a: list[str], t: list[str], d: str, p: dict[str, Any]) -> str:
    if is_float(d):
        return f"({a[0]} - _egg_trunc({a[0]} / {a[1]}) * {a[1]})"
    return f"({a[0]} - _egg_truncdiv({a[0]}, {a[1]}) * {a[1]})"


def _cast(a: list[str], t: list[str], d: str, p: dict[str, Any]) -> str:
    src, dst = compute(t[0]), compute(d)
    if src == dst:
        return a[0]
    if dst == "bool":
        return f"({a[0]} != 0)"
    return f"{a[0]}.to({TL[dst]})"


_RULES: dict[str, Rule] = {
    "to": _cast,
    "add": _bin("+"), "sub": _bin("-"), "mul": _bin("*"), "div": _bin("/"), "div_mode": _div_mode,
    "neg": _un("(-{x})"), "reciprocal": _un("(1.0 / {x})"), "abs": _un("tl.abs({x})"),
    "remainder": _remainder, "fmod": _fmod,
    "maximum": lambda a, t, d, p: _max(a[0], a[1], d), "minimum": lambda a, t, d, p: _min(a[0], a[1], d),
    "fmax": lambda a, t, d, p: f"tl.maximum({a[0]}, {a[1]})", "fmin": lambda a, t, d, p: f"tl.minimum({a[0]}, {a[1]})",
    "pow_scalar": _pow_scalar, "pow": lambda a, t, d, p: f"_egg_pow({a[0]}, {a[1]})",
    "exp": _un("tl.exp({x})"), "exp2": _un("tl.exp2({x})"), "expm1": _un("_egg_expm1({x})"),
    "log": _un("tl.log({x})"), "log2": _un("tl.log2({x})"), "log10": _un(f"(tl.log({{x}}) * {_LOG10_E})"),
    "log1p": _un("_egg_log1p({x})"), "sqrt": _un("tl.sqrt({x})"), "rsqrt": _un("tl.rsqrt({x})"),
    "sin": _un("tl.sin({x})"), "cos": _un("tl.cos({x})"), "tan": _un("(tl.sin({x}) / tl.cos({x}))"),
    "round_tf32": _un("_egg_round_tf32({x})"),  # an fp32 GEMM operand rounded as cuDNN rounds for TF32
    "erf": _un("tl.erf({x})"), "erfc": _un("(1.0 - tl.erf({x}))"), "tanh": _un("_egg_tanh({x})"),
    "sigmoid": _un("tl.sigmoid({x})"), "hypot": lambda a, t, d, p: f"tl.sqrt({a[0]} * {a[0]} + {a[1]} * {a[1]})",
    "sinh": _un("(0.5 * (tl.exp({x}) - tl.exp(-{x})))"), "cosh": _un("(0.5 * (tl.exp({x}) + tl.exp(-{x})))"),
    "relu": lambda a, t, d, p: f"tl.where({a[0]} < 0, 0, {a[0]})" if not is_float(d) else f"tl.where({a[0]} < 0.0, 0.0, {a[0]})",
    "clamp": lambda a, t, d, p: _clamp(a[0], p.get("min"), p.get("max"), d),
    "hardsigmoid": lambda a, t, d, p: f"({_clamp(a[0] + ' + 3.0', 0.0, 6.0, d)} / 6.0)",
    "hardswish": lambda a, t, d, p: f"({a[0]} * {_clamp(a[0] + ' + 3.0', 0.0, 6.0, d)} / 6.0)",
    "gelu": _gelu, "silu": _un("({x} * tl.sigmoid({x}))"),
    "mish": _un("_egg_mish({x})"),
    "softplus": lambda a, t, d, p: f"_egg_softplus({a[0]}, {_f(d, p.get('beta', 1.0))}, {_f(d, p.get('threshold', 20.0))})",
    "leaky_relu": lambda a, t, d, p: f"tl.where({a[0]} > 0.0, {a[0]}, {a[0]} * {_f(d, p.get('negative_slope', 0.01))})",
    "elu": _elu,
    "selu": _un(f"({_SELU_SCALE} * tl.where({{x}} > 0.0, {{x}}, {_SELU_ALPHA} * _egg_expm1({{x}})))"),
    "logsigmoid": _un("(tl.minimum({x}, 0.0) - _egg_log1p(tl.exp(-tl.abs({x}))))"),
    "threshold": lambda a, t, d, p: f"tl.where({a[0]} <= {_f(d, p['threshold'])}, {_f(d, p['value'])}, {a[0]})",
    "hardshrink": lambda a, t, d, p: f"tl.where(tl.abs({a[0]}) > {_f(d, p.get('lambd', 0.5))}, {a[0]}, {a[0]} * 0.0)",
    "sign": lambda a, t, d, p: f"tl.where({a[0]} > 0, 1, tl.where({a[0]} < 0, -1, 0)).to({TL[compute(d)]})",
    "floor": _un("tl.floor({x})"), "ceil": _un("tl.ceil({x})"), "trunc": _un("_egg_trunc({x})"),
    "round": _un("_egg_round({x})"), "frac": _un("({x} - _egg_trunc({x}))"),
    "eq": _bin("=="), "ne": _bin("!="), "lt": _bin("<"), "le": _bin("<="), "gt": _bin(">"), "ge": _bin(">="),
    "logical_and": _bin("&"), "logical_or": _bin("|"), "logical_xor": _bin("^"), "logical_not": _un("({x} == 0)"),
    "bitwise_and": _bin("&"), "bitwise_or": _bin("|"), "bitwise_xor": _bin("^"), "bitwise_not": _un("(~{x})"),
    "bitwise_left_shift": _bin("<<"), "bitwise_right_shift": _bin(">>"),
    "isnan": _un("({x} != {x})"),
    "isinf": _un('(tl.abs({x}) == float("inf"))'),
    "where": lambda a, t, d, p: f"tl.where({a[0]}, {a[1]}, {a[2]})",
    "lerp": _lerp,
}
SUPPORTED: frozenset[str] = frozenset(_RULES)


def render(op: str, args: list[str], arg_dtypes: list[str], dtype: str, params: dict[str, Any]) -> str:
    """The Triton expression of ``op`` (a result in ``compute(dtype)``)."""
    rule = _RULES.get(op)
    if rule is None:
        raise ValueError(f"no Triton expression for pointwise op {op!r}")
    return rule(args, arg_dtypes, dtype, params)


def round_to(expr: str, dtype: str) -> str:
    """Round an fp32 value to a 16-bit ``dtype`` and back: torch rounds every op's result."""
    if dtype in ("float16", "bfloat16"):
        return f"{_paren(expr)}.to({TL[dtype]}).to(tl.float32)"
    return expr


def _paren(expr: str) -> str:
    if expr.isidentifier():
        return expr
    if expr.startswith("(") and expr.endswith(")"):
        depth = 0
        for i, ch in enumerate(expr):
            depth += (ch == "(") - (ch == ")")
            if depth == 0 and i < len(expr) - 1:
                return f"({expr})"
        return expr
    return f"({expr})"
