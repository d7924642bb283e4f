"""The loop-level IR's nodes: every buffer a forward computes, with its iteration domain.

* :class:`InputNode` - a graph placeholder (user input, parameter, buffer, constant);
* :class:`PointwiseNode` - ``out[i] = body(i)`` over the output's index vars;
* :class:`ReductionNode` - ``out[x] = reduce_r body(x, r)``: ``domain`` lists the sizes of the
  iterated space in the *input's* dim order and ``reduced`` which of them are reduced, so a
  reduction over any set of axes (contiguous or not) is one node;
* :class:`ScanNode` - an inclusive scan (cumsum/cumprod) along one domain dim;
* :class:`MatmulNode` - ``out[b, m, n] = alpha * sum_k A(b, m, k) B(b, k, n) + beta * bias``
  where A and B are *expressions* (views and prologues are index arithmetic on their loads);
* :class:`ScatterNode` - stores ``value(i)`` at ``index(i)`` into the storage of ``target``
  (functionalised item assignment with tensor indices): the one node that writes through a
  computed address;
* :class:`ExternNode` - a torch call (cuBLAS/cuDNN/SDPA/sort...), with its arguments.

Every node owns one output :class:`Layout` (shape, strides, dtype, offset from the tensor's data
pointer). A view of a buffer that is affine in the index is a :class:`View` (the buffer and a new
layout): it moves no data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from agents.expert.ir.dtypes import HALVES
from agents.expert.ir.expr import Expr
from agents.expert.ir.index import Affine, Var, strided


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    offset: int = 0

    @staticmethod
    def contiguous(shape: tuple[int, ...], dtype: str) -> Layout:
        return Layout(tuple(shape), contiguous_strides(shape), dtype)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def index(self, idx: list[Affine]) -> Affine:
        return strided(idx, list(self.stride), self.offset)

    def is_dense(self) -> bool:
        """Non-overlapping and dense: the strides are a permutation of a contiguous layout."""
        dims = sorted((st, sz) for st, sz in zip(self.stride, self.shape) if sz != 1)
        expected = 1
        for st, sz in dims:
            if st != expected:
                return False
            expected *= sz
        return True

    def extent(self) -> int:
        """One past the largest element offset this layout addresses."""
        if self.numel == 0:
            return 0
        return self.offset + sum((sz - 1) * st for sz, st in zip(self.shape, self.stride)) + 1


def contiguous_strides(shape: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(list(shape)):
        out.append(acc)
        acc *= max(1, s)
    return tuple(reversed(out))


def ordered_layout(shape: tuple[int, ...], order: list[int], dtype: str) -> Layout:
    """A dense layout of ``shape`` whose dimensions lie in memory in ``order`` (outer to inner)."""
    strides = [0] * len(shape)
    for d, st in zip(order, contiguous_strides([shape[d] for d in order])):
        strides[d] = st
    return Layout(tuple(shape), tuple(strides), dtype)


def innermost_layout(shape: tuple[int, ...], dim: int, dtype: str) -> Layout:
    """A dense layout of ``shape`` with dimension ``dim`` innermost and the others in their order
    (``[N, C, H, W]`` with ``dim`` 1: channels-last)."""
    return ordered_layout(shape, [d for d in range(len(shape)) if d != dim] + [dim], dtype)


@dataclass
class Node:
    name: str
    layout: Layout

    @property
    def kind(self) -> str:
        return type(self).__name__.removesuffix("Node").lower()


@dataclass
class InputNode(Node):
    role: str = "user_input"  # user_input | parameter | buffer | constant
    target: str | int = 0
    value: Any = None
    as_real: bool = False  # a complex tensor the kernels read through torch.view_as_real


@dataclass
class PointwiseNode(Node):
    vars: tuple[Var, ...] = ()
    body: Expr | None = None


@dataclass
class ReductionNode(Node):
    rtype: str = "sum"  # sum prod max min any all argmax argmin welford_mean welford_m2 kth_largest kth_smallest
    domain: tuple[int, ...] = ()
    reduced: tuple[bool, ...] = ()
    vars: tuple[Var, ...] = ()
    body: Expr | None = None
    mask: Expr | None = None  # split reductions: lanes past the end of R
    k: int = 0  # kth_largest / kth_smallest: which order statistic (1-based, ties counted)

    @property
    def xsizes(self) -> list[int]:
        return [s for s, r in zip(self.domain, self.reduced) if not r]

    @property
    def rsizes(self) -> list[int]:
        return [s for s, r in zip(self.domain, self.reduced) if r]

    @property
    def rnumel(self) -> int:
        return math.prod(self.rsizes)

    def out_index(self, xvars: list[Affine]) -> list[Affine]:
        """The output multi-index from the domain's kept dims (size-1 output dims: 0)."""
        return match_dims(list(self.layout.shape), self.xsizes, xvars)


