"""Recognise rotary position embeddings (RoPE) in the traced graph and fold them into one node.

Llama-family attention rotates q and k with Hugging Face's ``rotate_half`` formula, the cos/sin
rows gathered from precomputed tables by the tokens' positions (vLLM's ``RotaryEmbedding``)::

    cos = cos_table[positions].unsqueeze(2)          # sin likewise; casts allowed on the way
    qf = q.float()                                   # optional casts
    q_embed = qf * cos + rotate_half(qf) * sin       # rotate_half(y) = cat((-y[..., h:], y[..., :h]), -1)
    return q_embed.to(q.dtype)                       # optional casts; k the same with its own heads

Lowered op by op, the gather, the slices and the ``cat`` cut this into one elementwise kernel per
piece (six for q and k). Every rotation sharing ``positions`` and the tables is folded into one
``rotary_embedding(positions, cos_table, sin_table, q, k, plan=...)`` node returning the tuple of
results (``getitem`` nodes take them apart), which ``kernels/rotary.py`` computes in one launch.
The plan records each dtype the reference rounds to, so the kernel rounds exactly where it did.

Declined (left unfused, still correct): the interleaved GPT-J rotation (``x[..., ::2]``), slice
bounds that are literals instead of ``y.shape[-1] // 2``, odd head_dim, cos/sin that are not
gathered from a 2-D table by an int32/int64 tensor, fp64 math, intermediate values that something
else also reads. A folded node left unfused writes the reference's own ops back
(``node.meta["expert_expr"]``, as for the folded norms).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import structlog
import torch
from torch import fx

from agents.expert.kernels.rotary import FLOAT, INDEX, RotaryTensor
from agents.expert.lowering import lower, target_info
from agents.expert.recognise import EXPR_META
from agents.expert.trace import Meta, TracedProblem

log = structlog.get_logger(__name__)

MAX_TENSORS = 4  # rotary_embedding's x0..x3
_CATS = (torch.cat, torch.concat, torch.concatenate)


def rotary_embedding(positions: torch.Tensor, cos_table: torch.Tensor, sin_table: torch.Tensor,
                     x0: torch.Tensor, x1: torch.Tensor | None = None, x2: torch.Tensor | None = None,
                     x3: torch.Tensor | None = None, *, plan: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    """The folded node's value, op by op as the reference computed it (the graph stays runnable)."""
    xs = [x for x in (x0, x1, x2, x3) if x is not None]
    out = []
    for x, raw in zip(xs, plan["tensors"]):
        t = RotaryTensor.model_validate(raw)
        cos, sin = cos_table[positions], sin_table[positions]
        for dim in t.unsqueeze:
            cos, sin = cos.unsqueeze(dim), sin.unsqueeze(dim)
        a, r = _cast(x, t.x_casts), _cast(x, t.r_casts)
        half = r.shape[-1] // 2
        rot = torch.cat((-r[..., half:], r[..., :half]), dim=-1)
        out.append(_cast(a * _cast(cos, t.cos_casts) + rot * _cast(sin, t.sin_casts), t.out_casts))
    return tuple(out)


def _cast(x: torch.Tensor, dtypes: list[str]) -> torch.Tensor:
    for dt in dtypes:
        x = x.to(getattr(torch, dt))
    return x


def _expr(tensors: list[RotaryTensor]) -> str:
    """Python for the node's value from its arguments ``{0}`` positions, ``{1}``/``{2}`` tables, ``{3}``...
    the tensors: the reference's ops, for a variant that leaves the node unfused."""
    def cast(e: str, dtypes: list[str]) -> str:
        return e + "".join(f".to(torch.{dt})" for dt in dtypes)

    parts = []
    for i, t in enumerate(tensors):
        squeeze = "".join(f".unsqueeze({d})" for d in t.unsqueeze)
        x = "{" + str(3 + i) + "}"
        rotated = ("(lambda a, r, c, s: a * c + torch.cat((-r[..., r.shape[-1] // 2:], r[..., :r.shape[-1] // 2]), "
                   f"dim=-1) * s)({cast(x, t.x_casts)}, {cast(x, t.r_casts)}, "
                   f"{cast('{1}[{0}]' + squeeze, t.cos_casts)}, {cast('{2}[{0}]' + squeeze, t.sin_casts)})")
        parts.append(cast(rotated, t.out_casts))
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


@dataclass
class _Angle:
    """cos (or sin) as the reference built it: ``table[positions]``, unsqueezed, cast."""

    table: fx.Node
    positions: fx.Node
    unsqueeze: list[int]  # normalised: the same dims unsqueeze positions alike
    casts: list[str]
    nodes: list[fx.Node]


