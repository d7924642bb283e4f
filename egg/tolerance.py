"""Correctness tolerance per output dtype.

Policy (documented in the README): fp32 outputs must match within 1e-4 absolute *and* relative
(``torch.allclose(out, ref, atol, rtol)``), fp16 and bf16 within 1e-2, fp64 within 1e-7, integer
and boolean outputs exactly. A problem may override with a module-level ``TOLERANCE``:

* a number: used as both atol and rtol for every floating dtype;
* ``{"atol": a, "rtol": r}``: for every floating dtype;
* ``{"float16": 2e-2, "float32": {"atol": 1e-3, "rtol": 1e-4}}``: per dtype name.

Backend flags are PyTorch's defaults (matmul TF32 off, cuDNN TF32 on: :mod:`egg.evaluate`), so an
fp32 GEMM is checked against fp32 arithmetic unless the problem sets ``ALLOW_TF32 = True`` or the
user passes ``--allow-tf32``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from egg.errors import EggInputError


class Tolerance(BaseModel):
    atol: float
    rtol: float


DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(atol=1e-7, rtol=1e-7),
    "float32": Tolerance(atol=1e-4, rtol=1e-4),
    "float16": Tolerance(atol=1e-2, rtol=1e-2),
    "bfloat16": Tolerance(atol=1e-2, rtol=1e-2),
}
EXACT = Tolerance(atol=0.0, rtol=0.0)
FLOAT_DTYPES = tuple(DEFAULT_TOLERANCES)


def _as_tolerance(value: Any, origin: str) -> Tolerance:
    if isinstance(value, bool):
        raise EggInputError(f"{origin}: expected a number or {{'atol': .., 'rtol': ..}}, got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise EggInputError(f"{origin}: tolerance must be >= 0, got {value}")
        return Tolerance(atol=float(value), rtol=float(value))
    if isinstance(value, dict) and set(value) <= {"atol", "rtol"} and value:
        try:
            return Tolerance(atol=float(value.get("atol", 0.0)), rtol=float(value.get("rtol", 0.0)))
        except (TypeError, ValueError):
            pass
    raise EggInputError(f"{origin}: expected a number or {{'atol': .., 'rtol': ..}}, got {value!r}")


def resolve_tolerances(override: Any, origin: str = "TOLERANCE") -> dict[str, Tolerance]:
    """Merge a problem's ``TOLERANCE`` value into the default table (validated, one-line errors)."""
    table = dict(DEFAULT_TOLERANCES)
    if override is None:
        return table
    if isinstance(override, dict) and override and set(override) <= set(FLOAT_DTYPES):
        for dtype_name, value in override.items():
            table[dtype_name] = _as_tolerance(value, f"{origin}[{dtype_name!r}]")
        return table
    tol = _as_tolerance(override, origin)
    return {name: tol for name in table}


def tolerance_for(dtype_name: str, table: dict[str, Tolerance]) -> Tolerance:
    """Tolerance for an output of ``dtype_name`` (``"float32"``, ``"int64"``, ...)."""
    return table.get(dtype_name, EXACT)
