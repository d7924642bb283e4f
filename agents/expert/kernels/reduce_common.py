"""Shared plumbing of the reduction-family templates (``reduce_*.py``); it defines no template.

A reduction-family group is one *anchor* op (``softmax``, ``sum``, ``layer_norm``, ``mse_loss``...)
plus, when ``agents/expert/kernels/expr.py`` is importable, an elementwise *prologue* (nodes that
feed the anchor's tensor operands, all of the anchor input's shape up to broadcasting) and an
elementwise *epilogue* (nodes that consume the anchor's value, all of the output's shape). The
prologue is evaluated on the values right after they are loaded, the epilogue right before the
store, so a fused group still reads each input once and writes one output.

Index spaces. Reductions view every operand as ``[O, R, I]`` (outer, reduced, inner): reducing a
contiguous run of dims ``d0..d1`` of ``shape`` gives ``O = prod(shape[:d0])``, ``R = prod(shape[d0:
d1+1])``, ``I = prod(shape[d1+1:])``. A *3d* region passes each tensor as ``(ptr, so, sr, si)``
strides of that view (broadcast operands get 0 strides, so nothing is materialised; a view that
``torch.view`` cannot express falls back to a copy). A *flat* region (epilogues of reductions,
pooling) indexes contiguous tensors of the output's shape with one offset.

Generated names: every module-level symbol of a plan is prefixed with ``_<launcher>_`` so two groups
rendered from one template can live in the same candidate file. Group names never appear bare: the
launcher's parameters and the kernels' pointer/stride arguments are ``g_<name>...``, ``v_<name>``
is the fp32 value of a group input or node and ``s_<name>`` a scalar group input, so a value called
``out`` or ``shape`` cannot shadow a local.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import structlog

from agents.expert.kernels.base import GroupSpec, NodeSpec

log = structlog.get_logger(__name__)

TEMPLATES: list[Any] = []  # helpers only: the templates live in the sibling reduce_* modules

FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32"})
TL_DTYPES = {
    "float16": "tl.float16",
    "bfloat16": "tl.bfloat16",
    "float32": "tl.float32",
    "float64": "tl.float64",
    "int64": "tl.int64",
    "int32": "tl.int32",
    "int16": "tl.int16",
    "int8": "tl.int8",
    "uint8": "tl.uint8",
    "bool": "tl.int1",
}
# Programs worth launching to keep all 132 SMs of an H200 streaming from HBM (~8 per SM).
TARGET_PROGRAMS = 1024
# Ops whose value is their first operand (tuple selection of torch.max(x, dim)[0] and friends).
ALIAS_OPS = frozenset({"tuple_getitem", "getitem", "identity", "contiguous", "clone", "detach"})


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def prod(values: list[int]) -> int:
    return int(math.prod(values)) if values else 1


def as_int_list(value: Any) -> list[int] | None:
    """``1`` -> ``[1]``, ``[2, 3]`` -> ``[2, 3]``; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return [value]
    if isinstance(value, (list, tuple)) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return [int(v) for v in value]
    return None


def norm_dims(dim: Any, rank: int) -> list[int] | None | str:
    """Reduced dims, sorted and non-negative; ``None`` = all dims; ``"bad"`` = not expressible.

    Only a contiguous run of dims maps onto ``[O, R, I]``; ``dim=(0, 2)`` is declined.
    """
    if dim is None or dim == [] or dim == ():
        return None
    dims = as_int_list(dim)
    if dims is None or rank == 0:
        return "bad"
    out = sorted({d + rank if d < 0 else d for d in dims})
    if any(d < 0 or d >= rank for d in out) or out != list(range(out[0], out[-1] + 1)):
        return "bad"
    return out


def broadcastable(src: list[int], dst: list[int]) -> bool:
    if len(src) > len(dst):
        return False
    return all(s in (1, d) for s, d in zip(reversed(src), reversed(dst)))


