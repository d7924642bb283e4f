"""Value ranges of integer expressions (ir/ranges.py): sound bounds for dequantising prologues, the
dtype's whole range wherever torch's arithmetic could wrap."""

from __future__ import annotations

from agents.expert.ir.expr import Const, Load, Op
from agents.expert.ir.index import Affine, Var
from agents.expert.ir.ranges import int_range, nibble_of

Q = Load("q", Affine.of(Var("k", 64)), "uint8")


def _op(op: str, a, b, dtype: str) -> Op:
    return Op(op, (a, b), dtype)


def test_nibbles_of_a_byte_minus_their_offset() -> None:
    low = _op("bitwise_and", Q, Const(15, "uint8"), "uint8")
    high = _op("bitwise_right_shift", Q, Const(4, "uint8"), "uint8")
    assert int_range(low) == (0, 15) and int_range(high) == (0, 15)
    centred = _op("sub", Op("to", (low,), "int8"), Const(8, "int8"), "int8")
    assert int_range(centred) == (-8, 7)
    assert int_range(_op("mul", centred, Const(-3, "int8"), "int8")) == (-21, 24)


def test_arithmetic_that_could_wrap_has_the_dtypes_range() -> None:
    w = Load("w", Affine.of(Var("k", 64)), "int8")
    assert int_range(_op("sub", w, Const(8, "int8"), "int8")) == (-128, 127)  # -128 - 8 wraps in int8
    assert int_range(Op("to", (Q,), "int8")) == (-128, 127)  # 200 becomes -56
    assert int_range(Op("to", (Q,), "int16")) == (0, 255)
    # AND with a non-negative mask is in [0, mask] even for negative values (two's complement)
    assert int_range(_op("bitwise_and", w, Const(7, "int8"), "int8")) == (0, 7)
    assert int_range(Op("exp2", (Q,), "uint8")) == (0, 255)  # nothing known about the op: the dtype's range


def test_a_nibble_of_a_byte_is_recognised_in_its_spellings_and_nothing_else_is() -> None:
    """What the GEMM operand writer converts four bytes a register (helpers._egg_nibble_half)."""
    w = Load("w", Affine.of(Var("k", 64)), "int8")
    low = _op("bitwise_and", Q, Const(15, "uint8"), "uint8")
    high = _op("bitwise_right_shift", Q, Const(4, "uint8"), "uint8")
    centred = _op("sub", Op("to", (low,), "int8"), Const(8, "int8"), "int8")
    assert nibble_of(centred) == (Q, False, -8)
    assert nibble_of(_op("sub", Op("to", (high,), "int8"), Const(8, "int8"), "int8")) == (Q, True, -8)
    masked_high = _op("bitwise_and", _op("bitwise_right_shift", w, Const(4, "int8"), "int8"), Const(15, "int8"), "int8")
    assert nibble_of(masked_high) == (w, True, 0)  # an int8 byte's high nibble needs the mask
    assert nibble_of(_op("bitwise_right_shift", w, Const(4, "int8"), "int8")) is None  # sign-extended: not a nibble
    assert nibble_of(_op("bitwise_and", Q, Const(7, "uint8"), "uint8")) is None  # three bits
    assert nibble_of(_op("add", Op("to", (low,), "int8"), Const(120, "int8"), "int8")) is None  # 135 wraps in int8
    word = Load("qw", Affine.of(Var("k", 64)), "int32")
    assert nibble_of(_op("bitwise_and", word, Const(15, "int32"), "int32")) is None  # not a byte
