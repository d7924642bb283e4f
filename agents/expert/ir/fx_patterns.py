"""Patterns over the captured FX graph that a lowering renders as one op.

Decomposition leaves composites as their formulas, which is what the codegen wants almost
everywhere; a few formulas have a cheaper equivalent the decomposed form hides. Each pattern here
is matched on the ATen nodes themselves (spelling-independent: the decomposition of the library
call and the formula users write by hand give the same nodes) and names the operand it applies to.
"""

from __future__ import annotations

from typing import Any

from torch import fx


def _target(n: Any, name: str) -> bool:
    return isinstance(n, fx.Node) and n.op == "call_function" and str(n.target) == name


def _softplus_of(n: Any, x: fx.Node) -> bool:
    """``n`` is softplus(x) at beta 1: ``log1p(exp(x))``, or torch's decomposition with a threshold
    of at least 20, ``where(x > t, x, log1p(exp(x)))`` (above ~9 tanh of either is 1.0 in fp32)."""
    if _target(n, "aten.log1p.default"):
        return _target(n.args[0], "aten.exp.default") and n.args[0].args[0] is x
    if _target(n, "aten.where.self") and len(n.args) == 3:
        cond, kept, soft = n.args
        return (_target(cond, "aten.gt.Scalar") and cond.args[0] is x and isinstance(cond.args[1], (int, float))
                and cond.args[1] >= 20 and kept is x and _target(soft, "aten.log1p.default") and _softplus_of(soft, x))
    return False


def mish_of(node: fx.Node) -> int | None:
    """Which operand of ``x * tanh(softplus(x))`` is ``x`` (``F.mish`` decomposes to it, and users
    write it out): rendered as one ``mish``, whose helper takes one exp and a division where the
    formula takes two exps, a log1p and tanh's division (an epilogue of KernelBench level 2 #16's
    GEMM, whose issue slots bound it on an H100, 2026-12-06)."""
    if len(node.args) != 2:
        return None
    for i in (0, 1):
        x, t = node.args[i], node.args[1 - i]
        if isinstance(x, fx.Node) and _target(t, "aten.tanh.default") and _softplus_of(t.args[0], x):
            return i
    return None