@dataclass
class _Rotation:
    x: fx.Node  # the tensor rotated, before the reference's casts
    plan: RotaryTensor
    cos: _Angle
    sin: _Angle
    out: fx.Node  # the node whose value the fold replaces
    inner: list[fx.Node]  # read by nothing else: erased with the fold
    support: list[fx.Node] = field(default_factory=list)  # casts, shape arithmetic: erased once unused


def _key(node: Any, tp: TracedProblem) -> str:
    if not isinstance(node, fx.Node) or node.op not in ("call_function", "call_method"):
        return ""
    return target_info(node, tp)[0]


def _meta(node: fx.Node, tp: TracedProblem) -> Meta:
    return tp.meta.get(node.name, Meta(False))


def _strip_casts(node: fx.Node, tp: TracedProblem) -> tuple[fx.Node, list[str], list[fx.Node]]:
    """(the value before a chain of casts, the casts' dtypes in order, the cast nodes)."""
    casts: list[str] = []
    nodes: list[fx.Node] = []
    while _key(node, tp) in ("to", "float", "half", "bfloat16", "double", "type", "type_as") \
            and node.args and isinstance(node.args[0], fx.Node) and _meta(node, tp).is_tensor:
        low = lower(node, tp)
        if low is None or low.key != "to":
            break
        casts.insert(0, _meta(node, tp).dtype)
        nodes.append(node)
        node = node.args[0]
    return node, casts, nodes


def _angle(node: Any, tp: TracedProblem) -> _Angle | None:
    if not isinstance(node, fx.Node):
        return None
    casts: list[str] = []
    dims: list[Any] = []
    nodes: list[fx.Node] = []
    while True:
        source, more, cast_nodes = _strip_casts(node, tp)
        casts, nodes, node = more + casts, nodes + cast_nodes, source
        if _key(node, tp) != "unsqueeze":
            break
        dims.insert(0, node.args[1] if len(node.args) > 1 else node.kwargs.get("dim"))
        nodes.append(node)
        node = node.args[0]
    if node.target is not operator.getitem or len(node.args) != 2 or not all(isinstance(a, fx.Node) for a in node.args):
        return None
    table, positions = node.args
    mt, mp = _meta(table, tp), _meta(positions, tp)
    if not (mt.is_tensor and mp.is_tensor and len(mt.shape) == 2 and mt.dtype in FLOAT and mp.dtype in INDEX):
        return None
    rank, normalised = len(mp.shape) + 1, []  # cos rank before each unsqueeze
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            return None
        d = d + rank + 1 if d < 0 else d
        if not 0 <= d <= rank - 1:
            return None  # after the head_dim axis: positions cannot follow
        normalised.append(d)
        rank += 1
    return _Angle(table, positions, normalised, casts, [*nodes, node])


def _half_bound(bound: Any, source: fx.Node, tp: TracedProblem) -> list[fx.Node] | None:
    """The nodes of ``y.shape[-1] // 2`` (or ``y.size(-1) // 2``) with y a cast of ``source``."""
    if not isinstance(bound, fx.Node) or bound.target is not operator.floordiv or bound.args[1:] != (2,):
        return None
    size = bound.args[0]
    if not isinstance(size, fx.Node):
        return None
    nodes = [bound, size]
    if size.target is operator.getitem and isinstance(size.args[0], fx.Node) and size.args[0].target is getattr \
            and size.args[0].args[1:] == ("shape",):
        y, index = size.args[0].args[0], size.args[1]
        nodes.append(size.args[0])
    elif size.op == "call_method" and size.target == "size" and len(size.args) == 2:
        y, index = size.args
    else:
        return None
    if not isinstance(y, fx.Node) or _strip_casts(y, tp)[0] is not source:
        return None
    rank = len(_meta(y, tp).shape)
    return nodes if isinstance(index, int) and index in (-1, rank - 1) else None


def _half_slice(node: Any, tp: TracedProblem, upper: bool) -> tuple[fx.Node, list[fx.Node]] | None:
    """(y, the bound's nodes) for ``y[..., h:]`` (upper) or ``y[..., :h]`` with h = y.shape[-1] // 2."""
    if not isinstance(node, fx.Node) or node.target is not operator.getitem or not isinstance(node.args[0], fx.Node):
        return None
    y, index = node.args
    rank = len(_meta(y, tp).shape)
    index = index if isinstance(index, tuple) else (index,)
    lead, last = index[:-1], index[-1] if index else None
    if not isinstance(last, slice) or last.step is not None:
        return None
    if lead != (Ellipsis,) and lead != (slice(None),) * (rank - 1):
        return None
    bound, other = (last.start, last.stop) if upper else (last.stop, last.start)
    nodes = _half_bound(bound, _strip_casts(y, tp)[0], tp) if other is None else None
    return (y, nodes) if nodes is not None else None


