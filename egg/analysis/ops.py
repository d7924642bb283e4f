"""Turn one executed graph node (its target, concrete arguments and result) into an OpNode.

Both capture paths (fx with shape propagation, torch.export) end here, so classification,
argument recording and costing are identical whichever path traced the program.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.fx.operator_schemas import normalize_function
from torch.utils._pytree import tree_flatten

from egg.analysis.cost import op_cost
from egg.analysis.models import OpNode, TensorSpec
from egg.analysis.optable import classify, op_key
from egg.vocabulary import OpClass

# Module attributes that matter to whoever writes the kernel.
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
_OPERATOR_FUNCTIONS = frozenset(f for f in vars(operator).values() if callable(f))


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tensor_spec(name: str, value: torch.Tensor) -> TensorSpec:
    return TensorSpec(name=name, shape=[int(s) for s in value.shape], dtype=dtype_name(value.dtype))


def value_spec(name: str, value: Any) -> TensorSpec:
    """A forward input/output: a tensor, or a scalar recorded with its value."""
    if isinstance(value, torch.Tensor):
        return tensor_spec(name, value)
    scalar = value if isinstance(value, (int, float, bool, str)) or value is None else repr(value)
    return TensorSpec(
        name=name, shape=[], dtype=type(value).__name__, is_tensor=False, value=scalar
    )


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


def _has_tensor(value: Any) -> bool:
    return any(isinstance(leaf, torch.Tensor) for leaf in tree_flatten(value)[0])


def _named_args(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    """Arguments with their parameter names where the function's schema can tell them."""
    schema = getattr(fn, "_schema", None)
    if schema is not None:  # an aten OpOverload from torch.export
        names = [a.name for a in schema.arguments]
        return list(zip(names, args)) + list(kwargs.items())
    if fn is operator.getitem:
        return list(zip(("input", "index"), args))
    if fn is torch.einsum and args and isinstance(args[0], str):
        return [("equation", args[0])]
    if fn in _OPERATOR_FUNCTIONS:
        return list(zip(("input", "other", "arg2"), args)) + list(kwargs.items())
    try:
        pair = normalize_function(fn, args, kwargs, normalize_to_only_use_kwargs=True)
        if pair is None:
            types = tuple(type(a) for a in args)
            kinds = {k: type(v) for k, v in kwargs.items()}
            pair = normalize_function(
                fn, args, kwargs, arg_types=types, kwarg_types=kinds,
                normalize_to_only_use_kwargs=True,
            )
    except Exception:  # noqa: BLE001 - schema matching is best effort
        pair = None
    if pair is not None:
        return list(pair.kwargs.items())
    # No schema (Tensor.view(4, 2, 4), getattr(x, "device")): keep the positional constants.
    positional = [a for a in args if not _has_tensor(a)]
    return ([("args", positional)] if positional else []) + list(kwargs.items())


def static_args(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The non-tensor arguments of a call, by name; defaults left as None and privates dropped."""
    return {
        name: to_json(value)
        for name, value in _named_args(fn, args, kwargs)
        if value is not None and not name.startswith("_") and not _has_tensor(value)
    }


def module_args(module: nn.Module, key: str) -> dict[str, Any]:
    """The configuration of an nn.Module leaf (kernel size, eps, ...)."""
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


def module_params(module: nn.Module) -> dict[str, TensorSpec]:
    named = list(module.named_parameters()) + list(module.named_buffers())
    return {name: tensor_spec(name, value) for name, value in named}


def build_op(
    *,
    name: str,
    target: str,
    key: str | None = None,
    module: str | None = None,
    inputs: list[str],
    operands: list[torch.Tensor],
    result: Any,
    args: dict[str, Any],
    params: dict[str, TensorSpec] | None = None,
) -> OpNode | None:
    """An OpNode, or None for a node that touches no tensor (Python arithmetic on sizes)."""
    outputs = [
        tensor_spec(f"{name}.{i}", leaf)
        for i, leaf in enumerate(tree_flatten(result)[0])
        if isinstance(leaf, torch.Tensor)
    ]
    if not operands and not outputs:
        return None
    key = key or op_key(target)
    op_class = classify(key)
    specs = [tensor_spec(f"{name}.in{i}", t) for i, t in enumerate(operands)]
    if op_class == OpClass.REDUCTION and key in ("max", "min") and len(specs) > 1:
        op_class = OpClass.ELEMENTWISE  # torch.max(a, b) is pointwise
    if op_class == OpClass.ELEMENTWISE and _broadcasts(specs):
        op_class = OpClass.BROADCAST
    flops, nbytes = op_cost(key, op_class, specs, outputs, args, params or {})
    first = outputs[0] if outputs else None
    return OpNode(
        name=name,
        target=target,
        op_class=op_class or OpClass.OTHER,
        is_view=op_class is None,
        module=module,
        params={k: v.shape for k, v in (params or {}).items()},
        inputs=inputs,
        input_shapes=[s.shape for s in specs],
        output_shape=first.shape if first else None,
        dtype=first.dtype if first else (specs[0].dtype if specs else None),
        args=args,
        flops=flops,
        bytes=nbytes,
    )


def _broadcasts(specs: list[TensorSpec]) -> bool:
    # 0-d tensors act as scalars; broadcasting that matters is between real shapes.
    shapes = {tuple(s.shape) for s in specs if s.shape}
    return len(shapes) > 1


def operands_of(
    structure: Any, value_of: Callable[[Any], Any], name_of: Callable[[Any], str | None]
) -> tuple[list[str], list[torch.Tensor]]:
    """Producer names and concrete tensors of a call's graph arguments (nodes in ``structure``)."""
    names: list[str] = []
    tensors: list[torch.Tensor] = []
    for leaf in tree_flatten(structure)[0]:
        name = name_of(leaf)
        if name is None:
            continue  # a constant argument: recorded in args, not an operand
        names.append(name)
        tensors += [t for t in tree_flatten(value_of(leaf))[0] if isinstance(t, torch.Tensor)]
    return names, tensors


def getitem_key(container: Any) -> str:
    """``x[:, 1:3]`` indexes a tensor; ``torch.max(x, 1)[0]`` only picks a tuple element."""
    return "getitem" if isinstance(container, torch.Tensor) else "tuple_getitem"
