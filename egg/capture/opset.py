"""The canonical op set: every op a captured graph may contain, by category.

A captured graph is PyTorch's core ATen (``torch.export.default_decompositions()``) with the
changes listed in :mod:`egg.capture.decompose`, so the codegen lowers a small, closed set:
pointwise math, a handful of reductions and scans, views, data movement, and a few ops it never
computes itself (matmuls, convolutions, attention, pooling, sorting, random numbers), which stay
single nodes for cuBLAS/cuDNN/torch.

Names are ``str(OpOverload)`` (``"aten.add.Tensor"``); ``getitem`` selects an output of a
multi-output op (``max.dim``, ``topk``, ``max_pool2d_with_indices``, ``native_dropout``). A
capture whose graph holds an op outside this set still succeeds, with a note naming the op.
"""

from __future__ import annotations

from typing import Any

from egg.capture.model import op_name


def _names(text: str) -> frozenset[str]:
    return frozenset(f"aten.{name}" for name in text.split())


# Elementwise math, comparisons, casts and layout copies: computed inside generated kernels.
POINTWISE = _names(
    """
    add.Tensor add.Scalar sub.Tensor sub.Scalar mul.Tensor mul.Scalar div.Tensor div.Scalar
    div.Tensor_mode div.Scalar_mode neg.default abs.default reciprocal.default sqrt.default
    rsqrt.default pow.Tensor_Scalar pow.Tensor_Tensor pow.Scalar exp.default exp2.default
    expm1.default log.default log2.default log10.default log1p.default sin.default cos.default
    tan.default asin.default acos.default atan.default atan2.default sinh.default cosh.default
    tanh.default asinh.default acosh.default atanh.default erf.default erfc.default
    erfinv.default sigmoid.default relu.default gelu.default hardtanh.default leaky_relu.default
    elu.default clamp.default clamp.Tensor maximum.default minimum.default fmod.Scalar
    fmod.Tensor remainder.Scalar remainder.Tensor floor.default ceil.default round.default
    round.decimals trunc.default sign.default hypot.default where.self eq.Tensor eq.Scalar
    ne.Tensor ne.Scalar lt.Tensor lt.Scalar le.Tensor le.Scalar gt.Tensor gt.Scalar ge.Tensor
    ge.Scalar logical_and.default logical_or.default logical_xor.default logical_not.default
    bitwise_and.Tensor bitwise_and.Scalar bitwise_or.Tensor bitwise_or.Scalar
    bitwise_xor.Tensor bitwise_xor.Scalar bitwise_not.default __lshift__.Scalar
    __lshift__.Tensor __rshift__.Scalar __rshift__.Tensor isnan.default isinf.default
    _to_copy.default clone.default
    """
)
# Tensors made from nothing but sizes and values (masks, positions, fill values).
CREATION = _names(
    """
    full.default full_like.default scalar_tensor.default arange.start_step arange.default
    arange.start empty.memory_format empty_strided.default empty_permuted.default
    """
)
REDUCTION = _names(
    """
    sum.dim_IntList sum.default mean.dim mean.default amax.default amin.default max.default
    min.default max.dim min.dim argmax.default argmin.default prod.default prod.dim_int
    var.correction any.default any.dim any.dims all.default all.dim all.dims
    """
)
SCAN = _names("cumsum.default cumprod.default logcumsumexp.default cummax.default cummin.default")
# Free: a new index map over the same storage.
VIEW = _names(
    """
    view.default permute.default expand.default slice.Tensor select.int unsqueeze.default
    squeeze.dims squeeze.dim squeeze.default as_strided.default diagonal.default unfold.default
    view_as_complex.default view_as_real.default
    """
)
# Data movement with an index: gathers, scatters, concatenation, padding, resampling.
INDEXING = _names(
    """
    cat.default index.Tensor index_put.default gather.default scatter.src scatter.value
    scatter_add.default scatter_reduce.two index_select.default index_add.default
    constant_pad_nd.default flip.default repeat.default slice_scatter.default
    select_scatter.default reflection_pad1d.default reflection_pad2d.default
    reflection_pad3d.default replication_pad1d.default replication_pad2d.default
    replication_pad3d.default upsample_nearest1d.vec upsample_nearest2d.vec
    upsample_nearest3d.vec upsample_nearest2d.default upsample_bilinear2d.vec
    upsample_bilinear2d.default upsample_trilinear3d.vec upsample_bicubic2d.vec
    """
)
# Never computed by generated kernels: they stay single nodes, run by library kernels.
MATMUL = _names("mm.default addmm.default bmm.default _cdist_forward.default")
CONV = _names("convolution.default")
ATTENTION = _names("scaled_dot_product_attention.default")
POOLING = _names(
    """
    avg_pool2d.default avg_pool3d.default max_pool2d_with_indices.default
    max_pool3d_with_indices.default adaptive_max_pool2d.default adaptive_max_pool1d.default
    _adaptive_avg_pool2d.default _adaptive_avg_pool3d.default
    """
)
SORTING = _names(
    """
    sort.default sort.stable topk.default kthvalue.default nonzero.default bucketize.Tensor
    searchsorted.Tensor
    """
)
# Random numbers: a reference that draws them cannot be matched bit for bit; kept visible.
RANDOM = _names(
    """
    native_dropout.default rand.default rand_like.default randn.default randn_like.default
    randint.default randint.low randint_like.default randint_like.low_dtype bernoulli.default
    bernoulli.p normal.Tensor_float normal.float_Tensor normal.Tensor_Tensor uniform.default
    randperm.default
    """
)
SELECT_OUTPUT = frozenset({"getitem"})

CATEGORIES: dict[str, frozenset[str]] = {
    "pointwise": POINTWISE,
    "creation": CREATION,
    "reduction": REDUCTION,
    "scan": SCAN,
    "view": VIEW,
    "indexing": INDEXING,
    "matmul": MATMUL,
    "conv": CONV,
    "attention": ATTENTION,
    "pooling": POOLING,
    "sorting": SORTING,
    "random": RANDOM,
    "select_output": SELECT_OUTPUT,
}
# What generated kernels never compute: the codegen leaves these as torch calls.
EXTERN = MATMUL | CONV | ATTENTION | POOLING | SORTING | RANDOM

CANONICAL_OPS: frozenset[str] = frozenset().union(*CATEGORIES.values())
_CATEGORY_OF = {name: category for category, names in CATEGORIES.items() for name in names}


def category(target: Any) -> str | None:
    """The category of an op node's target (an OpOverload or ``operator.getitem``), or None."""
    return _CATEGORY_OF.get(op_name(target))


def is_canonical(target: Any) -> bool:
    return op_name(target) in CANONICAL_OPS
