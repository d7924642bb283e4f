"""Loads a ``where`` throws away are not fetched: the branch's loads predicated on the lanes that keep it.

A causal mask (``scores.masked_fill(torch.triu(ones, 1).bool(), -inf)``) discards half the scores it
is given; loaded anyway, they are DRAM traffic for nothing. Predicated, the masked-off sectors are
never fetched. The predicate must not cost the loads their width: compiled for sm_90a (Triton
3.6), a per-element predicate on causal_softmax's bf16 scores turned each thread's two 16-byte
loads into sixteen 2-byte ones, since Triton cannot prove it uniform over a 16-byte run. So the
predicate is rounded out to whole runs: a run of ``V`` elements along the loads' contiguous index
``i`` is fetched when the condition keeps its first or its last element, which is every element it
keeps when the condition is monotone in ``i`` (a comparison of index arithmetic, as causal,
sliding-window and padding masks are). Values fetched that the condition then discards are still
discarded by the ``where`` itself, so the rounding changes traffic, never results.

Only for conditions that read no memory (index arithmetic): a condition computed from data
(``x > 0``) needs its own loads anyway, and a mask tensor's runs are unknown at compile time.
"""

from __future__ import annotations

from agents.expert.ir import dtypes
from agents.expert.ir.expr import Expr, IndexValue, Load, Masked, Op, loads_of, substitute, walk
from agents.expert.ir.index import Affine, DivMod, Var

VECTOR_BYTES = 16  # the widest global load (ld.global.v4.b32)
_ORDERED = frozenset({"lt", "le", "gt", "ge", "add", "sub", "neg", "logical_not", "to"})
_BOOLEAN = frozenset({"logical_and", "logical_or", "bitwise_and", "bitwise_or"})


def _depends(e: Expr, var: Var) -> bool:
    return any(isinstance(x, IndexValue) and var in x.index.vars() for x in walk(e))


def monotone(e: Expr, var: Var) -> bool:
    """Whether ``e`` is a monotone function of ``var`` (either direction) by its structure: one path
    from ``var``'s plain index terms to the root through order-keeping ops, anything else constant
    in ``var``."""
    if not _depends(e, var):
        return True
    if isinstance(e, IndexValue):
        return not any(isinstance(a, DivMod) and var in a.base.vars() for a, _ in e.index.terms)
    if not isinstance(e, Op):
        return False
    dep = [a for a in e.args if _depends(a, var)]
    if len(dep) != 1 or not monotone(dep[0], var):
        return False
    if e.op in _ORDERED:
        return e.op != "to" or dep[0].dtype == "bool" or dtypes.is_float(e.dtype) or dtypes.is_int(e.dtype)
    if e.op in _BOOLEAN:  # on booleans and/or with a constant side keep the order; on integers they need not
        return dep[0].dtype == "bool"
    return e.op == "mul" and all(not _depends(a, var) and not loads_of(a) for a in e.args if a is not dep[0])


def _contiguous_var(reads: list[Load]) -> Var | None:
    """The index variable every load walks with stride 1 (their vectorisable axis), if one."""
    common: set[Var] | None = None
    for ld in reads:
        ones = {a for a, c in ld.index.terms if isinstance(a, Var) and c == 1}
        common = ones if common is None else common & ones
    return next(iter(sorted(common, key=lambda v: v.name)), None) if common else None


def predicated(cond: Expr, branch: Expr, when: bool) -> Expr:
    """``branch`` (the ``where`` picks it where ``cond == when``) with its loads predicated on whole
    16-byte runs that hold a kept element (module docstring); ``branch`` itself where that is not
    known to be exact."""
    reads = loads_of(branch)
    if not reads or loads_of(cond):
        return branch
    var = _contiguous_var(reads)
    if var is None or not _depends(cond, var) or not monotone(cond, var):
        return branch
    run = max(VECTOR_BYTES // dtypes.itemsize(ld.dtype) for ld in reads)
    if run < 2:
        return branch
    first = Affine.of(var).floordiv(run) * run
    ends = [substitute(cond, {var: first}), substitute(cond, {var: first + (run - 1)})]
    if not when:
        ends = [Op("logical_not", (e,), "bool") for e in ends]
    keep = Op("logical_or", (ends[0], ends[1]), "bool")
    return Masked(keep, branch, False if branch.dtype == "bool" else 0)


def where(cond: Expr, x: Expr, y: Expr) -> Expr:
    """``where(cond, x, y)`` whose branches fetch only the runs it keeps (:func:`predicated`)."""
    return Op("where", (cond, predicated(cond, x, True), predicated(cond, y, False)), x.dtype)


__all__ = ["monotone", "predicated", "where"]
