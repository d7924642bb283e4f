"""The operator table: the OpClass of every op the analysis knows.

The analysis reads canonical ATen graphs (``egg.capture``): :func:`aten_op_class` classifies
their ops by the category ``egg.capture.opset`` gives them. Ops outside the canonical set, and
the torch-level spellings the fx front end of ``agents/expert`` still reads (``torch.relu``,
``F.relu``, ``x.relu()``, ``nn.ReLU``, ``operator.add``), are reduced to one short *key*
(``"relu"``, ``"add"``) and classified by the key table below. A key missing from the table is
classified ``OTHER`` rather than guessed.
"""

from __future__ import annotations

import re
from typing import Any

from egg.capture.model import op_name
from egg.capture.opset import category
from egg.vocabulary import OpClass

# Canonical-graph categories -> OpClass (None: free, no class). Sorting and selection move data
# by index; random-number ops are pointwise generators.
_CATEGORY_CLASS: dict[str, OpClass | None] = {
    "pointwise": OpClass.ELEMENTWISE,
    "creation": OpClass.ELEMENTWISE,
    "random": OpClass.ELEMENTWISE,
    "reduction": OpClass.REDUCTION,
    "scan": OpClass.SCAN,
    "view": None,
    "select_output": None,
    "indexing": OpClass.INDEXING,
    "sorting": OpClass.INDEXING,
    "matmul": OpClass.MATMUL,
    "conv": OpClass.CONV,
    "attention": OpClass.ATTENTION,
    "pooling": OpClass.POOLING,
}


def aten_op_class(target: Any) -> OpClass | None:
    """OpClass of an op node's target in a canonical graph; None for views and tuple selection."""
    found = category(target)
    if found is not None:
        return _CATEGORY_CLASS[found]
    return classify(op_key(op_name(target)))

# Keys whose op moves no data: views, metadata queries and tuple selection. They are recorded in
# the op list (an expert reading the graph wants to see the reshapes) but cost nothing, belong to
# no OpClass and are transparent to fusion. ``contiguous``/``clone`` after a permute does copy;
# it is still listed here because a fused kernel absorbs the layout change into its indexing.
VIEW_KEYS: frozenset[str] = frozenset(
    """
    view reshape permute transpose t contiguous flatten unflatten unsqueeze squeeze expand
    expand_as view_as reshape_as size dim numel shape stride getattr split chunk unbind narrow
    movedim moveaxis swapaxes swapdims detach alias as_strided unsafe_view identity
    sym_size sym_numel sym_stride tuple_getitem lift_fresh_copy data_ptr is_contiguous
    """.split()
)

