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
"""

from __future__ import annotations

from typing import Any, ClassVar

from agents.expert.kernels.base import GroupSpec, KernelPlan, NodeSpec, ValueSpec
from agents.expert.kernels.elementwise import _ident, describe_chain
from agents.expert.kernels.expr import FLOAT_DTYPES, unsupported_reason
from agents.expert.kernels.matmul_source import (
    batched_launcher_source,
    kernel_source,
    launcher_source,
)

_ANCHORS = {"linear", "mm", "matmul", "addmm", "bmm"}
_BATCHED_OPS = {"matmul", "bmm"}
PRECISIONS: dict[str, str] = {"ieee": "ieee fp32 dot on the CUDA cores",
                              "tf32x3": "fp32 operands as 3xTF32 (hi/lo split) on tensor cores"}
_PRECISION_TAGS = {"ieee": "ieee", "tf32x3": "3xtf32"}
_SMS = 132  # H200: enough programs to fill it is what the matrix-vector tiles aim for


def _p2(n: int, lo: int, hi: int) -> int:
    v = 1 << max(0, (max(1, n) - 1).bit_length())
    return max(lo, min(hi, v))


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


def is_batched(group: GroupSpec) -> bool:
    """True when the right operand has batch dims (bmm, or matmul with a >= 3-D right operand)."""
    anchor = group.nodes[0]
    inputs = {v.name: v for v in group.inputs}
    b = _operands(anchor)[1]
    return anchor.op in _BATCHED_OPS and b in inputs and len(inputs[b].shape) >= 3


def dims(group: GroupSpec) -> tuple[int, int, int, int]:
    """(batch, M, N, K) of the group's matmul, as the launcher will see them."""
    anchor = group.nodes[0]
    inputs = {v.name: v for v in group.inputs}
    a = _operands(anchor)[0]
    k = inputs[a].shape[-1] if a in inputs and inputs[a].shape else 32
    shape = anchor.shape or [1, 1]
    if is_batched(group):
        return _prod(shape[:-2]), shape[-2], shape[-1], k
    return 1, _prod(shape[:-1]), shape[-1], k


