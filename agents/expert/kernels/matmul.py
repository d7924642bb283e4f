"""Template: a Triton matmul, with the elementwise ops that follow it fused into its epilogue.

Covers ``linear(x, W, b)``, ``x @ W`` / ``mm`` / ``matmul`` with a 2-D right operand (leading dims
of ``x`` flattened into M), ``addmm``, and batched ``bmm`` / ``matmul`` with a >= 3-D right
operand (batch dims broadcast, one grid row per batch entry), followed by a single-use chain of
elementwise ops whose output keeps the matmul's shape, or by nothing (a matmul alone). Operands
are read through their strides, so ``A.T @ B`` reads the transposed view without a copy. Tiles
are ordered with a GROUP_M swizzle so programs running together share operand tiles in L2; the
accumulator is fp32; the matmul's own value is rounded to its dtype exactly where torch would
round it (after the bias), then the epilogue runs in registers and the result is written once.

fp32 operands: TF32 misses the 1e-4 tolerance, and an fp32 problem is judged against fp32
arithmetic, so each instance has a ``precision``: ``"ieee"`` (true fp32 FMA on the CUDA cores;
the registered ``matmul-epilogue``) or ``"tf32x3"`` (``matmul-epilogue-3xtf32``: each operand
split into a TF32 high part and a TF32 remainder, three tensor-core products, error close to
fp32; matches fp32 operands only). 16-bit operands use tensor cores either way.

Operand prologue (:mod:`.matmul_prologue`): when the group also holds the elementwise producers
of the right operand (``w_int8.to(x.dtype) * scale[:, None]``, nodes before the anchor), each
B tile is computed from the raw inputs in registers, so a quantised weight is read as int8 and
its dequantised copy is never written. Split-K and the configs: :mod:`.matmul_config`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agents.expert.kernels.base import GroupSpec, KernelPlan, NodeSpec, ValueSpec
from agents.expert.kernels.elementwise import _ident, describe_chain
from agents.expert.kernels.expr import FLOAT_DTYPES, unsupported_reason
from agents.expert.kernels.matmul_config import default_config, tuning_space
from agents.expert.kernels.matmul_prologue import (
    Prologue,
    analyse_prologue,
    split_nodes,
    structure_note,
)
from agents.expert.kernels.matmul_source import (
    Parts,
    batched_launcher_source,
    kernel_source,
    launcher_source,
)

_ANCHORS = {"linear", "mm", "matmul", "addmm", "bmm"}
_BATCHED_OPS = {"matmul", "bmm"}
PRECISIONS: dict[str, str] = {"ieee": "ieee fp32 dot on the CUDA cores",
                              "tf32x3": "fp32 operands as 3xTF32 (hi/lo split) on tensor cores"}
_PRECISION_TAGS = {"ieee": "ieee", "tf32x3": "3xtf32"}


def _prod(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _operands(anchor: NodeSpec) -> tuple[str, str, Any, float, float, bool]:
    """(a, b, bias, alpha, beta, b_is_weight) of the anchor; a Linear weight is used transposed."""
    ops = anchor.operands
    if anchor.op == "linear":
        return str(ops[0]), str(ops[1]), ops[2] if len(ops) > 2 else None, 1.0, 1.0, True
    if anchor.op == "addmm":
        alpha, beta = anchor.kwargs.get("alpha"), anchor.kwargs.get("beta")
        return (str(ops[1]), str(ops[2]), ops[0], 1.0 if alpha is None else float(alpha),
                1.0 if beta is None else float(beta), False)
    return str(ops[0]), str(ops[1]), None, 1.0, 1.0, False


def _broadcast(x: list[int], y: list[int]) -> list[int] | None:
    """torch's broadcast of two batch shapes, or None."""
    out = []
    for i in range(max(len(x), len(y))):
        dx = x[len(x) - 1 - i] if i < len(x) else 1
        dy = y[len(y) - 1 - i] if i < len(y) else 1
        if dx != dy and 1 not in (dx, dy):
            return None
        out.append(max(dx, dy) if 0 not in (dx, dy) else 0)
    return out[::-1]


def anchor_of(group: GroupSpec) -> NodeSpec:
    """The matmul node (after the operand prologue, if the group has one)."""
    return split_nodes(group)[1]


def _b_value(group: GroupSpec, b: str) -> ValueSpec | NodeSpec | None:
    """The right operand: a group input, or the prologue node computing it."""
    inputs = {v.name: v for v in group.inputs}
    return inputs.get(b) or next((n for n in split_nodes(group)[0] if n.name == b), None)


