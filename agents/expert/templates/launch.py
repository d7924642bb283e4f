"""The launch path: a generated launcher relaunches its compiled kernel directly.

``kernel[grid](...)`` goes through ``JITFunction.run`` on every call: binding the arguments,
computing their specialisation key (dtypes, 16-byte alignment, integers equal to 1), looking the
compiled kernel up, checking globals. Our kernels are specialised to one shape set already (shapes
and strides are literals in their source), so all of that has one answer per launcher call site.
The first launch on a GPU goes through ``JITFunction.run`` and keeps what it returns, the
``CompiledKernel``, with the device it was loaded on, in a module-level **launch state**; later
calls launch it through ``compiled[grid](*args)`` (Triton's own launcher, a few microseconds),
as Inductor's generated code does. They do so only on the same current device and with every
pointer 16-byte aligned (what the compiled specialisation assumed); anything else takes the
``JITFunction.run`` path, which compiles whatever specialisation the arguments need. In the
interpreter (CPU) ``kernel[grid]`` returns nothing, and every call takes that path.

A launch state is told apart from an output cache by its form alone
(:mod:`egg.evaluate.launch_state`): initialised to None, assigned only ``(torch.cuda.current_device(),
kernel[grid](...))`` for a ``@triton.jit`` kernel of the file, read only as ``S is None``, ``S[0] == ...``
and ``S[1][grid](...)``. It holds no tensor and nothing derived from an input's values, so the
judge's static checks accept it and reject every other module-level state.

``compiled[grid](*args)`` takes every kernel parameter positionally, constexprs included, in the
kernel's order; :func:`check_direct_calls` verifies that against the rendered kernel's signature
and turns the direct path off for a call site where it does not hold (a user template whose
launch options are listed in another order than its parameters, say).
"""

from __future__ import annotations

import ast
from typing import Any

from egg import pyast

# Keyword arguments of ``kernel[grid](...)`` that are compile options, not kernel parameters.
LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                            "launch_cooperative_grid", "launch_pdl", "debug"})


def _split(meta: str) -> tuple[str, str]:
    name, _, value = meta.partition("=")
    return name.strip(), value.strip()


def constexpr_names(meta: list[str]) -> list[str]:
    return [n for n, _ in map(_split, meta) if n not in LAUNCH_OPTIONS]


def positional(args: list[str], meta: list[str]) -> list[str]:
    """The direct call's arguments: the launch's, then the constexpr values in ``meta``'s order."""
    return list(args) + [v for n, v in map(_split, meta) if n not in LAUNCH_OPTIONS]


def grid3(grid: str) -> str | None:
    """``"(20480,)"`` -> ``"(20480, 1, 1)"``; None when the grid is not a literal tuple of ints."""
    try:
        value = ast.literal_eval(grid)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(value, tuple) or not 1 <= len(value) <= 3 or not all(isinstance(v, int) for v in value):
        return None
    return "(" + ", ".join(str(v) for v in (*value, 1, 1)[:3]) + ")"


def _signatures(source: str) -> dict[str, tuple[list[str], list[str]]]:
    """``@triton.jit`` function -> (all parameters, the constexpr ones), in order."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for node in pyast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            params = [a.arg for a in node.args.args]
            const = [a.arg for a in node.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)]
            out[node.name] = (params, const)
    return out


def check_direct_calls(source: str, calls: list[Any]) -> list[str]:
    """Turn ``direct`` off for each call whose positional form does not match its kernel's
    signature in ``source``; returns the kernels it turned off (to re-render)."""
    signatures = _signatures(source)
    off = []
    for call in calls:
        if not call.direct:
            continue
        params, const = signatures.get(call.kernel, (None, None))
        if params is None or len(positional(call.args, call.meta)) != len(params) \
                or constexpr_names(call.meta) != const:
            call.direct = False
            off.append(call.kernel)
    return off
