"""Batch folded into N: one GEMM over every image's columns where A is the same for all of them.

A convolution as an implicit GEMM is batched over images (``lower_conv_gemm``): per image
``out[co, pos] = W[co, :] @ im2col[:, pos]``, with the weight A the same for every image. Tiled per
image, each image's last column tile is partial whenever the output positions are not a multiple
of BLOCK_N, and a partial tile costs a whole tile's tensor-core time: KernelBench level 2 #11's
34 x 34 = 1156 positions take 10 tiles of 128 for 9.03 tiles of work (10% of the GEMM spent on
masked columns, 512 images); a ResNet stage at 7 x 7 = 49 positions pads to 64 (23%). Folding
the batch into N (column ``c`` of the folded GEMM is image ``c // N``, position ``c % N``) leaves
one partial tile in the whole launch. Inductor's convolution template does the same (its GEMM's
rows are ``batch * H * W``).

What changes is index arithmetic only: B's gather and the epilogue's stores take the image from
the column (a ``[1, BLOCK_N]`` vector, hoisted out of the K loop, as the position's digits are),
where they took a scalar ``pid_b``. So the fold is a rewrite of the kernel's
:class:`~agents.expert.ir.nodes.MatmulNode` (its batch vars and N var replaced by the digits of
one flat column var) that the template renders as any unbatched GEMM. Only batch dims A does not
read fold (a grouped convolution's group selects A's rows, so it stays a grid dim), never where
the epilogue reduces over N (a row of the output must be one image's) or skips zero tiles (its
test is affine in the unfolded position), and only where the partial tiles waste at least the
pack's ``tiling/fold-batch-min-waste`` of the per-image tiles (a multiple of BLOCK_N gains nothing
and pays the image's division per column).
"""

from __future__ import annotations

import dataclasses
import math

from agents.expert.ir.expr import Expr, IndexValue, Load, substitute, walk
from agents.expert.ir.index import Affine, Var, unravel
from agents.expert.kernel import Kernel
from agents.expert.templates import cdiv


def partial_tile_waste(n: int, block_n: int) -> float:
    """The share of an image's column tiles' work that falls on masked columns."""
    padded = cdiv(n, block_n) * block_n
    return (padded - n) / padded


def folded(kernel: Kernel, block_n: int, min_waste: float) -> Kernel | None:
    """``kernel`` with the batch dims its A operand does not read folded into N, or None where
    nothing folds (module docstring: the conditions)."""
    mm = kernel.matmul
    if not mm.batch or kernel.reductions or mm.out_index is not None or partial_tile_waste(mm.n, block_n) < min_waste:
        return None  # (out_index: interleaved phases of one output, kept adjacent in the grid)
    reads_a = {v for e in walk(mm.a) if isinstance(e, (Load, IndexValue)) for v in e.index.vars()}
    fold = [(v, size) for v, size in zip(mm.bvars, mm.batch) if v not in reads_a]
    if not fold:
        return None
    flat = Var(f"{mm.nvar.name}_folded", math.prod(size for _, size in fold) * mm.n)
    *images, column = unravel(Affine.of(flat), [*(size for _, size in fold), mm.n])
    env = {mm.nvar: column, **{v: image for (v, _), image in zip(fold, images)}}
    kept = [(v, size) for v, size in zip(mm.bvars, mm.batch) if v not in dict(fold)]

    def sub(e: Expr | None) -> Expr | None:
        return None if e is None else substitute(e, env)

    matmul = dataclasses.replace(mm, batch=tuple(size for _, size in kept), bvars=tuple(v for v, _ in kept),
                                 n=flat.size, nvar=flat, b=sub(mm.b), bias=sub(mm.bias))
    stores = [dataclasses.replace(st, index=st.index.subs(env, sub), value=sub(st.value)) for st in kernel.stores]
    return dataclasses.replace(kernel, matmul=matmul, stores=stores)
