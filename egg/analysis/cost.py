"""FLOPs and bytes of one canonical ATen op run alone (unfused).

Conventions: a multiply-add counts 2 FLOPs (matmul, convolution, attention); pointwise math
counts 1 per output element whatever the function (a GELU is "1 FLOP" here: the roofline only
needs the order of magnitude, and pointwise work is never the compute bound on an H200); casts,
copies and tensor creation count none; reductions and scans 1 per input element (``var`` 2).
Bytes read every tensor operand and write every output once, except gathers, which read only
what they produce (plus their index tensor). Views are free: index maps, not bytes.
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
    aten._to_copy.default aten.clone.default aten.full.default aten.full_like.default
    aten.scalar_tensor.default aten.arange.start_step aten.arange.default aten.arange.start
    aten.empty.memory_format aten.empty_strided.default aten.empty_permuted.default
    """.split()
)
# Indexing ops that read only the elements they produce.
_GATHER_LIKE = frozenset("aten.index.Tensor aten.gather.default aten.index_select.default".split())
_TWO_PASS = frozenset({"aten.var.correction"})


def itemsize(dtype: str) -> int:
    """Bytes per element of a dtype name ("float32" -> 4); 0 for Python scalars."""
    value = getattr(torch, dtype, None)
    return value.itemsize if isinstance(value, torch.dtype) else 0


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat", "complex"))


def spec_bytes(spec: TensorSpec) -> int:
    return spec.numel * itemsize(spec.dtype) if spec.is_tensor else 0


def op_cost(
    target: str,
    op_class: OpClass | None,
    operands: list[TensorSpec],
    outputs: list[TensorSpec],
    args: dict[str, Any],
) -> tuple[int, int]:
    """(flops, bytes) of ``target`` (``"aten.mm.default"``). ``op_class`` None means a view."""
    if op_class is None:
        return 0, 0
    out_bytes = sum(spec_bytes(o) for o in outputs)
    if target in _GATHER_LIKE:
        index_bytes = sum(spec_bytes(o) for o in operands if not _is_float(o.dtype))
        data_bytes = 2 * out_bytes + index_bytes
    else:
        data_bytes = sum(spec_bytes(o) for o in operands) + out_bytes
    return _flops(target, op_class, operands, outputs, args), data_bytes


def _flops(
    target: str, op_class: OpClass, operands: list[TensorSpec], outputs: list[TensorSpec], args: dict[str, Any]
) -> int:
    out_numel = outputs[0].numel if outputs else 0
    in_numel = operands[0].numel if operands else 0
    if op_class in (OpClass.ELEMENTWISE, OpClass.BROADCAST):
        return 0 if target in _NO_MATH else out_numel
    if op_class == OpClass.MATMUL:
        return _matmul_flops(target, operands, out_numel)
    if op_class == OpClass.CONV:
        return _conv_flops(operands, out_numel, args)
    if op_class == OpClass.ATTENTION:
        return _attention_flops(operands)
    if op_class == OpClass.POOLING:
        kernel = args.get("kernel_size")
        if isinstance(kernel, list) and kernel and all(isinstance(k, int) for k in kernel):
            return out_numel * math.prod(kernel)
        return in_numel  # adaptive pooling: every input element is visited once
    if op_class in (OpClass.REDUCTION, OpClass.SCAN):
        return (2 if target in _TWO_PASS else 1) * in_numel
    return 0  # indexing, sorting: data movement


def _matmul_flops(target: str, operands: list[TensorSpec], out_numel: int) -> int:
    if target == "aten.addmm.default" and len(operands) == 3:
        k = operands[1].shape[-1] if operands[1].shape else 1
        return 2 * out_numel * k + out_numel
    if target == "aten._cdist_forward.default" and operands:
        return 3 * out_numel * (operands[0].shape[-1] if operands[0].shape else 1)
    # mm and bmm: the contraction is the last dim of the first operand
    k = operands[0].shape[-1] if operands and operands[0].shape else 1
    return 2 * out_numel * k


def _conv_flops(operands: list[TensorSpec], out_numel: int, args: dict[str, Any]) -> int:
    if len(operands) < 2:
        return 0
    x, weight = operands[0], operands[1]
    per_output = math.prod(weight.shape[1:])  # C_in/groups * kernel (C_out/groups when transposed)
    bias = out_numel if len(operands) > 2 else 0
    if args.get("transposed") is True:
        return 2 * x.numel * per_output + bias  # every input element scatters into the outputs
    return 2 * out_numel * per_output + bias


def _attention_flops(operands: list[TensorSpec]) -> int:
    if len(operands) < 3 or len(operands[0].shape) < 2:
        return 0
    q, k, v = operands[:3]
    batch = math.prod(q.shape[:-2])
    length, dim, keys, vdim = q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
    return batch * length * keys * (2 * dim + 5 + 2 * vdim)  # QK^T, softmax (~5 per score), PV
