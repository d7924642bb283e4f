"""Recognise hand-written normalisations in the traced graph and fold them into one norm node.

Hugging Face's ``LlamaRMSNorm`` (and every model that copied it) writes RMSNorm out by hand::

    h = x.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    return weight * h.to(input_dtype)

Lowered op by op, that is a reduction (``pow`` + ``mean``) and an elementwise chain that reads
``h`` again: three kernels and three passes over the tensor. Folded into one
``torch.nn.functional.rms_norm(h, [H], eps=eps)`` node, the partitioner sees a normalisation
anchor with the upcast as its prologue and the downcast and gain as its epilogue, which the
``reduce_norm`` template computes in one pass (one read, one write).

The folded node remembers how to write the reference's own arithmetic back
(``node.meta["expert_expr"]``): a variant that leaves it unfused (chains-only) then emits the
same ops the reference ran, with sizes read at run time, instead of a baked ``normalized_shape``.
"""

from __future__ import annotations

import operator

import structlog
import torch
from torch import fx

from agents.expert.lowering import Lowered, lower
from agents.expert.trace import TracedProblem

log = structlog.get_logger(__name__)

EXPR_META = "expert_expr"  # node.meta key: Python for the node's value, "{0}" = its first argument


def _only_user(node: fx.Node) -> fx.Node | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _step(node: fx.Node | None, tp: TracedProblem) -> Lowered | None:
    """The lowered form of a single-step node (None for anything else)."""
    if node is None:
        return None
    low = lower(node, tp)
    return low if low is not None and len(low.steps) == 1 else None


def _is_square(low: Lowered, h: fx.Node) -> bool:
    step = low.steps[0]
    if low.key == "pow":
        return step.operands[:1] == [h] and step.kwargs.get("exponent") in (2, 2.0)
    return low.key == "mul" and step.operands == [h, h]


def _last_dim(dim: object, rank: int) -> bool:
    if isinstance(dim, list) and len(dim) == 1:
        dim = dim[0]
    return isinstance(dim, int) and not isinstance(dim, bool) and dim in (-1, rank - 1)


def _match_rms(square: fx.Node, tp: TracedProblem) -> tuple[fx.Node, fx.Node, float, list[fx.Node]] | None:
    """(h, the output node ``h * rsqrt(mean(h^2) + eps)``, eps, the inner nodes) or None."""
    low_sq = _step(square, tp)
    h = square.args[0] if square.args else None
    if low_sq is None or not isinstance(h, fx.Node) or not _is_square(low_sq, h):
        return None
    meta_h = tp.meta.get(h.name)
    if meta_h is None or not meta_h.is_tensor or meta_h.dtype != "float32" or not meta_h.shape:
        return None  # statistics of a half-precision h would be rounded differently: fp32 only
    rank = len(meta_h.shape)
    mean = _only_user(square)
    low_mean = _step(mean, tp)
    if low_mean is None or low_mean.key != "mean" or mean is None:
        return None
    kw = low_mean.steps[0].kwargs
    if not _last_dim(kw.get("dim"), rank) or kw.get("keepdim") is not True or kw.get("dtype") is not None:
        return None
    add = _only_user(mean)
    low_add = _step(add, tp)
    if add is None or low_add is None or low_add.key != "add" or low_add.steps[0].kwargs.get("alpha", 1) != 1:
        return None
    ops = low_add.steps[0].operands
    eps = next((o for o in ops if o is not mean), None)
    if len(ops) != 2 or mean not in ops or not isinstance(eps, (int, float)) or isinstance(eps, bool):
        return None
    rsqrt = _only_user(add)
    low_rsqrt = _step(rsqrt, tp)
    if rsqrt is None or low_rsqrt is None or low_rsqrt.key != "rsqrt":
        return None
    out = _only_user(rsqrt)
    low_out = _step(out, tp)
    if out is None or low_out is None or low_out.key != "mul" or set(low_out.steps[0].operands) != {h, rsqrt}:
        return None
    if tp.meta[out.name].shape != meta_h.shape or tp.meta[out.name].dtype != "float32":
        return None
    return h, out, float(eps), [square, mean, add, rsqrt, out]


def fold_norms(tp: TracedProblem) -> int:
    """Rewrite every hand-written RMSNorm of ``tp.gm`` into one ``F.rms_norm`` node; how many."""
    graph = tp.gm.graph
    folded = 0
    for node in list(graph.nodes):
        if node.graph is not graph or node.op not in ("call_function", "call_method"):
            continue  # erased by an earlier fold, or not a call
        found = _match_rms(node, tp)
        if found is None:
            continue
        h, out, eps, inner = found
        hidden = tp.meta[h.name].shape[-1]
        with graph.inserting_after(out):
            norm = graph.call_function(torch.nn.functional.rms_norm, (h, [hidden]), {"eps": eps})
        # what an unfused variant writes: the reference's own ops, sizes from the tensor at run time
        square = "{0}.pow(2)" if inner[0].target in ("pow", torch.pow, operator.pow) else "({0} * {0})"
        norm.meta[EXPR_META] = f"{{0}} * torch.rsqrt({square}.mean(-1, keepdim=True) + {eps!r})"
        tp.meta[norm.name] = tp.meta[out.name]
        out.replace_all_uses_with(norm)
        for dead in reversed(inner):
            graph.erase_node(dead)
        folded += 1
        log.debug("expert.folded_rms_norm", input=h.name, output=norm.name, eps=eps)
    if folded:
        graph.lint()
        tp.gm.recompile()
    return folded
