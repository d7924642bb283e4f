"""The matmul template's operand prologue: elementwise ops applied to each loaded B tile.

A weight-only-quantised linear is written as ``F.linear(x, w_int8.to(x.dtype) * scale[:, None])``:
eager torch writes the dequantised weight (2 bytes per element) and reads it back in cuBLAS.
When the partitioner gives the matmul group the producers of its right operand (the nodes
before the anchor in ``GroupSpec.nodes``), the kernel instead loads each B tile of the *raw*
inputs (an int8 tile is a quarter of an fp32 one), converts it to fp32, applies the ops in
registers with torch's per-op rounding (the values reaching ``tl.dot`` are bit for bit the
reference's dequantised weight) and casts the result to the dot's dtype.

Prologue inputs are read through their strides after ``torch.broadcast_to`` to the operand's
shape (views, no copies). An input constant along K (a per-output-channel ``scale[N, 1]``) is a
*column*: loaded once per program as a ``[1, BLOCK_N]`` vector before the K loop. Any other
input is a *tile*: loaded with the B tile's offsets at every K step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.expert.kernels.base import GroupSpec, NodeSpec, ValueSpec
from agents.expert.kernels.expr import (
    FLOAT_DTYPES,
    round_to_dtype,
    tl_expr,
    unsupported_reason,
)

SMALL_INTS = frozenset({"int8", "uint8", "int16"})  # converted to fp32 exactly on load
_EXACT_CAST_FROM = frozenset({"int8", "uint8"})  # exact in every float dtype: the cast needs no rounding
_CASTS = frozenset({"to", "type", "type_as", "float", "half", "bfloat16"})


@dataclass
class Prologue:
    """The ops between the raw inputs and the matmul's B operand, and how each input is read."""

    nodes: list[NodeSpec]
    b: str  # the node whose value is the B operand
    k_axis: int  # the K dim in the operand's own layout: -1 for a Linear weight (N, K), -2 for (K, N)
    tiles: list[ValueSpec] = field(default_factory=list)  # loaded at every K step
    columns: list[ValueSpec] = field(default_factory=list)  # constant along K: loaded once
    scalars: list[ValueSpec] = field(default_factory=list)

    @property
    def tensors(self) -> list[ValueSpec]:
        return [*self.tiles, *self.columns]

    @property
    def reads_ints(self) -> bool:
        return any(v.dtype in SMALL_INTS for v in self.tiles)


def split_nodes(group: GroupSpec) -> tuple[list[NodeSpec], NodeSpec, list[NodeSpec]]:
    """(prologue, anchor, epilogue) nodes of a matmul group."""
    names = [n.name for n in group.nodes]
    index = names.index(group.anchor) if group.anchor in names else 0
    return group.nodes[:index], group.nodes[index], group.nodes[index + 1:]


def _broadcasts_to(shape: list[int], full: list[int]) -> bool:
    return len(shape) <= len(full) and all(d in (1, f) for d, f in zip(reversed(shape), reversed(full)))


def analyse_prologue(group: GroupSpec, b: str, b_is_weight: bool, batched: bool) -> Prologue | str:
    """The group's B-operand prologue, or why the template cannot apply it per tile."""
    nodes, _, epilogue = split_nodes(group)
    by_name = {n.name: n for n in nodes}
    if b not in by_name:
        return "the prologue does not compute the matmul's right operand"
    if batched:
        return "an operand prologue on a batched matmul"
    full = by_name[b].shape
    if len(full) != 2:
        return "the prologue's operand is not 2-D"
    inputs = {v.name: v for v in group.inputs}
    used: dict[str, ValueSpec] = {}
    for node in nodes:
        reason = unsupported_reason(node.op, node.kwargs)
        if reason:
            return f"prologue op {node.op}: {reason}"
        if node.dtype not in FLOAT_DTYPES or not _broadcasts_to(node.shape, full):
            return f"prologue op {node.op} gives {node.dtype}{node.shape}, not a float value of the operand's shape"
        for o in node.operands:
            if isinstance(o, str) and o in inputs:
                used[o] = inputs[o]
            elif isinstance(o, str) and o not in by_name:
                return f"prologue op {node.op} reads {o}, which is not a prologue value"
    if any(isinstance(o, str) and (o in by_name or o in used) for n in epilogue for o in n.operands):
        return "the epilogue reads a prologue value or input"
    k_axis = -1 if b_is_weight else -2
    out = Prologue(nodes=nodes, b=b, k_axis=k_axis)
    for v in used.values():
        if not v.is_tensor:
            out.scalars.append(v)
        elif v.dtype not in FLOAT_DTYPES | SMALL_INTS | {"bool"}:
            return f"prologue input {v.name} has dtype {v.dtype}"
        elif not _broadcasts_to(v.shape, full):
            return f"prologue input {v.name} does not broadcast to the operand's shape"
        elif ([1, 1] + v.shape)[k_axis] == 1:
            out.columns.append(v)
        else:
            out.tiles.append(v)
    if not out.tiles:
        return "no prologue input varies along K"
    return out