def _rotate_half(cat: Any, tp: TracedProblem) -> tuple[fx.Node, list[fx.Node], list[fx.Node]] | None:
    """(y, inner nodes, bound nodes) for ``cat((-y[..., h:], y[..., :h]), dim=-1)``."""
    if not isinstance(cat, fx.Node) or cat.op != "call_function" or cat.target not in _CATS:
        return None
    parts = cat.args[0] if cat.args else cat.kwargs.get("tensors")
    dim = cat.args[1] if len(cat.args) > 1 else cat.kwargs.get("dim", 0)
    rank = len(_meta(cat, tp).shape)
    if not isinstance(parts, (tuple, list)) or len(parts) != 2 or dim not in (-1, rank - 1):
        return None
    neg, lower_half = parts
    if _key(neg, tp) != "neg" or len(neg.args) != 1:
        return None
    hi, lo = _half_slice(neg.args[0], tp, upper=True), _half_slice(lower_half, tp, upper=False)
    if hi is None or lo is None or hi[0] is not lo[0]:
        return None
    return hi[0], [cat, neg, neg.args[0], lower_half], hi[1] + lo[1]


def _mul_operands(node: Any, tp: TracedProblem) -> list[fx.Node] | None:
    low = lower(node, tp) if isinstance(node, fx.Node) else None
    if low is None or low.key != "mul" or len(low.steps) != 1:
        return None
    ops = low.steps[0].operands
    return list(ops) if len(ops) == 2 and all(isinstance(o, fx.Node) for o in ops) else None


def _match(add: fx.Node, tp: TracedProblem) -> _Rotation | None:
    low = lower(add, tp)
    if low is None or low.key != "add" or len(low.steps) != 1 or low.steps[0].kwargs.get("alpha", 1) != 1:
        return None
    terms = low.steps[0].operands
    if len(terms) != 2:
        return None
    for mul_a, mul_r in (terms, terms[::-1]):
        a_ops, r_ops = _mul_operands(mul_a, tp), _mul_operands(mul_r, tp)
        if a_ops is None or r_ops is None:
            continue
        for cat, sin_node in (r_ops, r_ops[::-1]):
            rot = _rotate_half(cat, tp)
            if rot is None:
                continue
            y, rot_nodes, bounds = rot
            for xa, cos_node in (a_ops, a_ops[::-1]):
                found = _rotation(add, mul_a, mul_r, xa, y, cos_node, sin_node, rot_nodes, bounds, tp)
                if found is not None:
                    return found
    return None


def _rotation(add: fx.Node, mul_a: fx.Node, mul_r: fx.Node, xa: fx.Node, y: fx.Node, cos_node: fx.Node,
              sin_node: fx.Node, rot_nodes: list[fx.Node], bounds: list[fx.Node], tp: TracedProblem) -> _Rotation | None:
    x, x_casts, x_cast_nodes = _strip_casts(xa, tp)
    source, r_casts, r_cast_nodes = _strip_casts(y, tp)
    cos, sin = _angle(cos_node, tp), _angle(sin_node, tp)
    if source is not x or cos is None or sin is None or cos.positions is not sin.positions \
            or cos.unsqueeze != sin.unsqueeze:
        return None
    shape = _meta(x, tp).shape
    if not _meta(x, tp).is_tensor or len(shape) < 2 or shape[-1] % 2 or shape[-1] < 2 or _meta(x, tp).dtype not in FLOAT:
        return None
    if any(_meta(n, tp).shape != shape for n in (xa, y, mul_a, mul_r, add)) \
            or _meta(cos.table, tp).shape[-1] != shape[-1] or _meta(sin.table, tp).shape[-1] != shape[-1]:
        return None  # cos must broadcast into x, not x into cos
    out, out_casts, inner = add, [], [mul_a, mul_r, *rot_nodes, add]
    while len(out.users) == 1:
        user = next(iter(out.users))
        if _strip_casts(user, tp)[0] is not out:
            break
        out = user
        out_casts.append(_meta(out, tp).dtype)
        inner.append(out)
    plan = RotaryTensor(x_casts=x_casts, r_casts=r_casts, cos_casts=cos.casts, sin_casts=sin.casts,
                        unsqueeze=cos.unsqueeze, mul=_meta(mul_a, tp).dtype, rmul=_meta(mul_r, tp).dtype,
                        add=_meta(add, tp).dtype, out_casts=out_casts)
    dtypes = [*x_casts, *r_casts, *cos.casts, *sin.casts, plan.mul, plan.rmul, plan.add, *out_casts]
    if any(dt not in FLOAT for dt in dtypes):
        return None  # fp64 (or integer) math: not what the fp32 kernel computes
    inside = set(inner)
    if any(u not in inside for n in inner if n is not out for u in n.users):
        return None  # an intermediate value is read elsewhere too
    support = [*bounds, *x_cast_nodes, *r_cast_nodes, *cos.nodes, *sin.nodes]
    getattrs = [a for n in inner + support for a in n.all_input_nodes if a.target is getattr]  # .to(x.dtype)
    return _Rotation(x=x, plan=plan, cos=cos, sin=sin, out=out, inner=inner, support=support + getattrs)


