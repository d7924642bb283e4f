"""FLOPs and bytes of one op run alone (unfused).

Conventions: a multiply-add counts 2 FLOPs (matmul, conv, attention); pointwise math counts 1
per output element whatever the function (a GELU is "1 FLOP" here: the roofline only needs the
order of magnitude and pointwise work is never the compute bound on an H200); reductions ~1 per
input element; norms and softmax ~5 per element (max/mean, subtract, exp/variance, sum, scale).
Bytes read every tensor input and module parameter once and write every tensor output once,
except gather-like ops, which read only what they produce (plus their index tensor).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from egg.analysis.models import TensorSpec
from egg.vocabulary import OpClass

# Pointwise ops that only move or create data.
_NO_MATH = frozenset(
    """
    to type type_as float half bfloat16 double int long bool clone copy fill zeros_like
    ones_like full_like empty_like rand_like randn_like randint_like tensor scalar_tensor zeros
    ones full empty arange linspace eye rand randn randint new_zeros new_ones new_full new_empty
    new_tensor
    """.split()
)
# Reductions that square or otherwise touch each element twice.
_TWO_PASS = frozenset(
    "std var std_mean var_mean norm vector_norm nuclear_norm cosine_similarity "
    "pairwise_distance dist".split()
)
# Indexing ops that read only the elements they produce.
_GATHER_LIKE = frozenset(
    "getitem slice select index index_select gather take take_along_dim embedding "
    "embedding_bag narrow masked_select".split()
)
_PER_ELEMENT = {
    OpClass.NORMALIZATION: 5,
    OpClass.SOFTMAX: 5,
    OpClass.SCAN: 1,
    OpClass.REDUCTION: 1,
    OpClass.LOSS: 3,
}


def itemsize(dtype: str) -> int:
    """Bytes per element of a dtype name ("float32" -> 4); 0 for Python scalars."""
    value = getattr(torch, dtype, None)
    return value.itemsize if isinstance(value, torch.dtype) else 0


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat", "complex"))


def spec_bytes(spec: TensorSpec) -> int:
    return spec.numel * itemsize(spec.dtype) if spec.is_tensor else 0


def _numel(shape: list[int]) -> int:
    return math.prod(shape)


def op_cost(
    key: str,
    op_class: OpClass | None,
    operands: list[TensorSpec],
    outputs: list[TensorSpec],
    args: dict[str, Any],
    params: dict[str, TensorSpec],
) -> tuple[int, int]:
    """(flops, bytes). ``op_class`` None means a view: free."""
    if op_class is None:
        return 0, 0
    out_bytes = sum(spec_bytes(o) for o in outputs)
    if key in _GATHER_LIKE:
        # Indices and masks are read in full; the values only where they are picked.
        index_bytes = sum(spec_bytes(o) for o in operands if not _is_float(o.dtype))
        data_bytes = 2 * out_bytes + index_bytes
    else:
        data_bytes = (
            sum(spec_bytes(o) for o in operands)
            + sum(spec_bytes(p) for p in params.values())
            + out_bytes
        )
    return _flops(key, op_class, operands, outputs, args, params), data_bytes


def _flops(
    key: str,
    op_class: OpClass,
    operands: list[TensorSpec],
    outputs: list[TensorSpec],
    args: dict[str, Any],
    params: dict[str, TensorSpec],
) -> int:
    out_numel = outputs[0].numel if outputs else 0
    in_numel = operands[0].numel if operands else 0
    if op_class in (OpClass.ELEMENTWISE, OpClass.BROADCAST):
        return 0 if key in _NO_MATH else out_numel
    if op_class == OpClass.MATMUL:
        return _matmul_flops(key, operands, out_numel, args, params)
    if op_class == OpClass.CONV:
        return _conv_flops(key, operands, out_numel, args, params)
    if op_class == OpClass.ATTENTION:
        return _attention_flops(key, operands, args)
    if op_class == OpClass.POOLING:
        kernel = args.get("kernel_size")
        if isinstance(kernel, int):
            return out_numel * kernel ** max(1, len(outputs[0].shape) - 2) if outputs else 0
        if isinstance(kernel, list) and all(isinstance(k, int) for k in kernel):
            return out_numel * math.prod(kernel)
        return in_numel  # adaptive pooling: every input element is visited once
    if op_class == OpClass.REDUCTION and key in _TWO_PASS:
        return 2 * in_numel
    if op_class == OpClass.LOSS and key in ("cross_entropy", "nll_loss"):
        return (6 if key == "cross_entropy" else 1) * in_numel
    return _PER_ELEMENT.get(op_class, 0) * in_numel


def _weight(operands: list[TensorSpec], params: dict[str, TensorSpec]) -> TensorSpec | None:
    if "weight" in params:
        return params["weight"]
    return operands[1] if len(operands) > 1 else None


def _has_bias(operands: list[TensorSpec], params: dict[str, TensorSpec]) -> bool:
    return "bias" in params if params else len(operands) > 2


def _matmul_flops(
    key: str,
    operands: list[TensorSpec],
    out_numel: int,
    args: dict[str, Any],
    params: dict[str, TensorSpec],
) -> int:
    if key == "linear":
        weight = _weight(operands, params)
        k = weight.shape[-1] if weight is not None and weight.shape else 1
        return 2 * out_numel * k + (out_numel if _has_bias(operands, params) else 0)
    if key in ("addmm", "baddbmm", "addbmm", "addmv"):
        k = operands[1].shape[-1] if len(operands) > 1 and operands[1].shape else 1
        return 2 * out_numel * k + out_numel
    if key in _RNN_GATES:
        return _rnn_flops(key, operands, args)
    if key == "einsum":
        equation = next((v for v in args.values() if isinstance(v, str)), None)
        flops = _einsum_flops(equation, operands)
        if flops is not None:
            return flops
    if key == "bilinear":
        in1, in2 = operands[0].shape[-1], operands[1].shape[-1] if len(operands) > 1 else 1
        return 2 * out_numel * in1 * in2
    if key in ("outer", "ger"):
        return out_numel
    if key == "cdist" and operands:
        return 3 * out_numel * operands[0].shape[-1]
    # matmul, mm, bmm, mv, dot: the contraction is the last dim of the first operand (after any
    # transpose view, because operand shapes are those the op actually sees).
    k = operands[0].shape[-1] if operands and operands[0].shape else 1
    return 2 * out_numel * k


_RNN_GATES = {"lstm": 4, "gru": 3, "rnn": 1, "lstm_cell": 4, "gru_cell": 3, "rnn_cell": 1}


def _rnn_flops(key: str, operands: list[TensorSpec], args: dict[str, Any]) -> int:
    """Gate GEMMs of every step, layer and direction: 2 * gates * hidden * (input + hidden)."""
    hidden, size_in = args.get("hidden_size"), args.get("input_size")
    if not operands or not isinstance(hidden, int) or not isinstance(size_in, int):
        return 0
    steps = operands[0].numel // max(1, operands[0].shape[-1])  # seq * batch (cells: batch)
    directions = 2 if args.get("bidirectional") else 1
    proj = args.get("proj_size") or 0
    out = proj if proj > 0 else hidden
    flops = 0
    for layer in range(int(args.get("num_layers") or 1)):
        layer_in = size_in if layer == 0 else directions * out
        flops += directions * 2 * _RNN_GATES[key] * hidden * (layer_in + out)
    return steps * flops


def _einsum_flops(equation: str | None, operands: list[TensorSpec]) -> int | None:
    if not equation or "..." in equation:
        return None
    equation = equation.replace(" ", "")
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        return None
    sizes: dict[str, int] = {}
    for term, spec in zip(terms, operands):
        if len(term) != len(spec.shape):
            return None
        sizes.update(zip(term, spec.shape))
    if "->" not in equation:
        letters = "".join(terms)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    total = math.prod(sizes.values())
    contracted = any(letter not in rhs for letter in sizes)
    return 2 * total if contracted else total


def _conv_flops(
    key: str,
    operands: list[TensorSpec],
    out_numel: int,
    args: dict[str, Any],
    params: dict[str, TensorSpec],
) -> int:
    weight = _weight(operands, params)
    if weight is None or not operands:
        return 0
    per_output = math.prod(weight.shape[1:])  # C_in/groups * kernel (C_out/groups when transposed)
    bias = out_numel if _has_bias(operands, params) else 0
    if key.startswith("conv_transpose") or args.get("transposed") is True:
        # Every input element scatters into C_out/groups * kernel outputs.
        return 2 * operands[0].numel * per_output + bias
    return 2 * out_numel * per_output + bias


def _attention_flops(key: str, operands: list[TensorSpec], args: dict[str, Any]) -> int:
    if len(operands) < 3:
        return 0
    q, k, v = operands[:3]
    if key == "scaled_dot_product_attention" and len(q.shape) >= 2:
        batch = math.prod(q.shape[:-2])
        length, dim, keys, vdim = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
        # QK^T, softmax (~5 per score), PV.
        return batch * length * keys * (2 * dim + 5 + 2 * vdim)
    if key in ("multihead_attention", "multi_head_attention_forward") and len(q.shape) >= 2:
        embed = q.shape[-1]
        seq_dim = 1 if args.get("batch_first") and len(k.shape) == 3 else 0
        keys = k.shape[seq_dim]
        projections = 2 * embed * (2 * q.numel + k.numel + v.numel)  # q, k, v and out proj
        return projections + 4 * q.numel * keys + 5 * (q.numel // embed) * keys
    return 0
