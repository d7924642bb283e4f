"""Source text of the matmul template's kernel and launchers (see :mod:`agents.expert.kernels.matmul`).

Two launcher shapes share one kernel body:

* *flat*: ``linear`` / ``mm`` / ``matmul`` / ``addmm`` with a 2-D right operand: the left
  operand's leading dims flatten into M (a view for contiguous inputs), the grid is 1-D;
* *batched*: ``bmm`` / ``matmul`` with a >= 3-D right operand: batch dims broadcast as torch's
  matmul does (a 2-D left operand is read with batch stride 0), flatten into one batch dim, and
  the grid's second axis walks the batch (chunks of 65535, CUDA's limit for that axis).

Operands are read through their strides: a ``.T`` / ``transpose`` view feeding the matmul stays
a torch view in ``forward`` (it moves no data) and reaches the kernel as a swapped stride pair.
"""

from __future__ import annotations

from typing import Any

from agents.expert.kernels.base import GroupSpec
from agents.expert.kernels.elementwise import _wrap
from agents.expert.kernels.expr import round_to_dtype, tl_expr

GRID_Y_LIMIT = 65535  # CUDA's limit for gridDim.y: larger batches are launched in chunks


def kernel_source(group: GroupSpec, cfg: dict[str, Any], kernel: str, names: dict[str, str], extra: list[Any],
                  scalars: list[Any], bias: Any, alpha: float, beta: float, formula: str,
                  precision: str | None, batched: bool) -> str:
    """The ``@triton.jit`` kernel: tiled ``tl.dot`` into an fp32 accumulator, epilogue in registers."""
    anchor = group.nodes[0]
    e_names = [names[v.name] for v in extra]
    batch_params = ["stride_ab", "stride_bb", *(f"{n}_stride_b" for n in e_names), "stride_ob"] if batched else []
    params = ["a_ptr", "b_ptr", *(f"{n}_ptr" for n in e_names), "out_ptr", "M", "N", "K",
              *(names[s.name] for s in scalars), "stride_am", "stride_ak", "stride_bk", "stride_bn",
              *(f"{n}_stride_{d}" for n in e_names for d in "mn"), "stride_om", "stride_on", *batch_params,
              "BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr", "GROUP_M: tl.constexpr"]
    dot_precision = f', input_precision="{precision}"' if precision else ""
    evict = f', eviction_policy="{cfg["EVICT_EPILOGUE"]}"' if cfg["EVICT_EPILOGUE"] else ""
    lines = ["@triton.jit", f"def {kernel}(", *_wrap(params), "):",
             f'    """out = {formula}: tiled tl.dot, fp32 accumulator, epilogue in registers."""',
             "    pid = tl.program_id(0)"]
    if batched:
        lines += ["    # one batch entry per grid row: move every pointer to it (int64: big batches)",
                  "    pid_b = tl.program_id(1).to(tl.int64)",
                  "    a_ptr = a_ptr + pid_b * stride_ab",
                  "    b_ptr = b_ptr + pid_b * stride_bb",
                  *(f"    {n}_ptr = {n}_ptr + pid_b * {n}_stride_b" for n in e_names),
                  "    out_ptr = out_ptr + pid_b * stride_ob"]
    lines += ["    num_pid_m = tl.cdiv(M, BLOCK_M)",
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
              f"        acc = tl.dot(a, b, acc{dot_precision})",
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
    lines.append(f"    # the {anchor.op} result as torch stores it" + (": bias added in fp32, rounded once" if bias is not None
                                                                       else ", rounded once"))
    lines.append(f"    {names[anchor.name]} = {round_to_dtype(value, anchor.dtype)}")
    for node in group.nodes[1:]:
        operands = [names[o] if isinstance(o, str) and o in names else o for o in node.operands]
        lines.append(f"    {names[node.name]} = {round_to_dtype(tl_expr(node.op, operands, node.kwargs), node.dtype)}")
    lines.append("    o_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :] * stride_on")
    lines.append(f"    tl.store(o_ptrs, {names[group.output]}.to(out_ptr.dtype.element_ty), mask=mask)")
    return "\n".join(lines)


def _meta_args(cfg: dict[str, Any]) -> list[str]:
    return [f"BLOCK_M={int(cfg['BLOCK_M'])}", f"BLOCK_N={int(cfg['BLOCK_N'])}", f"BLOCK_K={int(cfg['BLOCK_K'])}",
            f"GROUP_M={int(cfg['GROUP_M'])}", f"num_warps={int(cfg['num_warps'])}",
            f"num_stages={int(cfg['num_stages'])}"]


def launcher_source(group: GroupSpec, cfg: dict[str, Any], kernel: str, launcher: str, names: dict[str, str],
                    extra: list[Any], scalars: list[Any], a: str, b: str, b_is_weight: bool, formula: str) -> str:
    """The flat launcher: leading dims of the left operand flatten into M, a 1-D grid."""
    args = [names[v.name] for v in group.inputs]
    na, nb = names[a], names[b]
    bm, bn = int(cfg["BLOCK_M"]), int(cfg["BLOCK_N"])
    lines = [f"def {launcher}({', '.join(args)}):",
             f'    """{formula}, computed by {kernel}."""',
             f"    a = {na}.reshape(-1, {na}.shape[-1])  # leading dims flatten into M; strides are kept",
             f"    b = {nb}.t()  # Linear weight (N, K) read as (K, N): a view, no copy" if b_is_weight
             else f"    b = {nb}  # read through its strides (a transposed view is not copied)",
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
            *_meta_args(cfg)]
    lines.append(f"    {kernel}[grid](")
    lines += _wrap(call, indent="        ")
    lines += ["    )", "    return out.reshape(out_shape)"]
    return "\n".join(lines)


def batched_launcher_source(group: GroupSpec, cfg: dict[str, Any], kernel: str, launcher: str,
                            names: dict[str, str], extra: list[Any], scalars: list[Any], a: str, b: str,
                            formula: str) -> str:
    """The batched launcher: broadcast batch dims, one grid row per batch entry."""
    args = [names[v.name] for v in group.inputs]
    na, nb = names[a], names[b]
    bm, bn = int(cfg["BLOCK_M"]), int(cfg["BLOCK_N"])
    lines = [f"def {launcher}({', '.join(args)}):",
             f'    """{formula} (batched), computed by {kernel}."""',
             f"    batch = torch.broadcast_shapes({na}.shape[:-2], {nb}.shape[:-2])",
             f"    M, K = {na}.shape[-2], {na}.shape[-1]",
             f"    N = {nb}.shape[-1]",
             "    # broadcast batch dims are read with stride 0; a transposed view keeps its strides",
             f"    a = {na}.expand(*batch, M, K).reshape(-1, M, K)",
             f"    b = {nb}.expand(*batch, K, N).reshape(-1, K, N)",
             "    n_batch = a.shape[0]",
             "    out_shape = (*batch, M, N)",
             f"    out = torch.empty((n_batch, M, N), dtype=torch.{group.out.dtype}, device={na}.device)"]
    for v in extra:
        n = names[v.name]
        lines.append(f"    {n} = torch.broadcast_to({n}, out_shape).reshape(n_batch, M, N)  # a view unless it cannot be one")
    lines += ["    if M == 0 or N == 0 or n_batch == 0:", "        return out.reshape(out_shape)",
              f"    for start in range(0, n_batch, {GRID_Y_LIMIT}):",
              f"        stop = min(start + {GRID_Y_LIMIT}, n_batch)",
              f"        grid = (triton.cdiv(M, {bm}) * triton.cdiv(N, {bn}), stop - start)"]
    sliced = ["a[start:stop]", "b[start:stop]", *(f"{names[v.name]}[start:stop]" for v in extra), "out[start:stop]"]
    call = [*sliced, "M", "N", "K", *(f"float({names[s.name]})" for s in scalars),
            "a.stride(1)", "a.stride(2)", "b.stride(1)", "b.stride(2)",
            *(f"{names[v.name]}.stride({d})" for v in extra for d in (1, 2)), "out.stride(1)", "out.stride(2)",
            "a.stride(0)", "b.stride(0)", *(f"{names[v.name]}.stride(0)" for v in extra), "out.stride(0)",
            *_meta_args(cfg)]
    lines.append(f"        {kernel}[grid](")
    lines += _wrap(call, indent="            ")
    lines += ["        )", "    return out.reshape(out_shape)"]
    return "\n".join(lines)
