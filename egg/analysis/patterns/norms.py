"""Normalisations: RMSNorm, LayerNorm, GroupNorm, BatchNorm, InstanceNorm, in any spelling.

Every one is ``x`` (centred or not) times an inverse square root of its statistics plus eps:
the matcher starts at the inverse square root (``rsqrt``, ``1/sqrt``, ``pow(-0.5)``, a division
by ``sqrt``), reads the statistics (``var``, or a mean of squares of ``x`` or of ``x - mean(x)``,
or a running-variance buffer), finds the first full-size value computed from it (the
normalised ``x``) and follows an optional elementwise affine (a weight, then a bias). The
family follows from the reduced dims: trailing dims -> layer_norm, the batch dim -> batch_norm,
grouped channels -> group_norm, spatial dims -> instance_norm.
"""

from __future__ import annotations

from typing import Any

from torch import fx

from egg.analysis.models import PatternMatch
from egg.analysis.patterns.forms import (
    POINTWISE_OR_VIEW,
    ancestors,
    arg,
    inverse_sqrt_of,
    is_op,
    mean_of,
    numel,
    operands,
    plus_constant,
    region,
    shape,
    source,
    square_of,
    value,
)

_CASTS_AND_VIEWS = ("aten._to_copy", "aten.view", "aten.unsqueeze", "aten.squeeze", "aten.as_strided")


def _statistics(core: Any) -> tuple[Any, list[int], bool, dict[str, Any]] | None:
    """(x, dims, centred, extra params) of the value under the square root, or None."""
    core = source(core)
    if is_op(core, "aten.var"):
        correction = core.kwargs.get("correction", arg(core, 2))
        dims = arg(core, 1, "dim")
        rank = len(shape(core.args[0]))
        listed = list(range(rank)) if dims is None else [d % rank for d in dims]
        return core.args[0], sorted(listed), True, {"correction": correction}
    mean = mean_of(core)
    if mean is not None:
        squared = square_of(mean[0])
        if squared is None:
            return None
        centred = source(squared)
        if is_op(centred, "aten.sub"):
            x, mu = operands(centred)
            inner = mean_of(mu) if isinstance(mu, fx.Node) else None
            if inner is not None and source(inner[0]) is source(x) and inner[1] == mean[1]:
                return x, mean[1], True, {}
        return squared, mean[1], False, {}
    if isinstance(core, fx.Node) and core.op == "placeholder":
        return core, [], True, {"running_statistics": True}
    return None


def _normalised(start: fx.Node, x: Any, order: dict[fx.Node, int]) -> fx.Node | None:
    """The first value computed from ``start`` (pointwise) that has x's size and reads x."""
    size = numel(x)
    found: list[fx.Node] = []
    pending, seen = [start], {start}
    while pending:
        node = pending.pop()
        for user in node.users:
            if user in seen or not is_op(user, *POINTWISE_OR_VIEW):
                continue
            seen.add(user)
            if numel(user) == size and source(x) in ancestors(user):
                found.append(user)
            else:
                pending.append(user)
    return min(found, key=order.__getitem__) if found else None


def _affine(node: fx.Node, size: int) -> tuple[fx.Node, Any, Any]:
    """Follow casts/views, then ``* weight`` and ``+ bias`` (smaller, broadcast operands)."""
    weight = bias = None
    while len(node.users) == 1:
        user = next(iter(node.users))
        other = None
        if is_op(user, "aten.mul", "aten.add"):
            a, b = operands(user)
            other = b if a is node else a
        if is_op(user, *_CASTS_AND_VIEWS):
            node = user
        elif is_op(user, "aten.mul") and weight is None and bias is None and 0 < numel(other) < size:
            weight, node = other, user
        elif is_op(user, "aten.add") and bias is None and isinstance(other, fx.Node) and 0 < numel(other) < size:
            bias, node = other, user
        else:
            break
    return node, weight, bias


def _family(x: Any, dims: list[int], centred: bool, extra: dict[str, Any]) -> str:
    if not centred:
        return "rms_norm"
    if extra.get("running_statistics"):
        return "batch_norm"
    rank = len(shape(x))
    grouped = is_op(x, "aten.view") and shape(x) != shape(x.args[0])
    if 0 in dims:
        return "instance_norm" if grouped and shape(x)[0] == 1 else "batch_norm"
    if grouped and rank == 4 and dims == [2, 3]:
        return "group_norm"
    if dims == list(range(rank - len(dims), rank)):
        return "layer_norm"  # trailing dims ([B, T, D] over D; a [N, C, L] instance norm reads alike)
    return "norm"


def find_norms(graph: fx.Graph, names: dict[str, str]) -> list[PatternMatch]:
    order = {n: i for i, n in enumerate(graph.nodes)}
    matches: list[PatternMatch] = []
    for node in graph.nodes:
        if is_op(node, "aten.rsqrt", "aten.reciprocal", "aten.pow"):
            under = inverse_sqrt_of(node)
        elif is_op(node, "aten.sqrt") and any(is_op(u, "aten.div") and u.args[1] is node for u in node.users):
            under = node.args[0]
        else:
            continue
        if under is None:
            continue
        core, eps = plus_constant(under)
        stats = _statistics(core)
        if stats is None:
            continue
        x, dims, centred, extra = stats
        if extra.get("running_statistics"):
            x = _running_input(node)
            if x is None:
                continue
            dims = [d for d in range(len(shape(x))) if d != 1]
        out = _normalised(node, x, order)
        if out is None:
            continue
        end, weight, bias = _affine(out, numel(x))
        weight = weight if weight is not None else _weight_applied_first(out, x)
        family = _family(x, dims, centred, extra)
        inner = value(source(x))
        params: dict[str, Any] = {
            "dims": dims,
            "eps": eps,
            "weight": _name(weight, names),
            "bias": _name(bias, names),
            "input_dtype": str(inner.dtype).removeprefix("torch.") if inner is not None else None,
            "compute_dtype": str(value(node).dtype).removeprefix("torch."),
            **{k: v for k, v in extra.items() if k != "running_statistics"},
        }
        if extra.get("running_statistics"):
            params["training"] = False
        nodes = region([source(x)], end)
        matches.append(PatternMatch(family=family, nodes=[n.name for n in nodes], params=params))
    return matches


def _weight_applied_first(out: fx.Node, x: Any) -> Any:
    """w in ``(w * x) * rsqrt(...)``: the weight multiplied in before the normalisation."""
    if not is_op(out, "aten.mul"):
        return None
    for operand in operands(out):
        inner = source(operand)
        if is_op(inner, "aten.mul"):
            a, b = operands(inner)
            for w, other in ((a, b), (b, a)):
                if isinstance(w, fx.Node) and 0 < numel(w) < numel(x) and source(other) is source(x):
                    return w
    return None


def _running_input(rsqrt: fx.Node) -> Any:
    """x of ``(x - running_mean) * rsqrt(running_var + eps)`` (BatchNorm in eval mode)."""
    pending = [rsqrt]
    while pending:
        node = pending.pop()
        for user in node.users:
            if is_op(user, "aten.mul"):
                for operand in operands(user):
                    centred = source(operand)
                    if is_op(centred, "aten.sub") and source(centred.args[1]).op == "placeholder":
                        return centred.args[0]
            if is_op(user, *_CASTS_AND_VIEWS):
                pending.append(user)
    return None


def _name(node: Any, names: dict[str, str]) -> str | None:
    if not isinstance(node, fx.Node):
        return None
    found = source(node)
    return names.get(found.name, found.name)