_TABLE_SPEC: dict[OpClass, str] = {
    OpClass.ELEMENTWISE: """
        relu relu6 gelu silu swish sigmoid tanh exp exp2 expm1 log log2 log10 log1p add sub mul
        div true_divide truediv floordiv floor_divide rsub neg pos pow square sqrt rsqrt abs
        reciprocal sin cos tan sinh cosh asin acos atan asinh acosh atanh atan2 erf erfc erfinv
        clamp clamp_min clamp_max clip hardtanh hardsigmoid hardswish leaky_relu elu selu celu
        softplus softsign mish where sign sgn floor ceil round trunc frac maximum minimum fmax
        fmin lerp addcmul addcdiv logical_and logical_or logical_not logical_xor bitwise_and
        bitwise_or bitwise_not bitwise_xor and or xor invert eq ne lt le gt ge isnan isinf
        isfinite nan_to_num dropout dropout1d dropout2d dropout3d alpha_dropout
        feature_alpha_dropout native_dropout threshold tanhshrink hardshrink softshrink
        logsigmoid log_sigmoid prelu rrelu glu logit mod remainder fmod xlogy heaviside copysign
        to type type_as float half bfloat16 double int long bool to_copy clone copy fill
        zeros_like ones_like full_like empty_like rand_like randn_like randint_like tril triu
        tensor scalar_tensor zeros ones full empty arange linspace eye rand randn randint
        new_zeros new_ones new_full new_empty new_tensor
        """,
    OpClass.REDUCTION: """
        sum mean max min amax amin argmax argmin prod norm linalg_norm vector_norm
        linalg_vector_norm frobenius_norm nuclear_norm std var std_mean var_mean any all
        count_nonzero median nanmedian mode nansum nanmean aminmax cosine_similarity
        pairwise_distance dist
        """,
    OpClass.NORMALIZATION: """
        layer_norm native_layer_norm rms_norm group_norm native_group_norm instance_norm
        batch_norm native_batch_norm native_batch_norm_legit
        native_batch_norm_legit_functional native_batch_norm_legit_no_training
        local_response_norm normalize
        """,
    OpClass.SOFTMAX: "softmax log_softmax logsumexp softmin gumbel_softmax",
    OpClass.SCAN: "cumsum cumprod cummax cummin logcumsumexp",
    OpClass.MATMUL: """
        matmul mm bmm linear addmm einsum baddbmm addbmm addmv mv dot vdot inner outer ger
        bilinear tensordot chain_matmul multi_dot linalg_multi_dot cdist
        lstm gru rnn lstm_cell gru_cell rnn_cell rnn_tanh rnn_relu
        """,
    OpClass.CONV: """
        conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d convolution
        conv_tbc
        """,
    OpClass.POOLING: """
        max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d
        adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d
        adaptive_max_pool3d lp_pool1d lp_pool2d lp_pool3d max_pool1d_with_indices
        max_pool2d_with_indices max_pool3d_with_indices fractional_max_pool2d
        fractional_max_pool3d max_unpool1d max_unpool2d max_unpool3d
        """,
    OpClass.LOSS: """
        cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss kl_div
        hinge_embedding_loss margin_ranking_loss triplet_margin_loss
        triplet_margin_with_distance_loss cosine_embedding_loss binary_cross_entropy
        binary_cross_entropy_with_logits bce bce_with_logits soft_margin_loss multi_margin_loss
        multilabel_margin_loss multilabel_soft_margin_loss poisson_nll_loss gaussian_nll_loss
        ctc_loss nll_loss_forward nll_loss2d
        """,
    OpClass.INDEXING: """
        gather scatter scatter_add scatter_reduce index_select index index_put index_add
        index_copy index_fill embedding embedding_bag cat concat concatenate stack hstack vstack
        dstack getitem setitem masked_fill masked_select masked_scatter topk kthvalue sort argsort take
        take_along_dim roll flip fliplr flipud repeat repeat_interleave tile nonzero one_hot pad
        constant_pad_nd reflection_pad replication_pad zero_pad constant_pad circular_pad
        unique searchsorted bucketize diag diagonal_scatter slice select slice_scatter
        select_scatter pixel_shuffle pixel_unshuffle interpolate upsample upsample_nearest
        upsample_bilinear upsampling_nearest upsampling_bilinear upsample_nearest2d
        upsample_bilinear2d grid_sample unfold fold im2col col2im
        """,
    OpClass.ATTENTION: """
        scaled_dot_product_attention multi_head_attention_forward multihead_attention
        scaled_dot_product_flash_attention scaled_dot_product_efficient_attention
        scaled_dot_product_cudnn_attention flash_attention transformer_encoder_layer
        transformer_decoder_layer transformer_encoder transformer_decoder transformer
        """,
}

OP_TABLE: dict[str, OpClass] = {
    key: op_class for op_class, keys in _TABLE_SPEC.items() for key in keys.split()
}

# Recurrent layers are MATMUL: each step is a GEMM with a small pointwise epilogue, and that GEMM
# is what a kernel has to get right. The target ("lstm") keeps them recognisable.