def literal(value: Any) -> str:
    """A Python literal as Triton source (inf/nan spelled so the JIT accepts them)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    return repr(value)


def expr_module() -> ModuleType | None:
    """The elementwise expression library, when its engineer has shipped it."""
    try:
        return importlib.import_module("agents.expert.kernels.expr")
    except ImportError:
        return None


def input_dtype(group: GroupSpec, name: str | Any) -> str | None:
    """dtype of a group input or node by name; None for literals."""
    if not isinstance(name, str):
        return None
    for value in group.inputs:
        if value.name == name:
            return value.dtype if value.is_tensor else None
    for node in group.nodes:
        if node.name == name:
            return node.dtype
    return None


def value_shape(group: GroupSpec, name: Any) -> list[int] | None:
    if not isinstance(name, str):
        return None
    for value in group.inputs:
        if value.name == name:
            return list(value.shape) if value.is_tensor else None
    for node in group.nodes:
        if node.name == name:
            return list(node.shape)
    return None


@dataclass
class Region:
    """Group inputs read in one index space and the elementwise nodes computed from them."""

    tensors: list[str] = field(default_factory=list)  # tensor group inputs loaded here
    nodes: list[NodeSpec] = field(default_factory=list)  # topological order
    # kernel parameter prefix: the epilogue's ("e") differs from the prologue's ("g") so a group
    # input that is both reduced and read by the epilogue (x - x.max(1)) is two parameters, not a
    # duplicate one (the two regions index it differently: input shape vs output shape)
    prefix: str = "g"
    # flat form: tensors that broadcast to the region's shape over leading dims (a norm's weight, a
    # [1, 1, S, S] mask): read in place at ``flat index % period`` instead of from a materialised
    # broadcast copy (which cost a full-size write and read per call)
    periodic: set[str] = field(default_factory=set)
    # 3d form: tensors that may broadcast over leading outer dims (a [S, S] causal mask under
    # [B, H, S, S] scores). No [O, R, I] strides express that, so the launcher passes the outer
    # period P and the kernel reads row ``o % P``; a view that needs no period gets P = O.
    rows_periodic: set[str] = field(default_factory=set)

    def by_rows(self, t: str) -> bool:
        return t in self.periodic or t in self.rows_periodic


@dataclass
class Fusion:
    """A group split around its anchor."""

    group: GroupSpec
    anchor: NodeSpec
    pre: list[NodeSpec]
    post: list[NodeSpec]

    @property
    def scalars(self) -> list[str]:
        return [v.name for v in self.group.inputs if not v.is_tensor]

    def tensor_inputs(self) -> set[str]:
        return {v.name for v in self.group.inputs if v.is_tensor}

    def pre_region(self, operands: list[Any]) -> Region:
        """What must be loaded to know the anchor operands ``operands`` (names) element-wise."""
        tensors = self.tensor_inputs()
        used: list[str] = []
        for name in list(operands) + [o for n in self.pre for o in n.operands]:
            if isinstance(name, str) and name in tensors and name not in used:
                used.append(name)
        order = [v.name for v in self.group.inputs if v.name in used]
        full = value_shape(self.group, operands[0]) if operands else None
        rows = {t for t in order if full is not None and value_shape(self.group, t) != full}
        return Region(order, list(self.pre), rows_periodic=rows)

    def post_region(self) -> Region:
        tensors = self.tensor_inputs()
        used = [o for n in self.post for o in n.operands if isinstance(o, str) and o in tensors]
        order = [v.name for v in self.group.inputs if v.name in used]
        out = list(self.group.out.shape)
        periodic = {v.name for v in self.group.inputs if v.name in used and list(v.shape) != out}
        return Region(order, list(self.post), prefix="e", periodic=periodic)

    def shapes_ok(self, full_shape: list[int], out_shape: list[int]) -> bool:
        """Prologue values have the anchor input's shape; epilogue values the output's shape."""
        for nodes, shape in ((self.pre, full_shape), (self.post, out_shape)):
            for node in nodes:
                if node.op in ALIAS_OPS:
                    continue
                if list(node.shape) != list(shape) or node.dtype not in FLOAT_DTYPES | {"bool"}:
                    return False
                for operand in node.operands:
                    src = value_shape(self.group, operand)
                    if src is not None and not broadcastable(src, shape):
                        return False
        return True


def parse_fusion(
    group: GroupSpec, anchor_ops: frozenset[str] | set[str], alias_ops: frozenset[str] = ALIAS_OPS
) -> Fusion | None:
    """Split ``group`` into prologue / anchor / epilogue, or None when it is not of that form."""
    anchors = [n for n in group.nodes if n.op in anchor_ops]
    if group.anchor is not None:
        anchors = [n for n in anchors if n.name == group.anchor]
    if len(anchors) != 1:
        return None
    anchor = anchors[0]
    by_name = {n.name: n for n in group.nodes}
    inputs = {v.name for v in group.inputs}
    for node in group.nodes:
        for operand in node.operands:
            if isinstance(operand, str) and operand not in by_name and operand not in inputs:
                return None

    def ancestors(node: NodeSpec) -> set[str]:
        seen: set[str] = set()
        stack = [o for o in node.operands if isinstance(o, str) and o in by_name]
        while stack:
            name = stack.pop()
            if name not in seen:
                seen.add(name)
                stack += [o for o in by_name[name].operands if isinstance(o, str) and o in by_name]
        return seen

    before = ancestors(anchor)
    after = {n.name for n in group.nodes if anchor.name in ancestors(n)}
    pre = [n for n in group.nodes if n.name in before]
    post = [n for n in group.nodes if n.name in after]
    if len(pre) + len(post) + 1 != len(group.nodes):
        return None  # a node unrelated to the anchor: not a single-anchor chain
    if (post and group.output not in after) or (not post and group.output != anchor.name):
        return None
    if any(ancestors(n) & after for n in pre):
        return None
    module = expr_module()

    def exact(node: NodeSpec) -> bool:
        """expr.py computes this op exactly as torch does (kwargs included)."""
        if module is None or node.op not in getattr(module, "SUPPORTED_ELEMENTWISE", ()):
            return False
        reason = getattr(module, "unsupported_reason", lambda op, kw: None)(node.op, node.kwargs)
        return reason is None

    if not all(exact(n) for n in pre):
        return None
    if not all(n.op in alias_ops or exact(n) for n in post):
        return None
    return Fusion(group, anchor, pre, post)


# ----------------------------------------------------------------------------------------------
# Source emission
# ----------------------------------------------------------------------------------------------


def ref(fusion: Fusion, operand: Any, suffix: str = "") -> str:
    """The kernel expression of a node operand: a value, a scalar argument or a literal."""
    if isinstance(operand, str):
        if operand in fusion.scalars:
            return f"s_{operand}"
        return f"v_{operand}{suffix}"
    return literal(operand)


def scalar_params(fusion: Fusion) -> str:
    return "".join(f"s_{s}, " for s in fusion.scalars)


def scalar_args(fusion: Fusion) -> str:
    return "".join(f"g_{s}, " for s in fusion.scalars)


def launcher_params(group: GroupSpec) -> str:
    """Launcher parameters: ``g_<input>`` so no group name can shadow a launcher local."""
    return ", ".join(f"g_{v.name}" for v in group.inputs)


def region_params(region: Region, form: str) -> str:
    """Kernel parameters of a region: ``t_ptr, t_so, t_sr, t_si`` (3d) or ``t_ptr`` (flat)."""
    p = region.prefix
    if form == "3d":
        return "".join(f"{p}_{t}_ptr, {p}_{t}_so, {p}_{t}_sr, {p}_{t}_si, " + (f"{p}_{t}_po, " if region.by_rows(t) else "")
                       for t in region.tensors)
    return "".join(f"{p}_{t}_ptr, " + (f"{p}_{t}_period, " if t in region.periodic else "") for t in region.tensors)


def region_views(region: Region, form: str, launcher: str, indent: str = "    ") -> list[str]:
    """Launcher lines building the views a region's kernel arguments come from."""
    lines = []
    v = _view_prefix(region)
    for t in region.tensors:
        if form == "3d" and region.by_rows(t):
            lines.append(f"{indent}_v{v}_{t}, _po{v}_{t} = _{launcher}_as3_rows(g_{t}, shape, O, R, I)")
        elif form == "3d":
            lines.append(f"{indent}_v{v}_{t} = _{launcher}_as3(g_{t}, shape, O, R, I)")
        elif t in region.periodic:
            f = f"_f{v}_{t}"
            lines += [
                f"{indent}# {t} broadcasts over leading dims: read in place at index % period (no copy)",
                f"{indent}{f} = g_{t}.reshape(g_{t}.shape[next((i for i, s in enumerate(g_{t}.shape) if s != 1), "
                f"g_{t}.dim()):]).contiguous()",
                f"{indent}if tuple({f}.shape) != tuple(out_shape[len(out_shape) - {f}.dim():]):",
                f"{indent}    {f} = g_{t}.expand(out_shape).contiguous()  # not a leading broadcast: copy",
            ]
        else:
            lines.append(f"{indent}_f{v}_{t} = g_{t}.expand(out_shape).contiguous()")
    return lines


