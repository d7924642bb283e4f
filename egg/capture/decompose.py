"""The decomposition table that takes an exported program to canonical ATen.

Base: ``torch.export.default_decompositions()``, PyTorch's core ATen table plus every
CompositeImplicitAutograd op (``linear`` -> ``permute`` + ``addmm``, ``matmul`` -> ``bmm`` + views,
``layer_norm`` -> ``native_layer_norm``, ``cross_entropy`` -> ``log_softmax`` + ``nll_loss``,
``baddbmm`` -> ``bmm`` + pointwise, ``lerp``/``silu``/``softplus``/``hardswish``/``mish`` ->
pointwise ...). Changes to it, each for a reason:

* **kept whole** (removed from the table): ``scaled_dot_product_attention``. cuDNN/flash kernels
  run it; its math decomposition would materialise the score matrix.
* **decomposed further** with PyTorch's own entries in ``torch._decomp.decomposition_table``:
  the composites core ATen keeps but that are a reduction plus pointwise work (``_softmax``,
  ``_log_softmax``, ``native_layer_norm``, ``native_group_norm``, the ``native_batch_norm``
  family, ``embedding`` -> indexing), so the codegen sees their rows, means and variances and can
  fuse them with what surrounds them.
* **EGG's own** two entries, where PyTorch's decomposition leaves ATen: ``var_mean`` (the ref
  emits ``prims.var``/``prims.broadcast_in_dim``) becomes ``var.correction`` + ``mean.dim``;
  ``split_with_sizes`` (the ref emits ``as_strided``) becomes one ``slice`` per piece, so ``split``
  and ``chunk`` are slices the codegen reads as index arithmetic.

What that gives for common spellings: ``stack`` -> ``unsqueeze`` + ``cat``; ``unbind`` -> ``slice`` +
``squeeze``; ``x.t()``/``transpose`` -> ``permute``; ``reshape`` -> ``view`` (or ``clone`` + ``view``
when a copy is needed); ``x[idx]`` -> ``index``; ``masked_fill``/``tril``/``triu`` -> ``where`` with
``arange`` masks; ``F.silu`` -> ``sigmoid`` * x; ``F.gelu`` stays ``gelu``; ``F.embedding`` ->
``index``; BatchNorm in training mode -> ``var``/``mean`` + the running-statistics updates as
outputs; dropout in training mode -> ``native_dropout``; LSTM/GRU -> unrolled ``addmm`` steps.
GroupNorm on a CPU device decomposes to PyTorch's CPU variant (``as_strided`` on contiguous
statistics, which the exact rewrites turn into ``view``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch._decomp import decomposition_table

aten = torch.ops.aten

KEPT_WHOLE: dict[Any, str] = {
    aten.scaled_dot_product_attention.default: "attention runs in cuDNN/flash kernels",
}

FURTHER: tuple[Any, ...] = (
    aten._softmax.default,
    aten._log_softmax.default,
    aten.native_layer_norm.default,
    aten.native_group_norm.default,
    aten.native_batch_norm.default,
    aten._native_batch_norm_legit.default,
    aten._native_batch_norm_legit.no_stats,
    aten._native_batch_norm_legit_no_training.default,
    aten._native_batch_norm_legit_functional.default,
    aten.embedding.default,
    aten.linalg_vector_norm.default,
)


def _var_mean(
    x: torch.Tensor,
    dim: Sequence[int] | None = None,
    *,
    correction: float | None = None,
    keepdim: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    dims = list(range(x.dim())) if dim is None else list(dim)
    variance = aten.var.correction(x, dims, correction=correction, keepdim=keepdim)
    return variance, aten.mean.dim(x, dims, keepdim)


def _split_with_sizes(x: torch.Tensor, split_sizes: Sequence[int], dim: int = 0) -> list[torch.Tensor]:
    pieces, start = [], 0
    for size in split_sizes:
        pieces.append(aten.slice.Tensor(x, dim, start, start + size))
        start += size
    return pieces


def _copy(x: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    # functionalised ``x.copy_(src)`` (``y[::64] = v`` -> slice, copy, slice_scatter): x's shape and
    # dtype with src's values, broadcast; a fresh tensor, as ``copy`` returns one
    out = src if src.dtype == x.dtype else aten._to_copy.default(src, dtype=x.dtype)
    if tuple(out.shape) != tuple(x.shape):
        out = aten.expand.default(out, list(x.shape))
    return aten.clone.default(out)


EGG_DECOMPOSITIONS: dict[Any, Callable[..., Any]] = {
    aten.var_mean.correction: _var_mean,
    aten.split_with_sizes.default: _split_with_sizes,
    aten.copy.default: _copy,
}


@functools.cache
def _table() -> dict[Any, Callable[..., Any]]:
    table = dict(torch.export.default_decompositions().items())
    for op in KEPT_WHOLE:
        table.pop(op, None)
    for op in FURTHER:
        table[op] = decomposition_table[op]
    table.update(EGG_DECOMPOSITIONS)
    return table


def decomposition_table_for_egg() -> dict[Any, Callable[..., Any]]:
    """A fresh copy of the table (``run_decompositions`` may keep a reference to it)."""
    return dict(_table())


def decompose(program: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """``program`` decomposed to canonical ATen (functional; views stay views)."""
    return program.run_decompositions(decomposition_table_for_egg())