def _groups(rotations: list[_Rotation], order: dict[fx.Node, int]) -> list[list[_Rotation]]:
    """Rotations sharing positions and tables, in launches that keep the graph's order valid: the
    node sits after its last input, so every reader of its results must come after that."""
    groups: list[list[_Rotation]] = []
    open_: dict[tuple[fx.Node, fx.Node, fx.Node], list[_Rotation]] = {}
    for r in sorted(rotations, key=lambda r: order[r.out]):
        key = (r.cos.positions, r.cos.table, r.sin.table)
        current = open_.get(key)
        if current is not None and len(current) < MAX_TENSORS and _valid([*current, r], order):
            current.append(r)
            continue
        open_[key] = [r]
        groups.append(open_[key])
    return groups


def _inputs(group: list[_Rotation]) -> list[fx.Node]:
    first = group[0]
    return [first.cos.positions, first.cos.table, first.sin.table, *(r.x for r in group)]


def _valid(group: list[_Rotation], order: dict[fx.Node, int]) -> bool:
    inputs = _inputs(group)
    last_input = max(order[n] for n in inputs)
    return not {r.out for r in group} & set(inputs) and all(order[u] > last_input for r in group for u in r.out.users)


def fold_rotary(tp: TracedProblem) -> int:
    """Rewrite the rotary embeddings of ``tp.gm`` into ``rotary_embedding`` nodes; how many nodes."""
    graph = tp.gm.graph
    rotations = []
    for node in list(graph.nodes):
        found = _match(node, tp) if node.op in ("call_function", "call_method") else None
        if found is not None:
            rotations.append(found)
    # RoPE applied to another rotation's result reads that one's folded value; one applied to an
    # intermediate of it (through casts) is left alone
    erased = {n for r in rotations for n in r.inner} - {r.out for r in rotations}
    rotations = [r for r in rotations if not {r.x, r.cos.positions, r.cos.table, r.sin.table} & erased]
    if not rotations:
        return 0
    order = {n: i for i, n in enumerate(graph.nodes)}
    groups = _groups(rotations, order)
    replaced: dict[fx.Node, fx.Node] = {}  # a folded result -> the getitem now holding it
    for group in groups:
        inputs = [replaced.get(n, n) for n in _inputs(group)]
        plan = [r.plan for r in group]
        last = max(_inputs(group), key=order.__getitem__)
        with graph.inserting_after(replaced.get(last, last)):
            fused = graph.call_function(rotary_embedding, tuple(inputs),
                                        {"plan": {"tensors": [p.model_dump() for p in plan]}})
        fused.meta[EXPR_META] = _expr(plan)
        tp.meta[fused.name] = Meta(is_tensor=False, is_tuple=True, items=[tp.meta[r.out.name] for r in group])
        anchor = fused
        for i, r in enumerate(group):
            with graph.inserting_after(anchor):
                anchor = graph.call_function(operator.getitem, (fused, i))
            tp.meta[anchor.name] = tp.meta[r.out.name]
            r.out.replace_all_uses_with(anchor)
            replaced[r.out] = anchor
            for dead in sorted(r.inner, key=order.__getitem__, reverse=True):
                graph.erase_node(dead)
        log.debug("expert.folded_rotary", node=fused.name, tensors=[r.x.name for r in group])
    support = {n for r in rotations for n in r.support}
    for node in reversed(list(graph.nodes)):  # casts, gathers and shape arithmetic nobody reads now
        if node in support and not node.users:
            graph.erase_node(node)
    graph.lint()
    tp.gm.recompile()
    return len(groups)
