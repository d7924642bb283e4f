"""One node of a canonical ATen graph as an OpNode: its class, static arguments, shapes and cost.

Also the value spellings the rest of EGG shares (``dtype_name``, ``tensor_spec``, ``to_json``)
and ``module_args``, which the fx front end of ``agents/expert`` still reads.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import fx, nn
from torch.utils._pytree import tree_flatten

from egg.analysis.cost import op_cost
from egg.analysis.models import OpNode, TensorSpec
from egg.analysis.optable import aten_op_class
from egg.capture.model import op_name
from egg.vocabulary import OpClass

# Module attributes that matter to whoever writes the kernel (read by agents/expert's fx path).
_MODULE_ATTRS = (
    "in_features out_features in_channels out_channels kernel_size stride padding dilation "
    "groups output_padding padding_mode eps momentum affine track_running_stats "
    "elementwise_affine normalized_shape num_groups num_features num_channels negative_slope "
    "approximate dim p inplace min_val max_val beta threshold value lambd alpha reduction "
    "output_size return_indices ceil_mode count_include_pad divisor_override num_embeddings "
    "embedding_dim padding_idx margin swap log_target delta label_smoothing ignore_index "
    "embed_dim num_heads batch_first dropout scale_factor mode align_corners upscale_factor "
    "start_dim end_dim norm_type input_size hidden_size num_layers bidirectional proj_size"
).split()
_TRAINING_MATTERS = ("batch_norm", "instance_norm", "dropout")


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tensor_spec(name: str, value: torch.Tensor) -> TensorSpec:
    return TensorSpec(name=name, shape=[_size(s) for s in value.shape], dtype=dtype_name(value.dtype))


def _size(size: Any) -> int:
    """A dimension as an int; a data-dependent one (an unbacked SymInt) as its upper bound or 0."""
    if isinstance(size, int):
        return size
    node = getattr(size, "node", None)
    hint = getattr(node, "hint", None)
    if isinstance(hint, int):
        return hint
    try:
        bound = node.shape_env.bound_sympy(node.expr).upper  # type: ignore[union-attr]
        return int(bound) if bound.is_finite else 0
    except Exception:  # noqa: BLE001 - no usable bound: count nothing rather than guess
        return 0


def value_spec(name: str, value: Any) -> TensorSpec:
    """A forward input/output: a tensor, or a scalar recorded with its value."""
    if isinstance(value, torch.Tensor):
        return tensor_spec(name, value)
    scalar = value if isinstance(value, (int, float, bool, str)) or value is None else repr(value)
    return TensorSpec(name=name, shape=[], dtype=type(value).__name__, is_tensor=False, value=scalar)


def to_json(value: Any) -> Any:
    """A static argument as JSON: slices, dtypes and sizes spelled so an LLM can read them."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (torch.dtype, torch.device, torch.memory_format, torch.layout)):
        return str(value).removeprefix("torch.")
    if isinstance(value, slice):
        return {"slice": [to_json(value.start), to_json(value.stop), to_json(value.step)]}
    if value is Ellipsis:
        return "..."
    if isinstance(value, (list, tuple, torch.Size)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return str(value)
    return repr(value)


def module_args(module: nn.Module, key: str) -> dict[str, Any]:
    """The configuration of an nn.Module leaf (kernel size, eps, ...), for the fx front end."""
    found: dict[str, Any] = {}
    for attr in _MODULE_ATTRS:
        value = getattr(module, attr, None)
        if value is not None and not callable(value) and not isinstance(value, torch.Tensor):
            found[attr] = to_json(value)
    if not getattr(module, "transposed", True):
        found.pop("output_padding", None)  # every _ConvNd has one; only transposed convs use it
    if hasattr(module, "bias") and not isinstance(module, nn.MultiheadAttention):
        found["bias"] = module.bias is not None
    if key.startswith(_TRAINING_MATTERS):
        found["training"] = module.training
    return found


def _has_node(value: Any) -> bool:
    return any(isinstance(leaf, fx.Node) for leaf in tree_flatten(value)[0])


def static_args(node: fx.Node) -> dict[str, Any]:
    """The non-tensor arguments of an ATen call by schema name (``dim``, ``keepdim``, ``eps``)."""
    schema = getattr(node.target, "_schema", None)
    names = [a.name for a in schema.arguments] if schema is not None else ["index"] * len(node.args)
    pairs = list(zip(names, node.args)) + list(node.kwargs.items())
    return {name: to_json(value) for name, value in pairs if value is not None and not _has_node(value)}


def _module_path(node: fx.Node) -> str | None:
    stack = node.meta.get("nn_module_stack") or {}
    path = list(stack.values())[-1][0] if stack else ""
    return path or None


def _tensors(value: Any) -> list[torch.Tensor]:
    return [leaf for leaf in tree_flatten(value)[0] if isinstance(leaf, torch.Tensor)]


def op_node(node: fx.Node, name_of: Callable[[fx.Node], str]) -> OpNode:
    """The OpNode of one ``call_function`` node of a canonical graph."""
    producers = [leaf for leaf in tree_flatten((node.args, node.kwargs))[0] if isinstance(leaf, fx.Node)]
    operands = [
        tensor_spec(f"{node.name}.in{i}", t)
        for i, t in enumerate(t for p in producers for t in _tensors(p.meta.get("val")))
    ]
    outputs = [tensor_spec(f"{node.name}.{i}", t) for i, t in enumerate(_tensors(node.meta.get("val")))]
    op_class = aten_op_class(node.target)
    if op_class == OpClass.ELEMENTWISE and len({tuple(s.shape) for s in operands if s.shape}) > 1:
        op_class = OpClass.BROADCAST  # 0-d tensors act as scalars; real shapes differ
    args = static_args(node)
    flops, nbytes = op_cost(op_name(node.target), op_class, operands, outputs, args)
    first = outputs[0] if outputs else None
    return OpNode(
        name=node.name,
        target=op_name(node.target),
        op_class=op_class or OpClass.OTHER,
        is_view=op_class is None,
        module=_module_path(node),
        inputs=[name_of(p) for p in producers],
        input_shapes=[s.shape for s in operands],
        output_shape=first.shape if first else None,
        dtype=first.dtype if first else (operands[0].dtype if operands else None),
        args=args,
        flops=flops,
        bytes=nbytes,
    )
