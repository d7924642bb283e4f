"""Source text of the matmul template's kernels and launchers (see :mod:`agents.expert.kernels.matmul`).

Two launcher shapes share one kernel body:

* *flat*: ``linear`` / ``mm`` / ``matmul`` / ``addmm`` with a 2-D right operand: the left
  operand's leading dims flatten into M (a view for contiguous inputs), the grid is 1-D;
* *batched*: ``bmm`` / ``matmul`` with a >= 3-D right operand: batch dims broadcast as torch's
  matmul does (a 2-D left operand is read with batch stride 0), flatten into one batch dim, and
  the grid's second axis walks the batch (chunks of 65535, CUDA's limit for that axis).

Operands are read through their strides: a ``.T`` / ``transpose`` view feeding the matmul stays
a torch view in ``forward`` (it moves no data) and reaches the kernel as a swapped stride pair.
The B operand may instead be computed per tile by a prologue (:mod:`.matmul_prologue`).

Split-K (flat only, ``SPLIT_K > 1``): the grid's second axis cuts K into slices; each program
writes its fp32 partial tile to a ``(splits, M, N)`` workspace, and a second small kernel sums
the slices in a fixed order (deterministic, unlike float atomics), then runs the bias and the
epilogue once on the full sum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.expert.kernels import matmul_prologue as pro
from agents.expert.kernels.base import GroupSpec, ValueSpec
from agents.expert.kernels.elementwise import _wrap
from agents.expert.kernels.expr import round_to_dtype, tl_expr

GRID_Y_LIMIT = 65535  # CUDA's limit for gridDim.y: larger batches are launched in chunks


@dataclass
class Parts:
    """Everything the source functions need about one rendering."""

    group: GroupSpec
    cfg: dict[str, Any]
    kernel: str
    launcher: str
    names: dict[str, str]
    extra: list[ValueSpec]  # epilogue (and bias) tensors
    scalars: list[ValueSpec]
    a: str
    b: str
    bias: Any
    alpha: float
    beta: float
    b_is_weight: bool
    formula: str
    precision: str | None
    batched: bool
    prologue: pro.Prologue | None = None

    @property
    def split(self) -> int:
        return 1 if self.batched else max(1, int(self.cfg.get("SPLIT_K", 1)))

    @property
    def dot_fp32(self) -> bool:
        """bf16 operands: the CPU interpreter's tl.dot multiplies bf16 as raw uint16 bits, so on CPU
        tensors the kernel upcasts both tiles first (exact products, as the tensor cores' are)."""
        return any(n.name == self.group.anchor and n.dtype == "bfloat16" for n in self.group.nodes)

    @property
    def e_names(self) -> list[str]:
        return [self.names[v.name] for v in self.extra]


_CONSTEXPRS = ["BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr", "GROUP_M: tl.constexpr"]
_TILE_LINES = [
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
]


def _epilogue_lines(p: Parts) -> list[str]:
    """From the fp32 ``acc`` of a whole K to the stored output: bias, rounding, epilogue, store."""
    anchor = next(n for n in p.group.nodes if n.name == p.group.anchor) if p.group.anchor else p.group.nodes[0]
    epilogue = pro.split_nodes(p.group)[2]
    evict = f', eviction_policy="{p.cfg["EVICT_EPILOGUE"]}"' if p.cfg["EVICT_EPILOGUE"] else ""
    lines = ["    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)"]
    for v, n in zip(p.extra, p.e_names):
        other = "False" if v.dtype == "bool" else "0.0"
        lines.append(f"    {n} = tl.load({n}_ptr + offs_m[:, None].to(tl.int64) * {n}_stride_m + offs_n[None, :] * "
                     f"{n}_stride_n, mask=mask, other={other}{evict}).to(tl.float32)")
    value = "acc" if p.alpha == 1.0 else f"acc * {p.alpha!r}"
    if p.bias is not None:
        bias = p.names[p.bias]
        value = f"{value} + {bias}" if p.beta == 1.0 else f"{value} + {p.beta!r} * {bias}"
    lines.append(f"    # the {anchor.op} result as torch stores it" + (": bias added in fp32, rounded once"
                                                                       if p.bias is not None else ", rounded once"))
    lines.append(f"    {p.names[anchor.name]} = {round_to_dtype(value, anchor.dtype)}")
    for node in epilogue:
        operands = [p.names[o] if isinstance(o, str) and o in p.names else o for o in node.operands]
        lines.append(f"    {p.names[node.name]} = {round_to_dtype(tl_expr(node.op, operands, node.kwargs), node.dtype)}")
    lines.append("    o_ptrs = out_ptr + offs_m[:, None].to(tl.int64) * stride_om + offs_n[None, :] * stride_on")
    lines.append(f"    tl.store(o_ptrs, {p.names[p.group.output]}.to(out_ptr.dtype.element_ty), mask=mask)")
    return lines


def _loop_lines(p: Parts) -> list[str]:
    """Pointers, the K loop into the fp32 ``acc`` (over this program's slice when split)."""
    split = p.split > 1
    k0 = "k_start + " if split else ""
    lines = ["    offs_k = tl.arange(0, BLOCK_K)"]
    if split:
        lines += ["    # this program's slice of K (split-K: the grid's second axis)",
                  "    pid_k = tl.program_id(1)",
                  "    k_len = tl.minimum(K - pid_k * K_PER_SPLIT, K_PER_SPLIT)",
                  "    k_start = pid_k.to(tl.int64) * K_PER_SPLIT"]
    lines.append(f"    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + ({k0}offs_k[None, :]) * stride_ak")
    if p.prologue is None:
        lines.append(f"    b_ptrs = b_ptr + ({k0}offs_k[:, None]) * stride_bk + offs_n[None, :].to(tl.int64) * stride_bn")
    else:
        lines += pro.pre_loop_lines(p.prologue, p.names, k0)
    dot_precision = f', input_precision="{p.precision}"' if p.precision else ""
    lines += ["    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
              f"    for k in range(0, tl.cdiv({'k_len' if split else 'K'}, BLOCK_K)):",
              f"        k_left = {'k_len' if split else 'K'} - k * BLOCK_K",
              "        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)"]
    if p.prologue is None:
        lines.append("        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)")
    else:
        lines += pro.loop_lines(p.prologue, p.names, {v.name: v for v in p.group.inputs})
    if p.dot_fp32:
        lines += ["        if DOT_FP32:  # the CPU interpreter: its bf16 dot is wrong, fp32 products are exact",
                  "            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc)",
                  "        else:",
                  "            acc = tl.dot(a, b, acc)"]
    else:
        lines.append(f"        acc = tl.dot(a, b, acc{dot_precision})")
    lines += [
              "        a_ptrs += BLOCK_K * stride_ak"]
    lines += ["        b_ptrs += BLOCK_K * stride_bk"] if p.prologue is None else pro.advance_lines(p.prologue, p.names)
    return lines


def _b_params(p: Parts) -> tuple[list[str], list[str]]:
    if p.prologue is None:
        return ["b_ptr"], ["stride_bk", "stride_bn"]
    params = pro.kernel_params(p.prologue, p.names)
    n_ptrs = len(p.prologue.tensors)
    return params[:n_ptrs], params[n_ptrs:]


def kernel_source(p: Parts) -> str:
    """The ``@triton.jit`` kernel(s): tiled ``tl.dot`` into an fp32 accumulator, epilogue in registers."""
    e_names = p.e_names
    scalars = [p.names[s.name] for s in p.scalars]
    b_ptrs, b_strides = _b_params(p)
    split = p.split > 1
    constexprs = _CONSTEXPRS + (["DOT_FP32: tl.constexpr"] if p.dot_fp32 else [])
    batch_params = ["stride_ab", "stride_bb", *(f"{n}_stride_b" for n in e_names), "stride_ob"] if p.batched else []
    if split:
        params = ["a_ptr", *b_ptrs, "ws_ptr", "M", "N", "K", "K_PER_SPLIT", *scalars, "stride_am", "stride_ak",
                  *b_strides, "stride_ws", "stride_wm", *constexprs]
    else:
        params = ["a_ptr", *b_ptrs, *(f"{n}_ptr" for n in e_names), "out_ptr", "M", "N", "K", *scalars,
                  "stride_am", "stride_ak", *b_strides, *(f"{n}_stride_{d}" for n in e_names for d in "mn"),
                  "stride_om", "stride_on", *batch_params, *constexprs]
    what = "fp32 partial products of one K slice" if split else "tiled tl.dot, fp32 accumulator, epilogue in registers"
    lines = ["@triton.jit", f"def {p.kernel}(", *_wrap(params), "):",
             f'    """out = {p.formula}: {what}."""',
             "    pid = tl.program_id(0)"]
    if p.batched:
        lines += ["    # one batch entry per grid row: move every pointer to it (int64: big batches)",
                  "    pid_b = tl.program_id(1).to(tl.int64)",
                  "    a_ptr = a_ptr + pid_b * stride_ab",
                  "    b_ptr = b_ptr + pid_b * stride_bb",
                  *(f"    {n}_ptr = {n}_ptr + pid_b * {n}_stride_b" for n in e_names),
                  "    out_ptr = out_ptr + pid_b * stride_ob"]
    lines += _TILE_LINES + _loop_lines(p)
    if not split:
        return "\n".join(lines + _epilogue_lines(p))
    lines += ["    # fp32 partials to the workspace: the reduce kernel sums them in a fixed order",
              "    w_ptrs = ws_ptr + pid_k.to(tl.int64) * stride_ws",
              "    w_ptrs += offs_m[:, None].to(tl.int64) * stride_wm + offs_n[None, :]",
              "    tl.store(w_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))"]
    reduce_params = ["ws_ptr", *(f"{n}_ptr" for n in e_names), "out_ptr", "M", "N", "SPLITS", *scalars,
                     "stride_ws", "stride_wm", *(f"{n}_stride_{d}" for n in e_names for d in "mn"),
                     "stride_om", "stride_on", "BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr",
                     "GROUP_M: tl.constexpr"]
    lines += ["", "", "@triton.jit", f"def {p.kernel}_reduce(", *_wrap(reduce_params), "):",
              f'    """out = {p.formula}: sums the SPLITS K-slice partials in order, then the epilogue."""',
              "    pid = tl.program_id(0)", *_TILE_LINES,
              "    w_ptrs = ws_ptr + offs_m[:, None].to(tl.int64) * stride_wm + offs_n[None, :]",
              "    w_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)",
              "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
              "    for s in range(0, SPLITS):",
              "        acc += tl.load(w_ptrs, mask=w_mask, other=0.0)",
              "        w_ptrs += stride_ws"]
    return "\n".join(lines + _epilogue_lines(p))


def _meta_args(p: Parts) -> list[str]:
    cfg = p.cfg
    return [f"BLOCK_M={int(cfg['BLOCK_M'])}", f"BLOCK_N={int(cfg['BLOCK_N'])}", f"BLOCK_K={int(cfg['BLOCK_K'])}",
            f"GROUP_M={int(cfg['GROUP_M'])}", *(['DOT_FP32=a.device.type == "cpu"'] if p.dot_fp32 else []),
            f"num_warps={int(cfg['num_warps'])}", f"num_stages={int(cfg['num_stages'])}"]


def launcher_source(p: Parts) -> str:
    """The flat launcher: leading dims of the left operand flatten into M, a 1-D grid (2-D when split)."""
    names, cfg = p.names, p.cfg
    args = [names[v.name] for v in p.group.inputs]
    na, nb = names[p.a], names.get(p.b, "")
    bm, bn, bk = int(cfg["BLOCK_M"]), int(cfg["BLOCK_N"]), int(cfg["BLOCK_K"])
    lines = [f"def {p.launcher}({', '.join(args)}):",
             f'    """{p.formula}, computed by {p.kernel}."""',
             f"    a = {na}.reshape(-1, {na}.shape[-1])  # leading dims flatten into M; strides are kept"]
    if p.prologue is not None:
        lines += pro.launcher_lines(p.prologue, names)
        b_ptrs, b_strides = pro.call_args(p.prologue, names)
        lines += ["    M, K = a.shape"]
    else:
        lines.append(f"    b = {nb}.t()  # Linear weight (N, K) read as (K, N): a view, no copy" if p.b_is_weight
                     else f"    b = {nb}  # read through its strides (a transposed view is not copied)")
        lines += ["    M, K = a.shape", "    N = b.shape[1]"]
        b_ptrs, b_strides = ["b"], ["b.stride(0)", "b.stride(1)"]
    lines += [f"    out_shape = (*{na}.shape[:-1], N)",
              f"    out = torch.empty((M, N), dtype=torch.{p.group.out.dtype}, device={na}.device)"]
    for v in p.extra:
        n = names[v.name]
        lines.append(f"    {n} = torch.broadcast_to({n}, out_shape).reshape(M, N)  # a view unless it cannot be one")
    lines += ["    if M == 0 or N == 0:", "        return out.reshape(out_shape)",
              f"    grid = (_egg_cdiv(M, {bm}) * _egg_cdiv(N, {bn}),)"]
    scalars = [f"float({names[s.name]})" for s in p.scalars]
    extras = [names[v.name] for v in p.extra]
    e_strides = [f"{n}.stride({d})" for n in extras for d in (0, 1)]
    if p.split == 1:
        call = ["a", *b_ptrs, *extras, "out", "M", "N", "K", *scalars, "a.stride(0)", "a.stride(1)", *b_strides,
                *e_strides, "out.stride(0)", "out.stride(1)", *_meta_args(p)]
        lines += [f"    {p.kernel}[grid](", *_wrap(call, indent="        "), "    )", "    return out.reshape(out_shape)"]
        return "\n".join(lines)
    lines += [f"    # split-K: {p.split} slices of whole BLOCK_K steps, fp32 partials, then a fixed-order sum",
              f"    k_per_split = max({bk}, _egg_cdiv(_egg_cdiv(K, {p.split}), {bk}) * {bk})",
              "    splits = _egg_cdiv(K, k_per_split)",
              f"    ws = torch.empty((splits, M, N), dtype=torch.float32, device={na}.device)",
              "    if splits > 0:"]
    call = ["a", *b_ptrs, "ws", "M", "N", "K", "k_per_split", *scalars, "a.stride(0)", "a.stride(1)", *b_strides,
            "ws.stride(0)", "ws.stride(1)", *_meta_args(p)]
    lines += [f"        {p.kernel}[(grid[0], splits)](", *_wrap(call, indent="            "), "        )"]
    reduce = ["ws", *extras, "out", "M", "N", "splits", *scalars, "ws.stride(0)", "ws.stride(1)", *e_strides,
              "out.stride(0)", "out.stride(1)", f"BLOCK_M={bm}", f"BLOCK_N={bn}", f"GROUP_M={int(cfg['GROUP_M'])}",
              "num_warps=4"]
    lines += [f"    {p.kernel}_reduce[grid](", *_wrap(reduce, indent="        "), "    )",
              "    return out.reshape(out_shape)"]
    return "\n".join(lines)


def batched_launcher_source(p: Parts) -> str:
    """The batched launcher: broadcast batch dims, one grid row per batch entry."""
    names, cfg = p.names, p.cfg
    args = [names[v.name] for v in p.group.inputs]
    na, nb = names[p.a], names[p.b]
    bm, bn = int(cfg["BLOCK_M"]), int(cfg["BLOCK_N"])
    lines = [f"def {p.launcher}({', '.join(args)}):",
             f'    """{p.formula} (batched), computed by {p.kernel}."""',
             f"    batch = _egg_broadcast_shapes({na}.shape[:-2], {nb}.shape[:-2])",
             f"    M, K = {na}.shape[-2], {na}.shape[-1]",
             f"    N = {nb}.shape[-1]",
             "    # broadcast batch dims are read with stride 0; a transposed view keeps its strides",
             f"    a = {na}.expand(*batch, M, K).reshape(-1, M, K)",
             f"    b = {nb}.expand(*batch, K, N).reshape(-1, K, N)",
             "    n_batch = a.shape[0]",
             "    out_shape = (*batch, M, N)",
             f"    out = torch.empty((n_batch, M, N), dtype=torch.{p.group.out.dtype}, device={na}.device)"]
    for v in p.extra:
        n = names[v.name]
        lines.append(f"    {n} = torch.broadcast_to({n}, out_shape).reshape(n_batch, M, N)  # a view unless it cannot be one")
    lines += ["    if M == 0 or N == 0 or n_batch == 0:", "        return out.reshape(out_shape)",
              f"    for start in range(0, n_batch, {GRID_Y_LIMIT}):",
              f"        stop = min(start + {GRID_Y_LIMIT}, n_batch)",
              f"        grid = (_egg_cdiv(M, {bm}) * _egg_cdiv(N, {bn}), stop - start)"]
    sliced = ["a[start:stop]", "b[start:stop]", *(f"{names[v.name]}[start:stop]" for v in p.extra), "out[start:stop]"]
    call = [*sliced, "M", "N", "K", *(f"float({names[s.name]})" for s in p.scalars),
            "a.stride(1)", "a.stride(2)", "b.stride(1)", "b.stride(2)",
            *(f"{names[v.name]}.stride({d})" for v in p.extra for d in (1, 2)), "out.stride(1)", "out.stride(2)",
            "a.stride(0)", "b.stride(0)", *(f"{names[v.name]}.stride(0)" for v in p.extra), "out.stride(0)",
            *_meta_args(p)]
    lines.append(f"        {p.kernel}[grid](")
    lines += _wrap(call, indent="            ")
    lines += ["        )", "    return out.reshape(out_shape)"]
    return "\n".join(lines)
