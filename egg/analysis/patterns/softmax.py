"""Softmax, log-softmax, logsumexp, cross-entropy and attention, in any spelling.

Each starts at an ``exp``: its argument is ``x`` or ``x - max(x)`` (``amax``, ``max(dim)[0]``,
or PyTorch's inf-guarded ``where(|amax| == inf, 0, amax)``), its ``sum`` over some dims is the
normaliser. Dividing by the sum (or multiplying by its reciprocal) is a softmax; subtracting its
log from the shifted input is a log-softmax; adding the max back to the log is a logsumexp. A
gather from a log-softmax (or a logsumexp minus a gather) is a cross-entropy; a softmax between
two matmuls (or ``scaled_dot_product_attention`` itself) is attention.
"""

from __future__ import annotations

from typing import Any

from torch import fx

from egg.analysis.models import PatternMatch
from egg.analysis.patterns.forms import (
    POINTWISE_OR_VIEW,
    arg,
    is_op,
    number,
    operands,
    reduced_dims,
    region,
    same,
    source,
    users,
    value,
)
from egg.capture.opset import EXTERN, category

_MATMUL = ("aten.mm", "aten.bmm", "aten.addmm")


def max_of(node: Any) -> tuple[Any, list[int]] | None:
    """(x, dims) when ``node`` is the max of x over dims (through PyTorch's inf guard)."""
    node = source(node)
    if is_op(node, "aten.where") and number(node.args[1]) == 0.0:
        node = source(node.args[2])
    if is_op(node, "aten.amax"):
        return node.args[0], reduced_dims(node) or []
    if node is not None and getattr(node, "target", None) is not None and node.op == "call_function":
        if "getitem" in str(node.target) and is_op(node.args[0], "aten.max") and node.args[1] == 0:
            maximum = node.args[0]
            return maximum.args[0], reduced_dims(maximum) or []
    return None


def _shift(z: Any) -> tuple[Any, bool]:
    """(x, stable): z is ``x - max(x)`` (stable) or x itself."""
    inner = source(z)
    if is_op(inner, "aten.sub"):
        x, m = operands(inner)
        found = max_of(m) if isinstance(m, fx.Node) else None
        if found is not None and same(found[0], x):
            return x, True
    return z, False


def _params(x: Any, dims: list[int] | None, stable: bool, end: fx.Node) -> dict[str, Any]:
    inner, out = value(source(x)), value(end)
    return {
        "dims": dims,
        "stable": stable,
        "input_dtype": str(inner.dtype).removeprefix("torch.") if inner is not None else None,
        "output_dtype": str(out.dtype).removeprefix("torch.") if out is not None else None,
    }


def _through_casts(node: fx.Node) -> fx.Node:
    while len(node.users) == 1 and is_op(next(iter(node.users)), "aten._to_copy"):
        node = next(iter(node.users))
    return node


def _match(family: str, x: Any, end: fx.Node, params: dict[str, Any]) -> PatternMatch:
    return PatternMatch(family=family, nodes=[n.name for n in region([source(x)], end)], params=params)


def find_softmax_family(graph: fx.Graph, names: dict[str, str]) -> list[PatternMatch]:
    found: list[PatternMatch] = []
    for e in graph.nodes:
        if not is_op(e, "aten.exp"):
            continue
        z = e.args[0]
        x, stable = _shift(z)
        for user in users(e):
            total = _normaliser(user, e)
            if total is not None:
                end = _through_casts(user)
                found.append(_match("softmax", x, end, _params(x, reduced_dims(total), stable, end)))
        for total in (u for u in users(e) if is_op(u, "aten.sum")):
            for log in (u for u in users(total) if is_op(u, "aten.log")):
                found += _log_forms(z, x, stable, log, reduced_dims(total), e)
    found += _cross_entropy(found, graph, names)
    return found


def _normaliser(node: fx.Node, e: fx.Node) -> fx.Node | None:
    """The sum when ``node`` is ``e / sum(e)`` or ``e * (1 / sum(e))`` (e possibly recomputed)."""
    denominator = None
    if is_op(node, "aten.div") and source(node.args[0]) is e:
        denominator = source(node.args[1])
    elif is_op(node, "aten.mul"):
        for factor in operands(node):
            if is_op(source(factor), "aten.reciprocal"):
                denominator = source(source(factor).args[0])
    if is_op(denominator, "aten.sum") and same(denominator.args[0], e):
        return denominator
    return None


def _log_forms(z: Any, x: Any, stable: bool, log: fx.Node, dims: Any, e: fx.Node) -> list[PatternMatch]:
    found = []
    for user in users(log):
        if is_op(user, "aten.sub") and source(user.args[0]) is source(z) and source(user.args[1]) is log:
            end = _through_casts(user)
            found.append(_match("log_softmax", x, end, _params(x, dims, stable, end)))
        elif is_op(user, "aten.add") and stable:
            other = [o for o in operands(user) if source(o) is not log]
            if other and max_of(other[0]) is not None and same(max_of(other[0])[0], x):
                found.append(_match("logsumexp", x, user, _params(x, dims, stable, user)))
    if not stable and not found:
        found.append(_match("logsumexp", x, log, _params(x, dims, stable, log)))
    return found