def is_batched(group: GroupSpec) -> bool:
    """True when the right operand has batch dims (bmm, or matmul with a >= 3-D right operand)."""
    anchor = anchor_of(group)
    vb = _b_value(group, _operands(anchor)[1])
    return anchor.op in _BATCHED_OPS and vb is not None and len(vb.shape) >= 3


def prologue_of(group: GroupSpec) -> Prologue | None:
    """The group's B-operand prologue (None: B is read as it is); ValueError if unusable."""
    if not split_nodes(group)[0]:
        return None
    _, b, _, _, _, b_is_weight = _operands(anchor_of(group))
    found = analyse_prologue(group, b, b_is_weight, is_batched(group))
    if isinstance(found, str):
        raise ValueError(found)  # noqa: TRY004 - a declined prologue, not a wrong argument type
    return found


def dims(group: GroupSpec) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of the group's matmul, as the launcher will see them."""
    anchor = anchor_of(group)
    inputs = {v.name: v for v in group.inputs}
    a = _operands(anchor)[0]
    k = inputs[a].shape[-1] if a in inputs and inputs[a].shape else 32
    shape = anchor.shape or [1, 1]
    if is_batched(group):
        return _prod(shape[:-2]), shape[-2], shape[-1], k
    return 1, _prod(shape[:-1]), shape[-1], k


def _shape_reason(anchor: NodeSpec, va: ValueSpec, vb: ValueSpec | NodeSpec, b_is_weight: bool) -> str | None:
    if len(va.shape) < 2 or len(vb.shape) < 2:
        return "a 1-D (vector) operand: torch.matmul's vector rules are not modelled"
    k_b = vb.shape[-1] if b_is_weight else vb.shape[-2]
    if va.shape[-1] != k_b:
        return "the operands' inner dims differ"
    if len(vb.shape) == 2:
        return None
    if anchor.op not in _BATCHED_OPS:
        return f"{anchor.op} with a {len(vb.shape)}-D right operand"
    batch = _broadcast(va.shape[:-2], vb.shape[:-2])
    if batch is None or batch + [va.shape[-2], vb.shape[-1]] != anchor.shape:
        return "batch dims do not broadcast to the result's"
    return None