# Spellings that should share a key with their canonical op.
_ALIASES: dict[str, str] = {
    "truediv": "div",
    "true_divide": "div",
    "floordiv": "floor_divide",
    "divide": "div",
    "multiply": "mul",
    "subtract": "sub",
    "negative": "neg",
    "absolute": "abs",
    "clip": "clamp",
    "swish": "silu",
    "concat": "cat",
    "concatenate": "cat",
    "log_sigmoid": "logsigmoid",
    "bce": "binary_cross_entropy",
    "bce_with_logits": "binary_cross_entropy_with_logits",
    "linalg_vector_norm": "vector_norm",
    "frobenius_norm": "norm",
    "upsampling_nearest": "upsample_nearest",
    "upsampling_bilinear": "upsample_bilinear",
    "native_layer_norm": "layer_norm",
    "native_group_norm": "group_norm",
    "native_batch_norm": "batch_norm",
    "native_batch_norm_legit": "batch_norm",
    "native_batch_norm_legit_functional": "batch_norm",
    "native_batch_norm_legit_no_training": "batch_norm",
    "scaled_dot_product_flash_attention": "scaled_dot_product_attention",
    "scaled_dot_product_efficient_attention": "scaled_dot_product_attention",
    "scaled_dot_product_cudnn_attention": "scaled_dot_product_attention",
    "to_copy": "to",
    "unsafe_view": "view",
}

# nn.Module class names that the generic CamelCase split gets wrong.
_MODULE_KEYS: dict[str, str] = {
    "PReLU": "prelu",
    "RReLU": "rrelu",
    "ReLU6": "relu6",
    "LogSigmoid": "logsigmoid",
    "MultiheadAttention": "multihead_attention",
    "BCELoss": "binary_cross_entropy",
    "BCEWithLogitsLoss": "binary_cross_entropy_with_logits",
    "KLDivLoss": "kl_div",
    "CrossEntropyLoss": "cross_entropy",
    "NLLLoss": "nll_loss",
    "Softmax2d": "softmax",
    "Identity": "identity",
    "Dropout": "dropout",
    "LSTM": "lstm",
    "GRU": "gru",
    "RNN": "rnn",
    "LSTMCell": "lstm_cell",
    "GRUCell": "gru_cell",
    "RNNCell": "rnn_cell",
}

# Qualified-name prefixes that are the same function under another path.
_PREFIX_REWRITES: tuple[tuple[str, str], ...] = (
    ("torch._C._nn.", "torch.nn.functional."),
    ("torch._C._VariableFunctions.", "torch."),
    ("torch.functional.", "torch."),
    ("torch._VF.", "torch."),
    ("_operator.", "operator."),
    ("torch.ops.aten.", "aten."),
)

_CAMEL_SPLIT = re.compile(r"(?<!^)(?=[A-Z][a-z])")


def canonical_target(qualified: str) -> str:
    """Readable op name: ``torch._C._nn.gelu`` -> ``torch.nn.functional.gelu``, ``aten.add``."""
    for old, new in _PREFIX_REWRITES:
        if qualified.startswith(old):
            qualified = new + qualified[len(old) :]
            break
    if qualified.startswith("aten."):
        # Drop the overload (aten.add.Tensor -> aten.add); the schema name is enough to read.
        parts = qualified.split(".")
        qualified = ".".join(parts[:2])
    return qualified


def op_key(name: str) -> str:
    """The table key of a qualified op name: the last component, without in-place/private marks."""
    key = canonical_target(name).rsplit(".", 1)[-1].strip("_")
    return _ALIASES.get(key, key)


def module_key(class_name: str) -> str:
    """The table key of an ``nn.Module`` class: ``BatchNorm2d`` -> ``batch_norm``."""
    if class_name in _MODULE_KEYS:
        return _MODULE_KEYS[class_name]
    snake = _CAMEL_SPLIT.sub("_", class_name).lower()
    # Dimension suffixes matter for conv/pool (the table keeps them) but not for norms/dropout.
    candidates = [snake, re.sub(r"_?\d+d$", "", snake), re.sub(r"_loss$", "", snake)]
    for candidate in candidates:
        key = _ALIASES.get(candidate, candidate)
        if key in OP_TABLE or key in VIEW_KEYS:
            return key
    return snake


def classify(key: str) -> OpClass | None:
    """OpClass of a key; ``None`` for views (no data movement); ``OTHER`` when unknown."""
    if key in VIEW_KEYS:
        return None
    return OP_TABLE.get(key, OpClass.OTHER)