def _loss_end(start: fx.Node) -> fx.Node:
    """The last value computed from ``start`` before any matmul, convolution, pooling, ..."""
    order = {n: i for i, n in enumerate(start.graph.nodes)}
    last, pending, seen = start, [start], {start}
    while pending:
        node = pending.pop()
        for user in node.users:
            if user in seen or user.op != "call_function" or op_in_extern(user):
                continue
            seen.add(user)
            pending.append(user)
            if order[user] > order[last]:
                last = user
    return last


def op_in_extern(node: fx.Node) -> bool:
    return category(node.target) in ("matmul", "conv", "attention", "pooling", "sorting")


def _gathers_of(match: PatternMatch, by_name: dict[str, fx.Node]) -> list[tuple[fx.Node, fx.Node]]:
    """(gather, where the loss starts) pairs: a gather of a log-softmax, or a logsumexp minus a gather."""
    end = by_name[match.nodes[-1]]
    pairs = []
    if match.family == "log_softmax":
        pairs = [(g, g) for g in users(end) if is_op(g, "aten.gather") and source(g.args[0]) is end]
    elif match.family == "logsumexp":
        for difference in (u for u in users(end) if is_op(u, "aten.sub") and source(u.args[0]) is end):
            picked = source(difference.args[1])
            if is_op(picked, "aten.gather"):
                pairs.append((picked, difference))
    return pairs


def _cross_entropy(found: list[PatternMatch], graph: fx.Graph, names: dict[str, str]) -> list[PatternMatch]:
    by_name = {n.name: n for n in graph.nodes}
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    losses = []
    for match in (m for m in found if m.nodes and m.family in ("log_softmax", "logsumexp")):
        for gather, start in _gathers_of(match, by_name):
            target = source(gather.args[2])
            if is_op(target, "aten.where") and is_op(source(target.args[0]), "aten.ne"):
                target = source(source(target.args[0]).args[0])  # nll_loss: where(t != ignore, t, 0)
            ignore = [number(u.args[1]) for u in users(target) if is_op(u, "aten.ne")]
            loss = _loss_end(start)
            params = {
                "dims": match.params.get("dims"),
                "ignore_index": int(ignore[0]) if ignore and ignore[0] is not None else None,
                "target": names.get(target.name, target.name) if isinstance(target, fx.Node) else None,
                "input_dtype": match.params.get("input_dtype"),
            }
            covered = {*match.nodes, gather.name, start.name, *(n.name for n in region([start], loss))}
            nodes = sorted(covered, key=order.__getitem__)
            losses.append(PatternMatch(family="cross_entropy", nodes=nodes, params=params))
    return losses


def find_attention(graph: fx.Graph, softmaxes: list[PatternMatch]) -> list[PatternMatch]:
    found = []
    for node in graph.nodes:
        if is_op(node, "aten.scaled_dot_product_attention"):
            params = {
                "fused": True,
                "masked": arg(node, 3, "attn_mask") is not None,
                "dropout": arg(node, 4, "dropout_p", 0.0),
                "causal": bool(arg(node, 5, "is_causal", False)),
                "scale": node.kwargs.get("scale", arg(node, 6)),
                "grouped_query": bool(node.kwargs.get("enable_gqa", False)),
            }
            found.append(PatternMatch(family="attention", nodes=[node.name], params=params))
    by_name = {n.name: n for n in graph.nodes}
    for softmax in (m for m in softmaxes if m.family == "softmax" and m.nodes):
        first, end = by_name[softmax.nodes[0]], by_name[softmax.nodes[-1]]
        scores, masked = _scores(first)
        values = next((u for u in users(end) if is_op(u, *_MATMUL)), None)
        if scores is None or values is None:
            continue
        nodes = region(scores.all_input_nodes, values)
        params = {"fused": False, "masked": masked, "softmax_dims": softmax.params.get("dims")}
        found.append(PatternMatch(family="attention", nodes=[n.name for n in nodes], params=params))
    return found


def _scores(node: fx.Node) -> tuple[fx.Node | None, bool]:
    """The matmul whose result reaches ``node`` through pointwise ops and views; masked?"""
    masked, pending, seen = False, [node], set()
    while pending:
        current = pending.pop()
        for producer in current.all_input_nodes:
            if producer in seen:
                continue
            seen.add(producer)
            if is_op(producer, *_MATMUL):
                return producer, masked
            if is_op(producer, *POINTWISE_OR_VIEW) and category(producer.target) not in EXTERN:
                masked = masked or is_op(producer, "aten.where") or (
                    is_op(producer, "aten.add") and all(isinstance(o, fx.Node) for o in operands(producer))
                )
                pending.append(producer)
    return None, masked
