"""Greedy fusion groups: which ops one kernel could compute without a round trip to memory.

Walking the canonical graph's ops in order, a group grows while the next op consumes something
the group produced (or, for pointwise ops, reads the same tensor a member reads) and is of a
class the group can take:

* pointwise chain: pointwise/broadcast ops, and then a reduction of what it computed (a
  prologue: ``x*x`` feeding ``mean``), which makes it a reduction group;
* reduction group: pointwise epilogue ops, and further reductions over the same rows (the
  ``var`` and ``mean`` of a LayerNorm, the ``amax`` and ``sum`` of a softmax);
* matmul or convolution: pointwise epilogue ops and reductions, except the ops of a row
  normalisation (a softmax, a norm: ``row_blocks``), which need whole rows and so start a
  reduction group of their own.

Views are free and transparent: an op reading a view reads whatever the view was taken of.
This is a starting point for the agents, not a promise that a fused kernel is faster.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from egg.analysis.models import FusionGroup, FusionKind, OpNode
from egg.vocabulary import OpClass

_POINTWISE = {OpClass.ELEMENTWISE, OpClass.BROADCAST}
_REDUCING = {OpClass.REDUCTION, OpClass.NORMALIZATION, OpClass.SOFTMAX}
_START_KIND: dict[OpClass, FusionKind] = {
    **{c: "elementwise_chain" for c in _POINTWISE},
    **{c: "reduction_epilogue" for c in _REDUCING},
    OpClass.MATMUL: "matmul_epilogue",
    OpClass.CONV: "conv_epilogue",
}
_EPILOGUE: dict[FusionKind, set[OpClass]] = {
    "elementwise_chain": _POINTWISE | _REDUCING,
    "reduction_epilogue": _POINTWISE | _REDUCING,
    "matmul_epilogue": _POINTWISE | {OpClass.REDUCTION},
    "conv_epilogue": _POINTWISE | {OpClass.REDUCTION},
}

Rows = tuple[tuple[int, ...], tuple[int, ...]]


def _rows(op: OpNode) -> Rows | None:
    """(input shape, reduced dims) of a reduction: two reductions over the same rows fuse."""
    if not op.input_shapes:
        return None
    shape = tuple(op.input_shapes[0])
    dims = op.args.get("dim")
    if dims is None:
        reduced = tuple(range(len(shape)))
    else:
        listed = dims if isinstance(dims, list) else [dims]
        reduced = tuple(sorted(d % len(shape) if shape else 0 for d in listed if isinstance(d, int)))
    return shape, reduced


class _Open(BaseModel):
    kind: FusionKind
    anchor: str | None
    nodes: list[str]
    produced: set[str]
    read: set[str] = Field(default_factory=set)
    rows: Rows | None = None

    def close(self) -> FusionGroup:
        if len(self.nodes) == 1:
            return FusionGroup(nodes=self.nodes, kind="single", anchor=self.anchor)
        return FusionGroup(nodes=self.nodes, kind=self.kind, anchor=self.anchor)


def _sources(op: OpNode, views: dict[str, OpNode]) -> set[str]:
    """The non-view producers (or graph inputs) an op reads, looking through views."""
    found: set[str] = set()
    pending = list(op.inputs)
    while pending:
        name = pending.pop()
        if name in views:
            pending.extend(views[name].inputs)
        else:
            found.add(name)
    return found


def _joins(group: _Open, op: OpNode, sources: set[str], row_blocks: frozenset[str]) -> bool:
    if op.op_class not in _EPILOGUE.get(group.kind, set()):
        return False
    if group.kind in ("matmul_epilogue", "conv_epilogue") and op.name in row_blocks:
        return False
    if op.op_class in _REDUCING:
        if group.kind == "reduction_epilogue" and group.rows != _rows(op):
            return False  # a reduction over other rows needs its own pass
        siblings = group.kind == "reduction_epilogue" and bool(sources & group.read)
        return bool(sources & group.produced) or siblings
    if sources & group.produced:
        return True
    # relu(x) and sigmoid(x) side by side read x once in a fused kernel.
    return group.kind == "elementwise_chain" and bool(sources & group.read)


def fusion_groups(ops: list[OpNode], row_blocks: frozenset[str] = frozenset()) -> list[FusionGroup]:
    """``row_blocks``: names of the ops of softmax/norm patterns (see the module docstring)."""
    views = {op.name: op for op in ops if op.is_view}
    groups: list[FusionGroup] = []
    current: _Open | None = None
    for op in ops:
        if op.is_view:
            continue
        sources = _sources(op, views)
        if current is not None and _joins(current, op, sources, row_blocks):
            current.nodes.append(op.name)
            current.produced.add(op.name)
            current.read |= sources
            if op.op_class in _REDUCING and current.kind == "elementwise_chain":
                current.kind, current.anchor, current.rows = "reduction_epilogue", op.name, _rows(op)
            continue
        if current is not None:
            groups.append(current.close())
        kind = _START_KIND.get(op.op_class)
        anchor = None if op.op_class in _POINTWISE else op.name
        rows = _rows(op) if op.op_class in _REDUCING else None
        current = _Open(
            kind=kind or "single", anchor=anchor, nodes=[op.name], produced={op.name}, read=sources,
            rows=rows,
        )
        if kind is None:  # pooling, indexing, attention, ...: never fused here
            groups.append(current.close())
            current = None
    if current is not None:
        groups.append(current.close())
    return groups
