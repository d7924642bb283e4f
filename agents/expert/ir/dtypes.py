"""Dtype names and torch's type promotion, as the IR needs them.

The IR names dtypes as torch does without the ``torch.`` prefix (``"float16"``, ``"int64"``,
``"bool"``). Kernels compute 16-bit floats in fp32 (and round each op's result back to its dtype
where eager would, see ``agents.expert.ops``); every other dtype is computed as itself.
"""

from __future__ import annotations

from typing import Any

import torch

FLOATS = ("float16", "bfloat16", "float32", "float64")
HALVES = ("float16", "bfloat16")
INTS = ("int8", "int16", "int32", "int64", "uint8")
TL = {"float16": "tl.float16", "bfloat16": "tl.bfloat16", "float32": "tl.float32", "float64": "tl.float64",
      "int8": "tl.int8", "int16": "tl.int16", "int32": "tl.int32", "int64": "tl.int64", "uint8": "tl.uint8",
      "bool": "tl.int1"}


def name(dtype: torch.dtype | str) -> str:
    text = str(dtype).removeprefix("torch.")
    if text not in TL:
        raise ValueError(f"dtype {text} is not computed by the expert kernels")
    return text


def supported(dtype: torch.dtype | str) -> bool:
    return str(dtype).removeprefix("torch.") in TL


def compute(dtype: str) -> str:
    """The dtype a kernel holds values of ``dtype`` in (16-bit floats: fp32)."""
    return "float32" if dtype in HALVES else dtype


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def is_int(dtype: str) -> bool:
    return dtype in INTS


def itemsize(dtype: str) -> int:
    return getattr(torch, dtype).itemsize  # type: ignore[no-any-return]


def _category(dtype: str) -> int:
    return 0 if dtype == "bool" else 1 if dtype in INTS else 2


def _scalar_dtype(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    return name(torch.get_default_dtype())


def promote(operands: list[tuple[str, int] | Any]) -> str:
    """torch's result dtype of an elementwise op. ``operands``: ``(dtype, ndim)`` for tensors,
    Python numbers for scalars. Dimensioned tensors win over 0-d tensors, which win over
    scalars, unless a lower-priority operand is of a higher category (bool < int < float)."""
    dims = [d for d, n in (o for o in operands if isinstance(o, tuple)) if n > 0]
    zero = [d for d, n in (o for o in operands if isinstance(o, tuple)) if n == 0]
    scalars = [o for o in operands if not isinstance(o, tuple)]
    result: str | None = None
    for group in (dims, zero):
        if not group:
            continue
        cand = group[0]
        for d in group[1:]:
            cand = name(torch.promote_types(getattr(torch, cand), getattr(torch, d)))
        if result is None or _category(cand) > _category(result):
            result = cand
    for s in scalars:
        sd = _scalar_dtype(s)
        if result is None:
            result = sd if result is None else result
        elif _category(sd) > _category(result):
            result = sd
    return result or name(torch.get_default_dtype())