@dataclass
class ScanNode(Node):
    stype: str = "sum"  # sum | prod
    axis: int = 0
    reverse: bool = False  # out[i] = total of body[j] for j >= i (flip(cumsum(flip(x))))
    vars: tuple[Var, ...] = ()
    body: Expr | None = None


@dataclass
class MatmulNode(Node):
    batch: tuple[int, ...] = ()
    m: int = 1
    n: int = 1
    k: int = 1
    a: Expr | None = None  # over (*bvars, mvar, kvar)
    b: Expr | None = None  # over (*bvars, kvar, nvar)
    bias: Expr | None = None  # over the output vars (*bvars, mvar, nvar)
    alpha: float = 1.0
    beta: float = 1.0
    bvars: tuple[Var, ...] = ()
    tf32_operands: bool = False  # A and B hold TF32 values (rounded in memory): what a TF32 dot may read
    swapped: bool = False  # the template computes C^T = B^T A^T (lower_matmul.swaps: B N-major, A K-major)
    mvar: Var = field(default_factory=lambda: Var("m", 1))
    nvar: Var = field(default_factory=lambda: Var("n", 1))
    kvar: Var = field(default_factory=lambda: Var("k", 1))
    aten: str = "aten.mm"  # the op it replaces (for reports)
    # where each element lands in the op's logical output, where that is not the layout's own order
    # (a strided transposed convolution's phases interleave): over (*bvars, mvar, nvar), of out_shape
    out_index: tuple[Affine, ...] | None = None
    out_shape: tuple[int, ...] | None = None
    # the lanes (over (*bvars, nvar)) whose out_index lies in out_shape, where some do not (a strided
    # transposed convolution whose phases differ in length computes each at the longest's): None, all
    out_valid: Expr | None = None

    @property
    def dot_dtype(self) -> str:
        """The dtype the dots multiply: the output's, except an fp32 product whose operands are both
        16-bit values of one dtype (``q.float() @ k.float().mT``: lower_matmul.exact_halves narrowed
        them), which multiplies them as they are, on 16-bit tensor cores into fp32 sums."""
        a, b = self.a.dtype if self.a is not None else None, self.b.dtype if self.b is not None else None
        halves = a == b and a in HALVES
        return a if self.layout.dtype == "float32" and halves else self.layout.dtype  # type: ignore[return-value]


@dataclass
class ScatterNode(Node):
    target: str = ""  # the buffer whose storage is written (a copy the graph made)
    domain: tuple[int, ...] = ()
    vars: tuple[Var, ...] = ()
    value: Expr | None = None
    index: Affine = field(default_factory=Affine)  # element offset in target's storage


@dataclass
class ExternNode(Node):
    target: str = ""  # "aten.addmm.default"
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    extra: list[Layout] = field(default_factory=list)  # further outputs (topk's indices ...)


@dataclass(frozen=True)
class View:
    """A tensor the candidate can name without computing: ``buffer`` seen through ``layout``."""

    buffer: str
    layout: Layout


@dataclass
class IRGraph:
    nodes: dict[str, Node]
    outputs: list[View]
    out_spec: Any
    mutations: dict[str, View]  # buffer FQN -> its new value
    notes: list[str] = field(default_factory=list)
    scalars: list[tuple[int, Any]] = field(default_factory=list)  # (forward position, value) baked in

    def inputs(self) -> list[InputNode]:
        return [n for n in self.nodes.values() if isinstance(n, InputNode)]


def match_dims(out_shape: list[int], sizes: list[int], idx: list[Affine]) -> list[Affine]:
    """Map ``idx`` over ``sizes`` onto ``out_shape`` when they agree after dropping size-1 dims."""
    real = [(s, i) for s, i in zip(sizes, idx) if s != 1]
    out: list[Affine] = []
    k = 0
    for s in out_shape:
        if s == 1:
            out.append(Affine.of(0))
            continue
        if k >= len(real) or real[k][0] != s:
            raise ValueError(f"shape {out_shape} does not match kept dims {sizes}")
        out.append(real[k][1])
        k += 1
    if k != len(real):
        raise ValueError(f"shape {out_shape} does not match kept dims {sizes}")
    return out
