"""Prologues the partitioner may add to an anchored group, beyond the anchor's own producers.

* ``right_operand_prologue``: the elementwise producers of a matmul's right operand (a weight's
  dequantisation), applied by the matmul template to each loaded B tile;
* ``full_shape_prologue``: the part of a reduction's prologue that has the anchor input's shape,
  when a smaller broadcast operand (a [1, 1, S, S] mask's own op) cannot join;
* ``shared_prologue``: producers also read after the group (``r = x + residual; LN(r), r``), which
  a template that writes prologue outputs computes once and stores as extra outputs.
"""

from __future__ import annotations

from torch import fx

from agents.expert.grow import grow
from agents.expert.lowering import Lowered
from agents.expert.trace import Meta, TracedProblem


def right_operand_prologue(anchor: fx.Node, low: dict[str, Lowered], assigned: set[fx.Node]) -> set[fx.Node]:
    """The elementwise producers of a matmul's right operand that only feed it (``w.to(bf16) *
    scale``): a template may apply them to each loaded B tile in registers, so the transformed
    operand is never written. Small-int reads count (the tile is converted to fp32 on load)."""
    lowered = low[anchor.name]
    operands = lowered.steps[-1].operands if lowered.steps else []
    index = 2 if lowered.key == "addmm" else 1  # addmm(bias, a, b)
    b = operands[index] if len(operands) > index else None
    if not isinstance(b, fx.Node) or b in assigned or set(b.users) != {anchor}:
        return set()
    lb = low.get(b.name)
    if lb is None or not lb.tile_fusable:
        return set()
    members = {anchor, b}

    def admit(p: fx.Node) -> bool:
        lp = low.get(p.name)
        return p not in assigned and lp is not None and lp.tile_fusable and all(u in members for u in p.users)

    grow(members, admit, skip=frozenset({anchor}))  # the anchor's other operand is not followed
    return members - {anchor}


def full_shape_prologue(prologue: set[fx.Node], head: list[fx.Node], epi: set[fx.Node], low: dict[str, Lowered],
                         tp: TracedProblem) -> set[fx.Node]:
    """The part of ``prologue`` that has the anchor input's shape and feeds only the group: what a
    reduction template accepts when the full prologue also computes a smaller broadcast operand
    (``mask == 0`` on a [1, 1, S, S] mask is left to its own small kernel)."""
    first = low[head[0].name].steps[-1].operands[0] if low[head[0].name].steps else None
    if not isinstance(first, fx.Node) or not tp.meta.get(first.name, Meta(False)).is_tensor:
        return set()
    shape = tp.meta[first.name].shape
    kept = {p for p in prologue if tp.meta[p.name].shape == shape}
    changed = True
    while changed:  # a kept node whose value a dropped node reads would be computed twice: drop it
        changed = False
        for p in list(kept):
            if any(u not in kept and u not in head and u not in epi for u in p.users):
                kept.discard(p)
                changed = True
    return kept


def shared_prologue(members: set[fx.Node], head: list[fx.Node], low: dict[str, Lowered], excluded: set[fx.Node],
                     tp: TracedProblem, order: dict[fx.Node, int], output: fx.Node) -> list[fx.Node]:
    """Grow ``members`` (anchor + prologue) with elementwise producers of the anchor input's shape
    that are also read outside the group, by nodes after ``output`` (where the launcher runs): the
    kernel writes them as extra outputs (``r = x + residual; return LN(r), r`` reads x and
    residual once). Returns those extra outputs; none when nothing is shared."""
    anchor = head[0]
    first = low[anchor.name].steps[-1].operands[0] if low[anchor.name].steps else None
    if not isinstance(first, fx.Node) or not tp.meta.get(first.name, Meta(False)).is_tensor:
        return []
    shape = tp.meta[first.name].shape

    def admit(p: fx.Node) -> bool:
        lp = low.get(p.name)
        if p in excluded or lp is None or not lp.elementwise:
            return False
        outside = [u for u in p.users if u not in members]
        return not outside or (tp.meta[p.name].shape == shape and all(order[u] > order[output] for u in outside))

    grow(members, admit)
    return sorted((m for m in members if m not in head and any(u not in members for u in m.users)),
                  key=order.__getitem__)