def _shape_reason(anchor: NodeSpec, va: ValueSpec, vb: ValueSpec, b_is_weight: bool) -> str | None:
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
        if group.kind != "matmul" or not group.nodes or group.nodes[0].op not in _ANCHORS:
            return "not a linear/mm/matmul/bmm/addmm group"
        anchor = group.nodes[0]
        inputs = {v.name: v for v in group.inputs}
        a, b, bias, _, _, b_is_weight = _operands(anchor)
        if a not in inputs or b not in inputs or (bias is not None and bias not in inputs):
            return "matmul operands must come from outside the group"
        va, vb = inputs[a], inputs[b]
        reason = _shape_reason(anchor, va, vb, b_is_weight)
        if reason:
            return reason
        if va.dtype != vb.dtype or va.dtype not in FLOAT_DTYPES or anchor.dtype != va.dtype:
            return f"operand dtypes {va.dtype}/{vb.dtype} (one floating dtype expected)"
        if self.precision == "tf32x3" and anchor.dtype != "float32":
            return "3xTF32 is for fp32 operands (16-bit operands use tensor cores directly)"
        if bias is not None and len(inputs[bias].shape) > 2:
            return "bias of rank > 2"
        for node in group.nodes[1:]:
            if unsupported_reason(node.op, node.kwargs) or node.dtype not in FLOAT_DTYPES | {"bool"}:
                return f"epilogue op {node.op} is not supported"
            if len(node.shape) > len(anchor.shape) or any(
                    d not in (1, full) for d, full in zip(reversed(node.shape), reversed(anchor.shape))):
                return "an epilogue value does not broadcast to the matmul's shape"
        if group.out.shape != anchor.shape:
            return "the epilogue changes the matmul's shape"
        for v in group.inputs:
            if v.is_tensor and v.dtype not in FLOAT_DTYPES | {"bool"}:
                return f"input {v.name} has dtype {v.dtype}"
        if group.out.dtype == "bool":
            return "boolean output"
        return None

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        _, m, n, _ = dims(group)
        narrow = [16] if min(m, n) == 1 else []  # matrix-vector: the tile's thin side
        return {
            "GROUP_M": [1, 4, 8, 16],  # parallel mapping: L2 swizzle width
            "BLOCK_M": [*narrow, 32, 64, 128],  # tiling
            "BLOCK_N": [*narrow, 32, 64, 128, 256],
            "BLOCK_K": [32, 64, *([128] if narrow else [])],
            "num_warps": [4, 8],
            "num_stages": [2, 3, 4],
            "EVICT_EPILOGUE": ["", "evict_first"],  # memory: epilogue tensors are read once
        }

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        anchor = group.nodes[0]
        batch, m, n, k = dims(group)
        base = {"GROUP_M": 8, "EVICT_EPILOGUE": ""}
        if device == "cpu":  # the interpreter pays per program and per tl.dot: few, large tiles
            return {**base, "BLOCK_M": _p2(m, 16, 64), "BLOCK_N": _p2(n, 16, 64), "BLOCK_K": _p2(k, 16, 64),
                    "num_warps": 4, "num_stages": 1}
        if min(m, n) == 1:  # matrix-vector: memory-bound, a 16-wide thin side, enough programs
            long_side = max(m, n)
            block = next((b for b in (64, 32) if batch * -(-long_side // b) >= _SMS), 16)
            bm, bn = (block, 16) if n == 1 else (16, block)
            return {**base, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 128, "num_warps": 4, "num_stages": 3}
        if anchor.dtype == "float32" and self.precision == "ieee":  # no tensor cores: moderate tiles
            return {**base, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3}
        if anchor.dtype == "float32":  # 3xTF32: tensor-core tiles; fp32 operands halve BLOCK_K
            bm, bn = _p2(m, 32, 128), _p2(n, 32, 128)
            if batch * -(-m // bm) * -(-n // bn) < _SMS:  # too few 128-tiles to fill the SMs: halve them
                bm, bn = min(bm, 64), min(bn, 64)
            big = bm == 128 and bn == 128
            return {**base, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 32, "num_warps": 8 if big else 4,
                    "num_stages": 3}
        big = m >= 128 and n >= 128
        return {**base, "BLOCK_M": 128 if big else 64, "BLOCK_N": 128 if n >= 128 else _p2(n, 32, 128),
                "BLOCK_K": 64, "num_warps": 8 if big else 4, "num_stages": 3 if big else 4}

    def precision_of(self, group: GroupSpec) -> str | None:
        """The ``input_precision`` this instance gives tl.dot for ``group`` (None: 16-bit operands)."""
        return self.precision if group.nodes[0].dtype == "float32" else None

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        cfg = {**self.default_config(group, "cuda"), **config}
        anchor = group.nodes[0]
        a, b, bias, alpha, beta, b_is_weight = _operands(anchor)
        batched = is_batched(group)
        precision = self.precision_of(group)
        names = {v.name: _ident(v.name) for v in group.inputs} | {n.name: _ident(n.name) for n in group.nodes}
        used = {o for node in group.nodes[1:] for o in node.operands if isinstance(o, str)}
        extra = [v for v in group.inputs if v.is_tensor and (v.name in used or v.name == bias)]
        scalars = [v for v in group.inputs if not v.is_tensor]
        kernel = f"_{launcher}_kernel"
        formula = describe_chain(group)
        src = kernel_source(group, cfg, kernel, names, extra, scalars, bias, alpha, beta, formula, precision, batched)
        if batched:
            src += "\n\n" + batched_launcher_source(group, cfg, kernel, launcher, names, extra, scalars, a, b, formula)
        else:
            src += "\n\n" + launcher_source(group, cfg, kernel, launcher, names, extra, scalars, a, b, b_is_weight,
                                            formula)
        ops = ", ".join(n.op for n in group.nodes[1:])
        dot = PRECISIONS[precision] if precision else f"{anchor.dtype} tensor-core dot"
        what = f"Triton {anchor.op}" + (", batch on grid axis 1" if batched else "")
        fused = f" with epilogue ({ops}) fused" if ops else ", no epilogue"
        return KernelPlan(
            launcher=launcher, source=src,
            structure=f"{what} (GROUP_M-swizzled tiles, fp32 accumulate; {dot}){fused}",
            principle_ids=self._principles(group, precision, batched, bool(ops)),
            config={k: cfg[k] for k in self.tuning_space(group)},
        )

    def _principles(self, group: GroupSpec, precision: str | None, batched: bool, epilogue: bool) -> list[str]:
        ids = (["algorithm-structure/fuse-matmul-epilogue"] if epilogue else []) + list(self.principle_ids)
        if precision == "ieee":
            ids += ["tiling/fp32-dot-input-precision", "algorithm-structure/fp32-stays-fp32"]
        elif precision == "tf32x3":
            ids += ["algorithm-structure/fp32-gemm-3xtf32", "tiling/tensor-core-tiles"]
        else:
            ids += ["tiling/tensor-core-tiles"]
        if batched:
            ids.append("parallel-mapping/batch-and-heads-on-grid")
        if min(dims(group)[1:3]) == 1:
            ids.append("tiling/small-m-tiles")
        return ids


TEMPLATES = [MatmulEpilogueTemplate(), MatmulEpilogueTemplate("tf32x3")]
