"""Greedy fusion groups: which ops one kernel could compute without a round trip to memory.

Walking the ops in execution order, a group grows while the next op consumes something the
group produced (or, for pointwise ops, reads the same tensor a member reads) and is of a class
the group's anchor can take as an epilogue:

* pointwise chain: pointwise/broadcast ops;
* reduction, normalization or softmax: followed by pointwise/broadcast ops;
* matmul or conv: followed by pointwise/broadcast ops and reductions.

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
    "elementwise_chain": _POINTWISE,
    "reduction_epilogue": _POINTWISE,
    "matmul_epilogue": _POINTWISE | {OpClass.REDUCTION},
    "conv_epilogue": _POINTWISE | {OpClass.REDUCTION},
}


class _Open(BaseModel):
    kind: FusionKind
    anchor: str | None
    nodes: list[str]
    produced: set[str]
    read: set[str] = Field(default_factory=set)

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


def _joins(group: _Open, op: OpNode, sources: set[str]) -> bool:
    if op.op_class not in _EPILOGUE.get(group.kind, set()):
        return False
    if sources & group.produced:
        return True
    # relu(x) and sigmoid(x) side by side read x once in a fused kernel.
    return group.kind == "elementwise_chain" and bool(sources & group.read)


def fusion_groups(ops: list[OpNode]) -> list[FusionGroup]:
    views = {op.name: op for op in ops if op.is_view}
    groups: list[FusionGroup] = []
    current: _Open | None = None
    for op in ops:
        if op.is_view:
            continue
        sources = _sources(op, views)
        if current is not None and _joins(current, op, sources):
            current.nodes.append(op.name)
            current.produced.add(op.name)
            current.read |= sources
            continue
        if current is not None:
            groups.append(current.close())
        kind = _START_KIND.get(op.op_class)
        anchor = None if op.op_class in _POINTWISE else op.name
        current = _Open(
            kind=kind or "single", anchor=anchor, nodes=[op.name], produced={op.name}, read=sources
        )
        if kind is None:  # pooling, indexing, ...: never fused here
            groups.append(current.close())
            current = None
    if current is not None:
        groups.append(current.close())
    return groups
