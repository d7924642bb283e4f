"""Value ranges of integer expressions: what a dequantising prologue's integers can hold.

``(q & 15).to(int8) - 8`` of a uint8 ``q`` is in [-8, 7] whatever ``q`` holds; the writer converts
such a narrow integer to a 16-bit float without a conversion instruction (an exponent's bit pattern
OR-ed with the integer, then one exact subtraction: ``Writer._exact_half``), which is most of a
weight-only int4 GEMM's per-element work. Ranges are sound over-approximations: a rule that cannot
bound its result gives the dtype's whole range, and an op whose exact range leaves its dtype (torch
would wrap) gives the whole range too.
"""

from __future__ import annotations

from agents.expert.ir.expr import Const, Expr, IndexValue, Load, Op

Range = tuple[int, int]

_BITS = {"bool": 1, "int8": 8, "uint8": 8, "int16": 16, "int32": 32, "int64": 64}
INT_DTYPES = ("int8", "uint8", "int16", "int32", "int64")  # (bool is not converted through a range)


def dtype_range(dtype: str) -> Range:
    if dtype == "bool":
        return 0, 1
    bits = _BITS[dtype]
    return (0, (1 << bits) - 1) if dtype.startswith("uint") else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


def _within(r: Range, dtype: str) -> Range:
    lo, hi = dtype_range(dtype)
    return r if lo <= r[0] <= r[1] <= hi else (lo, hi)


def int_range(e: Expr) -> Range:
    """Bounds of integer expression ``e`` (its dtype's range where nothing tighter is known)."""
    if e.dtype not in _BITS:
        raise ValueError(f"int_range of a {e.dtype} value")
    if isinstance(e, Const):
        return int(e.value), int(e.value)
    if isinstance(e, IndexValue):
        return _within(e.index.bounds(), e.dtype)
    if isinstance(e, Load) or not isinstance(e, Op) or any(a.dtype not in _BITS for a in e.args):
        return dtype_range(e.dtype)
    args = [int_range(a) for a in e.args]
    consts = [int(a.value) if isinstance(a, Const) else None for a in e.args]
    out: Range | None = None
    if e.op == "to":
        out = args[0]
    elif e.op == "add":
        out = args[0][0] + args[1][0], args[0][1] + args[1][1]
    elif e.op == "sub":
        out = args[0][0] - args[1][1], args[0][1] - args[1][0]
    elif e.op == "neg":
        out = -args[0][1], -args[0][0]
    elif e.op == "mul" and (consts[0] is not None or consts[1] is not None):
        c, (lo, hi) = (consts[0], args[1]) if consts[0] is not None else (consts[1], args[0])
        assert c is not None
        out = min(c * lo, c * hi), max(c * lo, c * hi)
    elif e.op == "bitwise_and" and any(c is not None and c >= 0 for c in consts):
        c = max(c for c in consts if c is not None and c >= 0)
        other = args[1] if consts[0] == c else args[0]
        out = (0, min(c, other[1])) if other[0] >= 0 else (0, c)  # two's complement: AND with c >= 0 is in [0, c]
    elif e.op == "bitwise_right_shift" and consts[1] is not None and 0 <= consts[1] < 64:
        out = args[0][0] >> consts[1], args[0][1] >> consts[1]  # arithmetic shift: floor division by 2**s
    return _within(out, e.dtype) if out is not None else dtype_range(e.dtype)


def _const(e: Expr, value: int) -> bool:
    return isinstance(e, Const) and int(e.value) == value


def nibble_of(e: Expr) -> tuple[Expr, bool, int] | None:
    """``(byte, high, c)`` where integer ``e`` is the low (or ``high``) nibble of the 8-bit integer
    ``byte``, plus ``c``, with no wrap: ``(q & 15) - 8``, ``(q >> 4).to(int8) - 8`` of a uint8 ``q``,
    ``((q >> 4) & 15)`` of any 8-bit ``q`` (an int4 weight's unpacking, :func:`Writer` converts
    such nibbles to 16-bit floats four bytes at a time)."""
    c, x = 0, e
    if isinstance(x, Op) and x.op in ("add", "sub") and isinstance(x.args[1], Const):
        c, x = int(x.args[1].value) * (1 if x.op == "add" else -1), x.args[0]
    while isinstance(x, Op) and x.op == "to" and x.dtype in _BITS and x.dtype != "bool":
        x = x.args[0]
    if not isinstance(x, Op) or len(x.args) != 2:
        return None
    high = False
    if x.op == "bitwise_and" and _const(x.args[1], 15):
        x = x.args[0]
        if isinstance(x, Op) and x.op == "bitwise_right_shift" and _const(x.args[1], 4):
            high, x = True, x.args[0]
    elif x.op == "bitwise_right_shift" and _const(x.args[1], 4) and x.dtype == "uint8":
        high, x = True, x.args[0]
    else:
        return None
    if x.dtype not in ("uint8", "int8") or int_range(e) != (c, c + 15):  # (the sum must not wrap)
        return None
    return x, high, c