class MatmulEpilogueTemplate:
    principle_ids: ClassVar[list[str]] = [
        "parallel-mapping/grid-swizzle-for-l2",
        "tiling/fp32-accumulators",
    ]

    def __init__(self, precision: str = "ieee") -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
        self.precision = precision
        self.name = "matmul-epilogue" if precision == "ieee" else f"matmul-epilogue-{_PRECISION_TAGS[precision]}"

    def match(self, group: GroupSpec) -> bool:
        return self.why_not(group) is None

    def why_not(self, group: GroupSpec) -> str | None:
        if group.kind != "matmul" or not group.nodes or anchor_of(group).op not in _ANCHORS:
            return "not a linear/mm/matmul/bmm/addmm group"
        prologue_nodes, anchor, epilogue = split_nodes(group)
        inputs = {v.name: v for v in group.inputs}
        a, b, bias, _, _, b_is_weight = _operands(anchor)
        vb = _b_value(group, b)
        if a not in inputs or vb is None or (bias is not None and bias not in inputs):
            return "matmul operands must come from outside the group (or B from its operand prologue)"
        prologue = None
        if prologue_nodes:
            found = analyse_prologue(group, b, b_is_weight, is_batched(group))
            if isinstance(found, str):
                return found
            prologue = found
        va = inputs[a]
        reason = _shape_reason(anchor, va, vb, b_is_weight)
        if reason:
            return reason
        if va.dtype != vb.dtype or va.dtype not in FLOAT_DTYPES or anchor.dtype != va.dtype:
            return f"operand dtypes {va.dtype}/{vb.dtype} (one floating dtype expected)"
        if self.precision == "tf32x3" and anchor.dtype != "float32":
            return "3xTF32 is for fp32 operands (16-bit operands use tensor cores directly)"
        if bias is not None and len(inputs[bias].shape) > 2:
            return "bias of rank > 2"
        for node in epilogue:
            if unsupported_reason(node.op, node.kwargs) or node.dtype not in FLOAT_DTYPES | {"bool"}:
                return f"epilogue op {node.op} is not supported"
            if len(node.shape) > len(anchor.shape) or any(
                    d not in (1, full) for d, full in zip(reversed(node.shape), reversed(anchor.shape))):
                return "an epilogue value does not broadcast to the matmul's shape"
        if group.out.shape != anchor.shape:
            return "the epilogue changes the matmul's shape"
        raw = {v.name for v in prologue.tensors} if prologue else set()
        for v in group.inputs:
            if v.is_tensor and v.name not in raw and v.dtype not in FLOAT_DTYPES | {"bool"}:
                return f"input {v.name} has dtype {v.dtype}"
        if group.out.dtype == "bool":
            return "boolean output"
        return None

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        _, m, n, k = dims(group)
        return tuning_space(m, n, k, batched=is_batched(group), dequant=self._dequant(group))

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        batch, m, n, k = dims(group)
        return default_config(batch, m, n, k, dtype=anchor_of(group).dtype, precision=self.precision,
                              device=device, batched=is_batched(group), dequant=self._dequant(group))

    @staticmethod
    def _dequant(group: GroupSpec) -> bool:
        """The B operand is read as small ints and dequantised per tile (a memory-bound weight read)."""
        try:
            prologue = prologue_of(group)
        except ValueError:
            return False
        return prologue is not None and prologue.reads_ints

    def precision_of(self, group: GroupSpec) -> str | None:
        """The ``input_precision`` this instance gives tl.dot for ``group`` (None: 16-bit operands)."""
        return self.precision if anchor_of(group).dtype == "float32" else None

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        cfg = {**self.default_config(group, "cuda"), **config}
        _, anchor, epilogue = split_nodes(group)
        a, b, bias, alpha, beta, b_is_weight = _operands(anchor)
        batched = is_batched(group)
        prologue = prologue_of(group)
        precision = self.precision_of(group)
        names = {v.name: _ident(v.name) for v in group.inputs} | {n.name: _ident(n.name) for n in group.nodes}
        used = {o for node in epilogue for o in node.operands if isinstance(o, str)}
        extra = [v for v in group.inputs if v.is_tensor and (v.name in used or v.name == bias)]
        scalars = [v for v in group.inputs if not v.is_tensor]
        parts = Parts(group=group, cfg=cfg, kernel=f"_{launcher}_kernel", launcher=launcher, names=names, extra=extra,
                      scalars=scalars, a=a, b=b, bias=bias, alpha=alpha, beta=beta, b_is_weight=b_is_weight,
                      formula=describe_chain(group), precision=precision, batched=batched, prologue=prologue)
        src = kernel_source(parts) + "\n\n" + (batched_launcher_source(parts) if batched else launcher_source(parts))
        ops = ", ".join(n.op for n in epilogue)
        dot = PRECISIONS[precision] if precision else f"{anchor.dtype} tensor-core dot"
        what = f"Triton {anchor.op}" + (", batch on grid axis 1" if batched else "")
        fused = f" with epilogue ({ops}) fused" if ops else ", no epilogue"
        if prologue is not None:
            fused = f"; {structure_note(prologue)}" + fused.replace(", no epilogue", "; no epilogue")
        if parts.split > 1:
            fused += f"; split-K {parts.split} (fp32 partials, fixed-order reduce kernel)"
        space = self.tuning_space(group)
        return KernelPlan(
            launcher=launcher, source=src,
            structure=f"{what} (GROUP_M-swizzled tiles, fp32 accumulate; {dot}){fused}",
            principle_ids=self._principles(group, precision, batched, bool(ops), prologue, parts.split),
            config={k: cfg[k] for k in cfg if k in space or (k == "SPLIT_K" and parts.split > 1)},
        )

    def _principles(self, group: GroupSpec, precision: str | None, batched: bool, epilogue: bool,
                    prologue: Prologue | None, split: int) -> list[str]:
        ids = ["algorithm-structure/fuse-dequant-into-gemm"] if prologue is not None else []
        ids += (["algorithm-structure/fuse-matmul-epilogue"] if epilogue else []) + list(self.principle_ids)
        if precision == "ieee":
            ids += ["tiling/fp32-dot-input-precision", "algorithm-structure/fp32-stays-fp32"]
        elif precision == "tf32x3":
            ids += ["algorithm-structure/fp32-gemm-3xtf32", "tiling/tensor-core-tiles"]
        else:
            ids += ["tiling/tensor-core-tiles"]
        if batched:
            ids.append("parallel-mapping/batch-and-heads-on-grid")
        if min(dims(group)[1:3]) == 1 or (prologue is not None and dims(group)[1] <= 64):
            ids.append("tiling/small-m-tiles")
        if split > 1:
            ids.append("algorithm-structure/split-k-for-small-mn")
        return ids


TEMPLATES = [MatmulEpilogueTemplate(), MatmulEpilogueTemplate("tf32x3")]