def kernel_params(p: Prologue, names: dict[str, str]) -> list[str]:
    params = [f"{names[v.name]}_ptr" for v in p.tensors]
    params += [f"{names[v.name]}_stride_{d}" for v in p.tiles for d in "kn"]
    return params + [f"{names[v.name]}_stride_n" for v in p.columns]


def pre_loop_lines(p: Prologue, names: dict[str, str], k0: str) -> list[str]:
    """Tile pointers (``k0``: the first K row of this program) and the column vectors."""
    lines = []
    for v in p.tiles:
        n = names[v.name]
        lines.append(f"    {n}_ptrs = {n}_ptr + ({k0}offs_k[:, None]) * {n}_stride_k + "
                     f"offs_n[None, :].to(tl.int64) * {n}_stride_n")
    if p.columns:
        lines.append("    # constant along K (per output channel): loaded once, not per tile")
    for v in p.columns:
        n = names[v.name]
        lines.append(f"    {n} = tl.load({n}_ptr + offs_n.to(tl.int64) * {n}_stride_n, mask=offs_n < N, "
                     "other=0).to(tl.float32)[None, :]")
    return lines


def loop_lines(p: Prologue, names: dict[str, str], inputs: dict[str, ValueSpec]) -> list[str]:
    """Inside the K loop: load the raw tiles, apply the prologue in fp32 registers, leave ``b``."""
    what = " (int8 read as int8, dequantised in registers)" if p.reads_ints else ""
    lines = ["        b_mask = (offs_k[:, None] < k_left) & (offs_n[None, :] < N)",
             f"        # the B operand computed per tile{what}: torch's rounding at every op"]
    for v in p.tiles:
        n = names[v.name]
        lines.append(f"        {n} = tl.load({n}_ptrs, mask=b_mask, other=0).to(tl.float32)")
    for node in p.nodes:
        operands = [names[o] if isinstance(o, str) and o in names else o for o in node.operands]
        expr = tl_expr(node.op, operands, node.kwargs)
        source = inputs.get(str(node.operands[0])) if node.operands else None
        exact = node.op in _CASTS and source is not None and source.dtype in _EXACT_CAST_FROM
        if node.name == p.b:  # one rounding, straight to the dot's dtype (that of the A tile)
            lines.append(f"        b = tl.where(b_mask, {expr}, 0.0).to(a.dtype)")
        else:
            lines.append(f"        {names[node.name]} = {expr if exact else round_to_dtype(expr, node.dtype)}")
    return lines


def advance_lines(p: Prologue, names: dict[str, str]) -> list[str]:
    return [f"        {names[v.name]}_ptrs += BLOCK_K * {names[v.name]}_stride_k" for v in p.tiles]


def launcher_lines(p: Prologue, names: dict[str, str]) -> list[str]:
    """Broadcast views of the prologue inputs, seen as (K, N) like the B operand; sets N."""
    tensors = [names[v.name] for v in p.tensors]
    shapes = ", ".join(f"{n}.shape" for n in tensors)
    lines = [f"    b_shape = _egg_broadcast_shapes({shapes})  # the right operand: never materialised"]
    for n in tensors:
        view = ".t()" if p.k_axis == -1 else ""
        lines.append(f"    {n} = torch.broadcast_to({n}, b_shape){view}  # a (K, N) view")
    lines.append(f"    N = b_shape[{0 if p.k_axis == -1 else 1}]")
    return lines


def call_args(p: Prologue, names: dict[str, str]) -> tuple[list[str], list[str]]:
    """(pointer args, stride args) of the prologue inputs, in :func:`kernel_params` order."""
    ptrs = [names[v.name] for v in p.tensors]
    strides = [f"{names[v.name]}.stride({d})" for v in p.tiles for d in (0, 1)]
    return ptrs, strides + [f"{names[v.name]}.stride(1)" for v in p.columns]


def structure_note(p: Prologue) -> str:
    ops = ", ".join(dict.fromkeys(n.op for n in p.nodes))
    ints = [f"{v.name} ({v.dtype})" for v in p.tiles if v.dtype in SMALL_INTS]
    if ints:
        return (f"B operand read as {', '.join(ints)} and dequantised in registers per tile ({ops}; "
                "rounded as torch rounds the dequantised weight), never written")
    return f"B operand prologue ({ops}) applied per loaded tile in registers"
