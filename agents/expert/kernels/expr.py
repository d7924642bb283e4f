"""Canonical elementwise ops as Triton expressions, with torch's exact semantics.

Every kernel template computes in fp32 registers: operands arrive as fp32 Triton expressions
(loads already converted with ``.to(tl.float32)``; booleans are fp32 ``0.0``/``1.0``), and
:func:`tl_expr` returns an fp32 expression. Comparisons and logical ops therefore yield 0/1
floats; ``where`` tests ``cond != 0``. A template stores a boolean output as ``value != 0``.

Stable API (the reduction templates use it too)::

    SUPPORTED_ELEMENTWISE                  # canonical keys (egg.analysis.optable) handled here
    unsupported_reason(op, kwargs)         # None, or why this op/kwargs cannot be fused exactly
    tl_expr(op, operands, kwargs) -> str   # fp32 Triton expression
    literal(value) -> str                  # a Python scalar as a Triton fp32 literal
    round_to_dtype(expr, dtype) -> str     # emulate torch's per-op rounding for 16-bit dtypes
    helper_source(text) -> str             # @triton.jit helpers that ``text`` calls (_egg_*)
    TL_DTYPES                              # torch dtype name -> "tl.float16", ...

Operands should be names (each template binds every node to a variable): several expressions
repeat an operand, which is free for a name. Expressions may call ``_egg_*`` helpers; the codegen
pastes :func:`helper_source` of all kernels into the candidate once, so templates need not.

Operand and kwarg conventions (kwargs use torch's parameter names; all static scalars):

* unary ops: ``[x]``; ``gelu`` {approximate}, ``leaky_relu`` {negative_slope}, ``elu``/``celu``
  {alpha}, ``softplus`` {beta, threshold}, ``hardtanh`` {min_val, max_val}, ``clamp``/``clip``
  {min, max} (tensor bounds: the codegen emits maximum/minimum instead), ``clamp_min`` {min},
  ``clamp_max`` {max}, ``threshold`` {threshold, value}, ``hardshrink``/``softshrink`` {lambd},
  ``pow`` {exponent} (scalar exponent), ``round`` {decimals}, casts (``to``/``float``/``half``/
  ``type``/...) and ``dropout``/``clone``/``identity``: the value itself (the node's dtype does the
  cast; see :func:`round_to_dtype`).
* binary ops: ``[a, b]``; ``add``/``sub``/``rsub`` {alpha}; ``pow`` with two operands is
  tensor**tensor or scalar**tensor.
* ``where``: ``[cond, a, b]``; ``addcmul``/``addcdiv``: ``[x, t1, t2]`` {value};
  ``lerp``: ``[start, end, weight]`` or ``[start, end]`` {weight}.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from agents.expert.kernels.host_helpers import HOST_HELPERS

TL_DTYPES: dict[str, str] = {
    "float32": "tl.float32",
    "float16": "tl.float16",
    "bfloat16": "tl.bfloat16",
    "float64": "tl.float64",
    "bool": "tl.int1",
}
FLOAT_DTYPES = frozenset({"float32", "float16", "bfloat16"})
# Integer inputs whose every value is exact in fp16, bf16 and fp32: a fused op reading one (an
# int8 weight's ``.to(x.dtype)``) computes what torch computes after its own cast to the op's
# dtype. Wider integers are not (int16 in bf16 rounds), so those stay torch ops.
EXACT_INT_DTYPES = frozenset({"int8", "uint8"})

# The same ops under other spellings (optable keys that are not aliased there).
ALIASES: dict[str, str] = {
    "swish": "silu", "clip": "clamp", "sgn": "sign", "true_divide": "div", "truediv": "div",
    "log_sigmoid": "logsigmoid", "bitwise_not": "logical_not", "invert": "logical_not",
    "and": "logical_and", "or": "logical_or", "xor": "logical_xor", "bitwise_and": "logical_and",
    "bitwise_or": "logical_or", "bitwise_xor": "logical_xor", "fmax": "fmax", "fmin": "fmin",
    "iadd": "add", "isub": "sub", "imul": "mul", "itruediv": "div", "positive": "pos",
    "multiply": "mul", "subtract": "sub", "divide": "div", "negative": "neg", "absolute": "abs",
    "greater": "gt", "less": "lt", "greater_equal": "ge", "less_equal": "le", "not_equal": "ne",
    "equal_elementwise": "eq",
}
_IDENTITY = frozenset(
    ["identity", "clone", "contiguous", "to", "type", "type_as", "float", "half", "bfloat16", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "pos"]
)
_DROPOUTS = frozenset(k for k in _IDENTITY if "dropout" in k)
_CASTS = frozenset({"to", "type", "type_as", "float", "half", "bfloat16"})

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_2_OVER_PI = 0.7978845608028654  # sqrt(2 / pi), torch's kBeta for gelu(approximate="tanh")
_INV_SQRT2 = 0.7071067811865476
_LOG10_E = 0.4342944819032518
_NAN_MAX = "propagate_nan=tl.PropagateNan.ALL"  # torch.maximum/clamp/relu6 propagate NaN


def literal(value: Any) -> str:
    """A Python scalar as a Triton literal: always a float, so it never turns math into ints."""
    if isinstance(value, str):
        return value  # already an expression
    v = float(value)
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("inf")' if v > 0 else '(-float("inf"))'
    return repr(v)


def _kw(kwargs: dict[str, Any], name: str, default: Any) -> Any:
    value = kwargs.get(name, default)
    return default if value is None else value


def _max(a: str, b: str) -> str:
    return f"tl.maximum({a}, {b}, {_NAN_MAX})"


def _min(a: str, b: str) -> str:
    return f"tl.minimum({a}, {b}, {_NAN_MAX})"


def _flag(cond: str) -> str:
    return f"tl.where({cond}, 1.0, 0.0)"


def _clamp(x: str, lo: Any, hi: Any) -> str:
    out = x if lo is None else _max(x, literal(lo))
    return out if hi is None else _min(out, literal(hi))


def _pow_scalar(x: str, e: float) -> str:
    """``x ** e`` for a scalar exponent; torch special-cases the same exponents (x*x for 2, ...)."""
    exact = {
        0.0: "tl.where({x} == {x}, 1.0, 1.0)",  # 1 everywhere, NaN included, in x's shape
        1.0: "{x}", 2.0: "({x} * {x})", 3.0: "({x} * {x} * {x})", 4.0: "(({x} * {x}) * ({x} * {x}))",
        0.5: "tl.sqrt({x})", -0.5: "tl.rsqrt({x})", -1.0: "(1.0 / {x})", -2.0: "(1.0 / ({x} * {x}))",
    }
    if e in exact:
        return exact[e].format(x=x)
    magnitude = f"tl.exp2({literal(e)} * tl.log2(tl.abs({x})))"
    if e != math.floor(e):  # a negative base has no real power
        return f"tl.where({x} < 0.0, float(\"nan\"), {magnitude})"
    if e % 2 == 1:  # odd integer exponent: the sign of the base survives
        return f"tl.where({x} < 0.0, -{magnitude}, {magnitude})"
    return magnitude


def _binary(sym: str) -> Callable[[list[str], dict[str, Any]], str]:
    return lambda o, k: f"({o[0]} {sym} {o[1]})"


def _unary(fmt: str) -> Callable[[list[str], dict[str, Any]], str]:
    return lambda o, k: fmt.format(x=o[0])


def _add(o: list[str], k: dict[str, Any]) -> str:
    alpha = _kw(k, "alpha", 1)
    return f"({o[0]} + {o[1]})" if alpha == 1 else f"({o[0]} + {literal(alpha)} * {o[1]})"


def _sub(o: list[str], k: dict[str, Any]) -> str:
    alpha = _kw(k, "alpha", 1)
    return f"({o[0]} - {o[1]})" if alpha == 1 else f"({o[0]} - {literal(alpha)} * {o[1]})"


def _rsub(o: list[str], k: dict[str, Any]) -> str:
    return _sub([o[1], o[0]], k)


def _pow(o: list[str], k: dict[str, Any]) -> str:
    if len(o) == 1:
        return _pow_scalar(o[0], float(_kw(k, "exponent", 1.0)))
    return f"_egg_pow({o[0]}, {o[1]})"


def _gelu(o: list[str], k: dict[str, Any]) -> str:
    x = o[0]
    if _kw(k, "approximate", "none") == "tanh":
        return f"(0.5 * {x} * (1.0 + _egg_tanh({_SQRT_2_OVER_PI} * ({x} + 0.044715 * {x} * {x} * {x}))))"
    return f"(0.5 * {x} * (1.0 + tl.erf({x} * {_INV_SQRT2})))"


def _softplus(o: list[str], k: dict[str, Any]) -> str:
    return f"_egg_softplus({o[0]}, {literal(_kw(k, 'beta', 1.0))}, {literal(_kw(k, 'threshold', 20.0))})"


def _lerp(o: list[str], k: dict[str, Any]) -> str:
    start, end = o[0], o[1]
    w = o[2] if len(o) > 2 else literal(_kw(k, "weight", 0.5))
    # torch's formula: exact at both ends for weights in [0, 1]
    return (f"tl.where(tl.abs({w}) < 0.5, {start} + {w} * ({end} - {start}), "
            f"{end} - ({end} - {start}) * (1.0 - {w}))")


def _celu(o: list[str], k: dict[str, Any]) -> str:
    a = literal(_kw(k, "alpha", 1.0))
    return f"tl.where({o[0]} > 0.0, {o[0]}, {a} * _egg_expm1({o[0]} / {a}))"


def _elu(o: list[str], k: dict[str, Any]) -> str:
    a = literal(_kw(k, "alpha", 1.0))
    return f"tl.where({o[0]} > 0.0, {o[0]}, {a} * _egg_expm1({o[0]}))"


def _softshrink(o: list[str], k: dict[str, Any]) -> str:
    lam = literal(_kw(k, "lambd", 0.5))
    x = o[0]
    return f"tl.where({x} > {lam}, {x} - {lam}, tl.where({x} < -{lam}, {x} + {lam}, {x} * 0.0))"


_RULES: dict[str, Callable[[list[str], dict[str, Any]], str]] = {
    # arithmetic
    "add": _add, "sub": _sub, "rsub": _rsub, "mul": _binary("*"), "div": _binary("/"),
    "neg": _unary("(-{x})"), "square": _unary("({x} * {x})"), "reciprocal": _unary("(1.0 / {x})"),
    "abs": _unary("tl.abs({x})"), "pow": _pow,
    "addcmul": lambda o, k: f"({o[0]} + {literal(_kw(k, 'value', 1.0))} * {o[1]} * {o[2]})",
    "addcdiv": lambda o, k: f"({o[0]} + {literal(_kw(k, 'value', 1.0))} * ({o[1]} / {o[2]}))",
    "lerp": _lerp,
    "maximum": lambda o, k: _max(o[0], o[1]), "minimum": lambda o, k: _min(o[0], o[1]),
    "fmax": lambda o, k: f"tl.maximum({o[0]}, {o[1]})", "fmin": lambda o, k: f"tl.minimum({o[0]}, {o[1]})",
    # transcendental
    "exp": _unary("tl.exp({x})"), "exp2": _unary("tl.exp2({x})"), "expm1": _unary("_egg_expm1({x})"),
    "log": _unary("tl.log({x})"), "log2": _unary("tl.log2({x})"),
    "log10": _unary("(tl.log({x}) * " + str(_LOG10_E) + ")"), "log1p": _unary("_egg_log1p({x})"),
    "sqrt": _unary("tl.sqrt({x})"), "rsqrt": _unary("tl.rsqrt({x})"),
    "sin": _unary("tl.sin({x})"), "cos": _unary("tl.cos({x})"), "tan": _unary("(tl.sin({x}) / tl.cos({x}))"),
    "erf": _unary("tl.erf({x})"), "erfc": _unary("(1.0 - tl.erf({x}))"),
    "tanh": _unary("_egg_tanh({x})"), "sigmoid": _unary("tl.sigmoid({x})"),
    # activations
    "relu": _unary("tl.where({x} < 0.0, 0.0, {x})"),  # NaN stays NaN, as in torch
    "relu6": lambda o, k: _clamp(o[0], 0.0, 6.0),
    "hardtanh": lambda o, k: _clamp(o[0], _kw(k, "min_val", -1.0), _kw(k, "max_val", 1.0)),
    "clamp": lambda o, k: _clamp(o[0], k.get("min"), k.get("max")),
    "clamp_min": lambda o, k: _clamp(o[0], k.get("min"), None),
    "clamp_max": lambda o, k: _clamp(o[0], None, k.get("max")),
    "hardsigmoid": lambda o, k: f"({_clamp(o[0] + ' + 3.0', 0.0, 6.0)} / 6.0)",
    "hardswish": lambda o, k: f"({o[0]} * {_clamp(o[0] + ' + 3.0', 0.0, 6.0)} / 6.0)",
    "gelu": _gelu, "silu": _unary("({x} * tl.sigmoid({x}))"),
    "mish": _unary("({x} * _egg_tanh(_egg_softplus({x}, 1.0, 20.0)))"),
    "softplus": _softplus, "softsign": _unary("({x} / (1.0 + tl.abs({x})))"),
    "leaky_relu": lambda o, k: f"tl.where({o[0]} > 0.0, {o[0]}, {o[0]} * {literal(_kw(k, 'negative_slope', 0.01))})",
    "elu": _elu, "celu": _celu,
    "selu": _unary(f"({_SELU_SCALE} * tl.where({{x}} > 0.0, {{x}}, {_SELU_ALPHA} * _egg_expm1({{x}})))"),
    "logsigmoid": _unary("(tl.minimum({x}, 0.0) - _egg_log1p(tl.exp(-tl.abs({x}))))"),
    "tanhshrink": _unary("({x} - _egg_tanh({x}))"),
    "threshold": lambda o, k: f"tl.where({o[0]} > {literal(k['threshold'])}, {o[0]}, {literal(k['value'])})",
    "hardshrink": lambda o, k: f"tl.where(tl.abs({o[0]}) > {literal(_kw(k, 'lambd', 0.5))}, {o[0]}, {o[0]} * 0.0)",
    "softshrink": _softshrink,
    # rounding and sign
    "sign": _unary("tl.where({x} > 0.0, 1.0, tl.where({x} < 0.0, -1.0, 0.0))"),
    "floor": _unary("tl.floor({x})"), "ceil": _unary("tl.ceil({x})"),
    "trunc": _unary("_egg_trunc({x})"), "frac": _unary("({x} - _egg_trunc({x}))"),
    "round": _unary("_egg_round({x})"),
    # comparisons and logic: 0/1 floats
    "eq": lambda o, k: _flag(f"{o[0]} == {o[1]}"), "ne": lambda o, k: _flag(f"{o[0]} != {o[1]}"),
    "lt": lambda o, k: _flag(f"{o[0]} < {o[1]}"), "le": lambda o, k: _flag(f"{o[0]} <= {o[1]}"),
    "gt": lambda o, k: _flag(f"{o[0]} > {o[1]}"), "ge": lambda o, k: _flag(f"{o[0]} >= {o[1]}"),
    "logical_and": lambda o, k: _flag(f"({o[0]} != 0.0) & ({o[1]} != 0.0)"),
    "logical_or": lambda o, k: _flag(f"({o[0]} != 0.0) | ({o[1]} != 0.0)"),
    "logical_xor": lambda o, k: _flag(f"({o[0]} != 0.0) ^ ({o[1]} != 0.0)"),
    "logical_not": lambda o, k: _flag(f"{o[0]} == 0.0"),
    "isnan": lambda o, k: _flag(f"{o[0]} != {o[0]}"),
    "isinf": lambda o, k: _flag(f"({o[0]} == {o[0]}) & (({o[0]} - {o[0]}) != ({o[0]} - {o[0]}))"),
    "isfinite": lambda o, k: _flag(f"({o[0]} - {o[0]}) == ({o[0]} - {o[0]})"),
    "where": lambda o, k: f"tl.where({o[0]} != 0.0, {o[1]}, {o[2]})",
}
for _key in _IDENTITY:
    _RULES[_key] = _unary("{x}")

SUPPORTED_ELEMENTWISE: frozenset[str] = frozenset(_RULES) | frozenset(
    a for a, target in ALIASES.items() if target in _RULES
)


def canonical(op: str) -> str:
    return ALIASES.get(op, op)


def unsupported_reason(op: str, kwargs: dict[str, Any] | None = None) -> str | None:
    """None when ``tl_expr(op, ..., kwargs)`` computes exactly what torch computes; else why not."""
    kwargs = kwargs or {}
    key = canonical(op)
    if key not in _RULES:
        return f"no Triton expression for elementwise op {op!r}"
    if key in _DROPOUTS:
        p = float(_kw(kwargs, "p", 0.5))
        if p != 0.0 and kwargs.get("training", True):
            return f"{op}(p={p}) in training mode is random: it stays a torch call"
    if key == "gelu" and _kw(kwargs, "approximate", "none") not in ("none", "tanh"):
        return f"gelu(approximate={kwargs.get('approximate')!r}) is not a torch mode"
    if key == "round" and _kw(kwargs, "decimals", 0) != 0:
        return "round(decimals != 0) is not supported"
    if key == "div" and kwargs.get("rounding_mode") is not None:
        return f"div(rounding_mode={kwargs['rounding_mode']!r}) is not supported"
    if key == "threshold" and ("threshold" not in kwargs or "value" not in kwargs):
        return "threshold needs static threshold and value"
    if key in _CASTS and kwargs.get("dtype") not in (None, *FLOAT_DTYPES):
        return f"cast to {kwargs.get('dtype')} is not a float cast"
    for name, value in kwargs.items():
        if isinstance(value, str) and name not in ("approximate", "dtype", "rounding_mode", "memory_format"):
            return f"{op}: string argument {name}={value!r} is not understood"
    return None


def tl_expr(op: str, operands: list[str], kwargs: dict[str, Any] | None = None) -> str:
    """fp32 Triton expression computing ``op`` on fp32 ``operands`` (see the module docstring)."""
    kwargs = kwargs or {}
    reason = unsupported_reason(op, kwargs)
    if reason is not None:
        raise ValueError(reason)
    return _RULES[canonical(op)]([literal(o) for o in operands], kwargs)


def round_to_dtype(expr: str, dtype: str) -> str:
    """Round an fp32 value to ``dtype`` and back: torch rounds every op's result to its dtype, so
    doing the same keeps 16-bit chains (and comparisons inside them) identical to eager."""
    if dtype in ("float16", "bfloat16"):
        return f"{_parenthesised(expr)}.to({TL_DTYPES[dtype]}).to(tl.float32)"
    return expr


def _parenthesised(expr: str) -> str:
    """``expr`` safe to call a method on: wrapped in parentheses unless it already is one unit."""
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


# -- helpers ---------------------------------------------------------------------------------------
# Triton 3.6 has no tanh/expm1/log1p that also run in the CPU interpreter (libdevice does not), so
# these are written out. Each keeps fp32 relative precision near 0, where the naive formula cancels.

_HELPERS: dict[str, str] = {
    "_egg_tanh": '''
@triton.jit
def _egg_tanh(x):
    # tanh = (1 - e) / (1 + e) with e = exp(-2|x|): never overflows. Near 0 the subtraction
    # cancels, so a Taylor polynomial (error < 1e-9 relative below 0.0625) takes over.
    ax = tl.abs(x)
    e = tl.exp(-2.0 * ax)
    t = (1.0 - e) / (1.0 + e)
    x2 = ax * ax
    t = tl.where(ax < 0.0625, ax * (1.0 + x2 * (-0.3333333333333333 + x2 * 0.13333333333333333)), t)
    return tl.where(x < 0.0, -t, t)
''',
    "_egg_expm1": '''
@triton.jit
def _egg_expm1(x):
    # exp(x) - 1 cancels for small |x|: a degree-7 Taylor polynomial below 0.25 (error < 2e-9).
    p = x * (1.0 + x * (0.5 + x * (0.16666666666666666 + x * (0.041666666666666664 + x * (
        0.008333333333333333 + x * (0.001388888888888889 + x * 0.0001984126984126984))))))
    return tl.where(tl.abs(x) < 0.25, p, tl.exp(x) - 1.0)
''',
    "_egg_log1p": '''
@triton.jit
def _egg_log1p(x):
    # log(1 + x) loses x below ~1e-7: use 2 * atanh(s), s = x / (2 + x), as a series for |x| < 0.25.
    s = x / (2.0 + x)
    s2 = s * s
    p = 2.0 * s * (1.0 + s2 * (0.3333333333333333 + s2 * (0.2 + s2 * (0.14285714285714285 + s2 * 0.1111111111111111))))
    return tl.where(tl.abs(x) < 0.25, p, tl.log(1.0 + x))
''',
    "_egg_softplus": '''
@triton.jit
def _egg_softplus(x, beta, threshold):
    # torch: x where beta * x > threshold (exp would overflow), else log1p(exp(beta * x)) / beta
    xb = x * beta
    return tl.where(xb > threshold, x, _egg_log1p(tl.exp(xb)) / beta)
''',
    "_egg_trunc": '''
@triton.jit
def _egg_trunc(x):
    return tl.where(x < 0.0, tl.ceil(x), tl.floor(x))
''',
    "_egg_round": '''
@triton.jit
def _egg_round(x):
    # torch.round rounds half to even. x - floor(x) is exact in fp32, so the tie test is exact.
    r = tl.floor(x)
    d = x - r
    odd = (r - 2.0 * tl.floor(r * 0.5)) != 0.0
    return tl.where((d > 0.5) | ((d == 0.5) & odd), r + 1.0, r)
''',
    "_egg_pow": '''
@triton.jit
def _egg_pow(x, e):
    # torch.pow: |x|**e through exp2/log2; odd integer exponents keep the sign of a negative base,
    # other exponents of a negative base are NaN; x**0 is 1 even for x = 0 or NaN.
    r = tl.exp2(e * tl.log2(tl.abs(x)))
    is_int = tl.floor(e) == e
    odd = is_int & ((e - 2.0 * tl.floor(e * 0.5)) != 0.0)
    r = tl.where((x < 0.0) & odd, -r, r)
    r = tl.where((x < 0.0) & (~is_int), float("nan"), r)
    return tl.where(e == 0.0, 1.0, r)
''',
}
# helper -> helpers it calls (defined before it in the emitted source)
_HELPER_DEPS: dict[str, tuple[str, ...]] = {"_egg_softplus": ("_egg_log1p",)}
_HELPER_CALL = re.compile(r"\b(_egg_[a-z0-9_]+)\(")


def helper_source(text: str) -> str:
    """Definitions of every ``_egg_*`` helper that ``text`` calls, dependencies first (kernel
    helpers here, launcher helpers from :mod:`agents.expert.kernels.host_helpers`)."""
    ordered: list[str] = []

    def add(name: str) -> None:
        if name in ordered or name not in _HELPERS:
            return
        for dep in _HELPER_DEPS.get(name, ()):
            add(dep)
        ordered.append(name)

    called = dict.fromkeys(_HELPER_CALL.findall(text))
    for name in called:
        add(name)
    host = [HOST_HELPERS[n].strip() + "\n\n" for n in called if n in HOST_HELPERS]
    return "\n".join([_HELPERS[n].strip() + "\n\n" for n in ordered] + host)
