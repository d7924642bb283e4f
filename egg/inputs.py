"""Input specs, and drawing fresh inputs from them: the one way a written problem file gets inputs.

A spec records what the judge must reproduce about an example input: a tensor's shape, strides,
dtype and, for integer tensors, the range of its values (indices stay in range); any other value
(a Python scalar, a string, None) is kept as it is. Problem files that EGG writes (graph problems
from the Dynamo backend, live-module problems from ``egg.optimize(module, inputs)``) carry the
specs as a literal and :func:`make_inputs`'s own source, so ``get_inputs()`` needs nothing but
torch (the judge refuses candidates that import egg, and candidates copy their problem's code).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch


def input_spec(value: Any) -> dict[str, Any]:
    """The spec of one example input. The dtype is kept as a ``torch.dtype``: its ``repr`` is the
    ``torch.float32`` a problem file's literal names."""
    if not isinstance(value, torch.Tensor):
        return {"value": value}
    entry: dict[str, Any] = {"shape": list(value.shape), "stride": list(value.stride()), "dtype": value.dtype}
    if not (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool):
        entry["low"] = int(value.min()) if value.numel() else 0
        entry["high"] = int(value.max()) + 1 if value.numel() else 1
    return entry


def make_inputs(specs: list[dict[str, Any]]) -> list[Any]:
    """Fresh random inputs as ``specs`` describe them (same strides: a transposed input stays one)."""
    drawn: list[Any] = []
    for entry in specs:
        if "value" in entry:
            drawn.append(entry["value"])
            continue
        dtype = entry["dtype"]
        out = torch.empty_strided(entry["shape"], entry["stride"], dtype=dtype)
        if dtype == torch.bool:
            out.copy_(torch.rand(entry["shape"]) > 0.5)
        elif "low" in entry:
            out.copy_(torch.randint(entry["low"], max(entry["high"], entry["low"] + 1), entry["shape"]))
        else:
            out.copy_(torch.randn(entry["shape"]))
        drawn.append(out)
    return drawn


def inputs_source(specs: list[dict[str, Any]], prefix: str = "") -> str:
    """Problem-file source for ``get_inputs()``: the specs as a literal and :func:`make_inputs`
    (named ``{prefix}make_inputs``: a live module's file also holds the user's own names)."""
    draw = inspect.getsource(make_inputs).replace("def make_inputs(", f"def {prefix}make_inputs(", 1)
    specs_name = "_" + (prefix.strip("_").upper() + "_" if prefix else "") + "INPUT_SPECS"
    return f'''{specs_name} = {specs!r}


from typing import Any  # {prefix}make_inputs' annotations


{draw}

def get_inputs():
    return {prefix}make_inputs({specs_name})

'''


def specs_json(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The specs with dtypes as strings, for the JSON copy written beside a problem (people and tools)."""
    return [{**e, "dtype": str(e["dtype"])} if "dtype" in e else e for e in specs]
