"""Output tiles a GEMM's epilogue zeroes whole (a triangular product): their K loop is skipped.

:func:`zero_tile_test` reads the epilogue's stores (``where`` on an affine position test with a zero
branch, as ``torch.triu``/``tril`` and causal masks lower) and gives the matmul template
(:mod:`agents.expert.templates.matmul`) a Triton scalar test over the tile's corners.
"""

from __future__ import annotations

from agents.expert.ir.dtypes import INTS
from agents.expert.ir.expr import Const, Expr, IndexValue, Op
from agents.expert.ir.index import Affine
from agents.expert.kernel import Kernel

_SKIP_WHEN = {  # comparison of the kept elements -> (bound of the affine over the tile, skip test)
    "ge": ("hi", "<"), "gt": ("hi", "<="), "le": ("lo", ">"), "lt": ("lo", ">="),
}


def zero_tile_test(kernel: Kernel) -> str | None:
    """A Triton scalar test, true for an output tile the epilogue zeroes whole, or None.

    ``torch.triu(a @ b)`` (or ``tril``, any diagonal, any ``where`` on an affine position test with
    a zero branch) keeps the elements where ``c + i*row + j*col`` compares to a constant. Over a
    tile the affine spans [lo, hi] from the tile's corners, so a tile where no element passes is all
    zeros whatever the operands hold: its K loop is skipped and the epilogue writes the zeros. Half
    the tiles of a square triangular product. Only the output's structure is used, never an
    assumption about the inputs' values. Every store of the kernel must have that form (a store of
    the raw product, say, needs the K loop)."""
    mm = kernel.matmul
    if not kernel.stores or kernel.reductions:
        return None
    tests = []
    for st in kernel.stores:
        value = st.value.args[0] if isinstance(st.value, Op) and st.value.op == "to" else st.value
        if not (isinstance(value, Op) and value.op == "where"):
            return None
        cond, _, zero = value.args
        zero = zero.args[0] if isinstance(zero, Op) and zero.op == "to" else zero
        if not (isinstance(zero, Const) and zero.value == 0 and isinstance(cond, Op) and cond.op in _SKIP_WHEN):
            return None
        lhs, rhs = (_affine(a) for a in cond.args)  # the test as lhs - rhs against 0
        if lhs is None or rhs is None:
            return None
        pos = lhs + rhs * -1
        coeffs = dict(pos.terms)
        if set(coeffs) - {mm.mvar, mm.nvar}:
            return None
        which, op = _SKIP_WHEN[cond.op]
        terms = [str(pos.const)]
        for var, tile in ((mm.mvar, "pid_m * BLOCK_M"), (mm.nvar, "pid_n * BLOCK_N")):
            c = coeffs.get(var, 0)
            if c:
                edge = "BLOCK_M - 1" if var == mm.mvar else "BLOCK_N - 1"
                far = (c > 0) == (which == "hi")  # the corner where the affine takes this bound
                terms.append(f"{c} * ({tile} + {edge})" if far else f"{c} * {tile}")
        tests.append(f"({' + '.join(terms)} {op} 0)")
    return " & ".join(tests)


def _affine(e: Expr) -> Affine | None:
    """An integer position expression (``arange`` values, constants, + - and * by a constant) as
    an affine map of the output's index variables; None for anything else."""
    if isinstance(e, IndexValue):
        return e.index
    if isinstance(e, Const):
        return Affine.of(int(e.value)) if isinstance(e.value, int) and not isinstance(e.value, bool) else None
    if not isinstance(e, Op) or e.dtype not in INTS:
        return None
    args = [_affine(a) for a in e.args]
    if any(a is None for a in args):
        return None
    if e.op == "add" and len(args) == 2:
        return args[0] + args[1]
    if e.op == "sub" and len(args) == 2:
        return args[0] + args[1] * -1
    if e.op == "neg" and len(args) == 1:
        return args[0] * -1
    if e.op == "mul" and len(args) == 2:
        scale = next((a.const for a in args if not a.terms), None)
        other = args[1] if scale is not None and not args[0].terms else args[0]
        return other * scale if scale is not None else None
    return None
