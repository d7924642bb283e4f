"""Template: a Triton matmul with the following elementwise ops fused into its epilogue.

Covers ``linear(x, W, b)``, ``x @ W`` / ``mm`` with a 2-D right operand (leading dims of ``x``
flattened into M) and ``addmm``, followed by a single-use chain of elementwise ops whose output
keeps the matmul's shape. Tiles are ordered with a GROUP_M swizzle so programs running together
share operand tiles in L2; the accumulator is fp32; the matmul's own value is rounded to its
dtype exactly where torch would round it (after the bias), then the epilogue runs in registers
and the result is written once. fp32 inputs use ``input_precision="ieee"``: TF32 misses the 1e-4
tolerance, and an fp32 problem is judged against fp32 arithmetic.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agents.expert.kernels.base import GroupSpec, KernelPlan, NodeSpec
from agents.expert.kernels.elementwise import _ident, _wrap, describe_chain
from agents.expert.kernels.expr import (
    FLOAT_DTYPES,
    round_to_dtype,
    tl_expr,
    unsupported_reason,
)

_ANCHORS = {"linear", "mm", "matmul", "addmm"}


def _p2(n: int, lo: int, hi: int) -> int:
    v = 1 << max(0, (max(1, n) - 1).bit_length())
    return max(lo, min(hi, v))


def _operands(anchor: NodeSpec) -> tuple[str, str, Any, float, float, bool]:
    """(a, b, bias, alpha, beta, b_is_weight) of the anchor; a Linear weight is used transposed."""
    ops = anchor.operands
    if anchor.op == "linear":
        return str(ops[0]), str(ops[1]), ops[2] if len(ops) > 2 else None, 1.0, 1.0, True
    if anchor.op == "addmm":
        return (str(ops[1]), str(ops[2]), ops[0], float(anchor.kwargs.get("alpha", 1) or 1),
                float(anchor.kwargs.get("beta", 1) if anchor.kwargs.get("beta") is not None else 1), False)
    return str(ops[0]), str(ops[1]), None, 1.0, 1.0, False


class MatmulEpilogueTemplate:
    name = "matmul-epilogue"
    principle_ids: ClassVar[list[str]] = [
        "algorithm-structure/fuse-matmul-epilogue",
        "parallel-mapping/grid-swizzle-for-l2",
        "tiling/fp32-accumulators",
    ]

    def match(self, group: GroupSpec) -> bool:
        return self.why_not(group) is None

    def why_not(self, group: GroupSpec) -> str | None:
        if group.kind != "matmul" or not group.nodes or group.nodes[0].op not in _ANCHORS:
            return "not a linear/mm/matmul/addmm group"
        anchor = group.nodes[0]
        inputs = {v.name: v for v in group.inputs}
        a, b, bias, _, _, _ = _operands(anchor)
        if a not in inputs or b not in inputs or (bias is not None and bias not in inputs):
            return "matmul operands must come from outside the group"
        va, vb = inputs[a], inputs[b]
        if len(va.shape) < 2 or len(vb.shape) != 2:
            return "needs a >= 2-D left operand and a 2-D right operand"
        if va.dtype != vb.dtype or va.dtype not in FLOAT_DTYPES or anchor.dtype != va.dtype:
            return f"operand dtypes {va.dtype}/{vb.dtype} (one floating dtype expected)"
        if bias is not None and len(inputs[bias].shape) > 2:
            return "bias of rank > 2"
        for node in group.nodes[1:]:
            if unsupported_reason(node.op, node.kwargs) or node.dtype not in FLOAT_DTYPES | {"bool"}:
                return f"epilogue op {node.op} is not supported"
            if len(node.shape) > len(anchor.shape) or any(
                    d not in (1, a) for d, a in zip(reversed(node.shape), reversed(anchor.shape))):
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
        return {
            "GROUP_M": [1, 4, 8, 16],  # parallel mapping: L2 swizzle width
            "BLOCK_M": [32, 64, 128],  # tiling
            "BLOCK_N": [32, 64, 128, 256],
            "BLOCK_K": [32, 64],
            "num_warps": [4, 8],
            "num_stages": [2, 3, 4],
            "EVICT_EPILOGUE": ["", "evict_first"],  # memory: epilogue tensors are read once
        }

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        anchor = group.nodes[0]
        n = anchor.shape[-1] if anchor.shape else 1
        m = 1
        for s in anchor.shape[:-1]:
            m *= s
        inputs = {v.name: v for v in group.inputs}
        a, _, _, _, _, _ = _operands(anchor)
        k = inputs[a].shape[-1] if a in inputs and inputs[a].shape else 32
        if device == "cpu":  # the interpreter pays per program and per tl.dot: few, large tiles
            return {"GROUP_M": 8, "BLOCK_M": _p2(m, 16, 64), "BLOCK_N": _p2(n, 16, 64), "BLOCK_K": _p2(k, 16, 64),
                    "num_warps": 4, "num_stages": 1, "EVICT_EPILOGUE": ""}
        if anchor.dtype == "float32":  # ieee fp32 dot: no tensor cores, moderate tiles
            return {"GROUP_M": 8, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3,
                    "EVICT_EPILOGUE": ""}
        big = m >= 128 and n >= 128
        return {"GROUP_M": 8, "BLOCK_M": 128 if big else 64, "BLOCK_N": 128 if n >= 128 else _p2(n, 32, 128),
                "BLOCK_K": 64, "num_warps": 8 if big else 4, "num_stages": 3 if big else 4, "EVICT_EPILOGUE": ""}

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        cfg = {**self.default_config(group, "cuda"), **config}
        anchor = group.nodes[0]
        a, b, bias, alpha, beta, b_is_weight = _operands(anchor)
        names = {v.name: _ident(v.name) for v in group.inputs} | {n.name: _ident(n.name) for n in group.nodes}
        used = {o for node in group.nodes[1:] for o in node.operands if isinstance(o, str)}
        extra = [v for v in group.inputs if v.is_tensor and (v.name in used or v.name == bias)]
        scalars = [v for v in group.inputs if not v.is_tensor]
        kernel = f"_{launcher}_kernel"
        formula = describe_chain(group)
        src = _kernel(group, cfg, kernel, names, extra, scalars, bias, alpha, beta, formula)
        src += "\n\n" + _launcher(group, cfg, kernel, launcher, names, extra, scalars, a, b, b_is_weight, formula)
        ops = ", ".join(n.op for n in group.nodes[1:])
        return KernelPlan(
            launcher=launcher, source=src,
            structure=f"Triton {anchor.op} (GROUP_M-swizzled tiles, fp32 accumulate) with epilogue ({ops}) fused",
            principle_ids=list(self.principle_ids)
            + (["tiling/fp32-dot-input-precision", "algorithm-structure/fp32-stays-fp32"] if anchor.dtype == "float32"
               else ["tiling/tensor-core-tiles"]),
            config={k: cfg[k] for k in self.tuning_space(group)},
        )


def _kernel(group: GroupSpec, cfg: dict[str, Any], kernel: str, names: dict[str, str], extra: list[Any],
            scalars: list[Any], bias: Any, alpha: float, beta: float, formula: str) -> str:
    anchor = group.nodes[0]
    e_names = [names[v.name] for v in extra]
    params = ["a_ptr", "b_ptr", *(f"{n}_ptr" for n in e_names), "out_ptr", "M", "N", "K",
              *(names[s.name] for s in scalars), "stride_am", "stride_ak", "stride_bk", "stride_bn",
              *(f"{n}_stride_{d}" for n in e_names for d in "mn"), "stride_om", "stride_on",
              "BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr", "GROUP_M: tl.constexpr"]
    precision = ', input_precision="ieee"' if anchor.dtype == "float32" else ""
    evict = f', eviction_policy="{cfg["EVICT_EPILOGUE"]}"' if cfg["EVICT_EPILOGUE"] else ""
    lines = ["@triton.jit", f"def {kernel}(", *_wrap(params), "):",
             f'    """out = {formula}: tiled tl.dot, fp32 accumulator, epilogue in registers."""',
             "    pid = tl.program_id(0)",
             "    num_pid_m = tl.cdiv(M, BLOCK_M)",
             "    num_pid_n = tl.cdiv(N, BLOCK_N)",
             "    # GROUP_M swizzle: programs that run together reuse the same B tiles from L2",
             "    group_id = pid // (GROUP_M * num_pid_n)",
             "    first_m = group_id * GROUP_M",
             "    group_rows = tl.minimum(num_pid_m - first_m, GROUP_M)",
             "    pid_m = first_m + (pid % (GROUP_M * num_pid_n)) % group_rows",
             "    pid_n = (pid % (GROUP_M * num_pid_n)) // group_rows",
             "    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
             "    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)",
             "    offs_k = tl.arange(0, BLOCK_K)",
             "    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak",
             "    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn",
             "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
             "    for k in range(0, tl.cdiv(K, BLOCK_K)):",
             "        k_left = K - k * BLOCK_K",
             "        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)",
             "        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)",
             f"        acc = tl.dot(a, b, acc{precision})",
             "        a_ptrs += BLOCK_K * stride_ak",
             "        b_ptrs += BLOCK_K * stride_bk",
             "    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)"]
    for v, n in zip(extra, e_names):
        other = "False" if v.dtype == "bool" else "0.0"
        lines.append(f"    {n} = tl.load({n}_ptr + offs_m[:, None].to(tl.int64) * {n}_stride_m + offs_n[None, :] * "
                     f"{n}_stride_n, mask=mask, other={other}{evict}).to(tl.float32)")
    value = "acc" if alpha == 1.0 else f"acc * {alpha!r}"
    if bias is not None:
        value = f"{value} + {names[bias]}" if beta == 1.0 else f"{value} + {beta!r} * {names[bias]}"
    lines.append(f"    # the {anchor.op} result as torch stores it: bias added in fp32, rounded once")
    lines.append(f"    {names[anchor.name]} = {round_to_dtype(value, anchor.dtype)}")
    for node in group.nodes[1:]:
        operands = [names[o] if isinstance(o, str) and o in names else o for o in node.operands]
        lines.append(f"    {names[node.name]} = {round_to_dtype(tl_expr(node.op, operands, node.kwargs), node.dtype)}")
    lines.append("    o_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :] * stride_on")
    lines.append(f"    tl.store(o_ptrs, {names[group.output]}.to(out_ptr.dtype.element_ty), mask=mask)")
    return "\n".join(lines)


def _launcher(group: GroupSpec, cfg: dict[str, Any], kernel: str, launcher: str, names: dict[str, str],
              extra: list[Any], scalars: list[Any], a: str, b: str, b_is_weight: bool, formula: str) -> str:
    args = [names[v.name] for v in group.inputs]
    na, nb = names[a], names[b]
    bm, bn = int(cfg["BLOCK_M"]), int(cfg["BLOCK_N"])
    lines = [f"def {launcher}({', '.join(args)}):",
             f'    """{formula}, computed by {kernel}."""',
             f"    a = {na}.reshape(-1, {na}.shape[-1])  # leading dims flatten into M",
             f"    b = {nb}.t()  # Linear weight (N, K) read as (K, N): a view, no copy" if b_is_weight else f"    b = {nb}",
             "    M, K = a.shape",
             "    N = b.shape[1]",
             f"    out_shape = (*{na}.shape[:-1], N)",
             f"    out = torch.empty((M, N), dtype=torch.{group.out.dtype}, device={na}.device)"]
    for v in extra:
        n = names[v.name]
        lines.append(f"    {n} = torch.broadcast_to({n}, out_shape).reshape(M, N)  # a view unless it cannot be one")
    lines += ["    if M == 0 or N == 0:", "        return out.reshape(out_shape)",
              f"    grid = (triton.cdiv(M, {bm}) * triton.cdiv(N, {bn}),)"]
    call = ["a", "b", *(names[v.name] for v in extra), "out", "M", "N", "K", *(f"float({names[s.name]})" for s in scalars),
            "a.stride(0)", "a.stride(1)", "b.stride(0)", "b.stride(1)",
            *(f"{names[v.name]}.stride({d})" for v in extra for d in (0, 1)), "out.stride(0)", "out.stride(1)",
            f"BLOCK_M={bm}", f"BLOCK_N={bn}", f"BLOCK_K={int(cfg['BLOCK_K'])}", f"GROUP_M={int(cfg['GROUP_M'])}",
            f"num_warps={int(cfg['num_warps'])}", f"num_stages={int(cfg['num_stages'])}"]
    lines.append(f"    {kernel}[grid](")
    lines += _wrap(call, indent="        ")
    lines += ["    )", "    return out.reshape(out_shape)"]
    return "\n".join(lines)


TEMPLATES = [MatmulEpilogueTemplate()]