def _view_prefix(region: Region) -> str:
    """Launcher view names: ``_v_t``/``_f_t`` for the prologue, ``_ve_t``/``_fe_t`` for the epilogue."""
    return "" if region.prefix == "g" else region.prefix


def region_args(region: Region, form: str) -> str:
    v = _view_prefix(region)
    if form == "3d":
        return "".join(
            f"_v{v}_{t}, _v{v}_{t}.stride(0), _v{v}_{t}.stride(1), _v{v}_{t}.stride(2), "
            + (f"_po{v}_{t}, " if region.by_rows(t) else "")
            for t in region.tensors
        )
    return "".join(f"_f{v}_{t}, " + (f"_f{v}_{t}.numel(), " if t in region.periodic else "") for t in region.tensors)


def emit_region(
    fusion: Fusion,
    region: Region,
    *,
    offsets: dict[str, str] | str,
    mask: str,
    indent: str,
    suffix: str = "",
) -> list[str]:
    """Loads of the region's tensors (fp32) then its elementwise nodes.

    ``offsets`` is ``{"o": .., "r": .., "i": ..}`` (3d; a missing key drops that term, e.g. ``i``
    when the inner size is statically 1) or one offset expression (flat).
    """
    lines = []
    for t in region.tensors:
        if isinstance(offsets, dict):
            terms = [f"{offsets[k]} * {region.prefix}_{t}_s{k}" for k in ("o", "r", "i") if offsets.get(k)]
            if region.by_rows(t) and offsets.get("o"):
                terms[0] = f"({offsets['o']} % {region.prefix}_{t}_po) * {region.prefix}_{t}_so"
            addr = f"{region.prefix}_{t}_ptr + " + " + ".join(terms)
        elif t in region.periodic:
            addr = f"{region.prefix}_{t}_ptr + ({offsets}) % {region.prefix}_{t}_period"
        else:
            addr = f"{region.prefix}_{t}_ptr + {offsets}"
        lines.append(
            f"{indent}v_{t}{suffix} = tl.load({addr}, mask={mask}, other=0).to(tl.float32)"
        )
    module = expr_module()
    anchor = fusion.anchor
    if region.nodes and region.nodes[0] in fusion.post and anchor.dtype in ("float16", "bfloat16"):
        # torch rounds the anchor's result to its dtype before the epilogue reads it
        v = f"v_{anchor.name}{suffix}"
        lines.append(f"{indent}{v} = {_round(module, v, anchor.dtype)}")
    for node in region.nodes:
        if node.op in ALIAS_OPS:
            lines.append(f"{indent}v_{node.name}{suffix} = {ref(fusion, node.operands[0], suffix)}")
            continue
        assert module is not None, "prologue/epilogue nodes need agents.expert.kernels.expr"
        # names become kernel values; literals go through expr's own (always-float) formatting
        operands = [ref(fusion, o, suffix) if isinstance(o, str) else o for o in node.operands]
        expr = module.tl_expr(node.op, operands, dict(node.kwargs))
        lines.append(f"{indent}v_{node.name}{suffix} = {_round(module, expr, node.dtype)}")
    return lines


def _round(module: ModuleType | None, expr: str, dtype: str) -> str:
    """fp32 ``expr`` rounded to a 16-bit ``dtype`` and back, as torch's per-op rounding does."""
    if module is not None and hasattr(module, "round_to_dtype"):
        return str(module.round_to_dtype(expr, dtype))
    if dtype in ("float16", "bfloat16"):
        return f"({expr}).to({TL_DTYPES[dtype]}).to(tl.float32)"
    return expr
