"""A GEMM's output on its tile, shared by the matmul template's epilogue and a chained GEMM's
(``templates/matmul_chain.py``): the batch index the grid folds, the output bound as its value for the
epilogue's pointwise consumers, the tile's mask and the stores."""

from __future__ import annotations

import math
from typing import Any

from agents.expert.ir.expr import substitute
from agents.expert.ir.index import Affine, Var, unravel
from agents.expert.writer import Writer


def batch_env(mm: Any) -> dict[Var, Affine]:
    """A batched GEMM's batch vars over the program's batch index ``pid_b`` (the grid folds them)."""
    return dict(zip(mm.bvars, unravel(Affine.of(Var("pid_b", math.prod(mm.batch))), list(mm.batch)))) \
        if mm.batch else {}


def bind_output(w: Writer, mm: Any, acc: str, benv: dict[Var, Affine]) -> None:
    """The GEMM's output on its tile, ``alpha * acc + beta * bias`` in fp32, bound as its value (rounded
    once to the output dtype, as cuBLAS rounds) for the epilogue that reads it."""
    value = acc if mm.alpha == 1.0 else f"{acc} * {mm.alpha!r}"
    if mm.bias is not None:
        bias = w.value(substitute(mm.bias, benv))
        value = f"{value} + {bias}" if mm.beta == 1.0 else f"{value} + {mm.beta!r} * {bias}"
    xr = frozenset({"x", "r"})
    w.bind(mm.name, w.assign(value, xr), mm.layout.dtype, xr)


def tile_mask(mmask: bool, nmask: bool) -> str:
    """The output tile's mask (``mmask & nmask``, the parts a ragged M or N needs); "" where neither."""
    return " & ".join(name for name, used in (("mmask", mmask), ("nmask", nmask)) if used)


def store_outputs(w: Writer, stores: list[Any], benv: dict[Var, Affine]) -> None:
    """The epilogue's stores over the tile (batch vars onto ``pid_b``)."""
    for s in stores:
        w.store(s.buffer, s.index.subs(benv, lambda x: substitute(x, benv)), w.value(substitute(s.value, benv)),
                s.dtype, frozenset({"x", "r"}))
