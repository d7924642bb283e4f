"""Template: a chain of elementwise ops over broadcastable inputs as one flat-grid Triton kernel.

The kernel walks the output in BLOCK-sized chunks of its flat (row-major) index. Each tensor
input is addressed in one of three ways, chosen by the launcher at run time (a constexpr per
input, so each combination compiles to a kernel without dead index math):

* FLAT (0): contiguous with the output's shape: the flat index is the address (the fast path);
* SCALAR (1): one element broadcast everywhere (a 0-d tensor or a [1, 1] parameter): one load;
* STRIDED (2): anything else (a [C, 1, 1] bias, a transposed view): the flat index is split into
  a multi-index over the output shape and dotted with the input's broadcast strides.

The launcher first merges adjacent dimensions that are contiguous for every input and pads the
result to 6 dims, so the usual bias-over-channels case costs two divisions per element. Size-1
pad dims are specialised away by Triton (integer arguments equal to 1 become constants).
Math runs in fp32; each node is rounded to its own dtype as torch does, so 16-bit chains match
eager exactly; the store casts to the output dtype.
"""

from __future__ import annotations

import keyword
from typing import Any, ClassVar

from agents.expert.kernels.base import GroupSpec, KernelPlan
from agents.expert.kernels.expr import (
    EXACT_INT_DTYPES,
    FLOAT_DTYPES,
    canonical,
    literal,
    round_to_dtype,
    tl_expr,
    unsupported_reason,
)

MAX_RANK = 6
FLAT, SCALAR, STRIDED = 0, 1, 2
# Names the generated kernels and launchers use for themselves: a group value with one of these
# names is renamed (v_<name>) so it cannot shadow them.
_RESERVED = {
    # kernel
    "pid", "offs", "mask", "rem", "blk", "n_elements", "out_ptr", "BLOCK", "IDX64", "STRIDED",
    "tl", "triton", "torch", "math", "operator", "float", "int",
    # elementwise launcher
    "shape", "out", "n", "sizes", "strides", "modes", "grid", "blocks", "sms",
    # matmul kernel and launcher
    "M", "N", "K", "out_shape", "a", "b", "acc", "k", "k_left", "offs_m", "offs_n", "offs_k",
    "a_ptr", "b_ptr", "a_ptrs", "b_ptrs", "o_ptrs", "pid_m", "pid_n", "group_id", "first_m",
    "group_rows", "num_pid_m", "num_pid_n", "pid_b", "batch", "n_batch", "start", "stop",
    "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_om", "stride_on", "stride_ab", "stride_bb",
    "stride_ob", "DOT_FP32",
    # matmul operand prologue and split-K
    "b_mask", "b_shape", "pid_k", "k_len", "k_start", "K_PER_SPLIT", "k_per_split", "splits", "SPLITS", "s",
    "ws", "ws_ptr", "w_ptrs", "w_mask", "stride_ws", "stride_wm",
} | {f"i{d}" for d in range(MAX_RANK)}

# Shared by every elementwise launcher in a file (the codegen keeps one copy of identical helpers).
LAYOUT_HELPER = '''
def _egg_broadcast_layout(shape, tensors):
    """Collapsed output sizes (padded to 6 dims) and each tensor's broadcast strides and mode.

    Adjacent dims merge when they are contiguous for every tensor, so [B, C, H, W] + bias[C, 1, 1]
    becomes [B, C, H*W]. Mode 0: contiguous in the output's layout (flat index), 1: a single
    element, 2: strided (needs the multi-index).
    """
    modes = [0 if t.shape == shape and t.is_contiguous() else 1 if t.numel() == 1 else 2 for t in tensors]
    if 2 not in modes:  # the usual case, decided without building stride lists (host time per call)
        return [1] * 5 + [math.prod(shape)], [[0] * 5 + [1 - m] for m in modes], modes, tensors
    strides = [list(torch.broadcast_to(t, shape).stride()) for t in tensors]
    sizes = []
    merged = [[] for _ in tensors]
    for d in range(len(shape)):
        if shape[d] == 1:
            continue  # size-1 dims carry no index
        if sizes and all(m[-1] == st[d] * shape[d] for m, st in zip(merged, strides)):
            sizes[-1] *= shape[d]
            for m, st in zip(merged, strides):
                m[-1] = st[d]
            continue
        sizes.append(shape[d])
        for m, st in zip(merged, strides):
            m.append(st[d])
    if len(sizes) > 6:  # rare: materialise the broadcast so everything is flat
        return _egg_broadcast_layout(shape, [torch.broadcast_to(t, shape).contiguous() for t in tensors])
    contiguous, acc = [], 1
    for size in reversed(sizes):
        contiguous.insert(0, acc)
        acc *= size
    modes = []
    for m in merged:
        modes.append(0 if m == contiguous else 1 if not any(m) else 2)
    pad = 6 - len(sizes)
    return [1] * pad + sizes, [[0] * pad + m for m in merged], modes, tensors
'''


# The scalar fold: ops a kernel computes in fp64 on 0-d values, and the 0-d inputs they may read.
SCALAR64_OPS = frozenset({"add", "sub", "rsub", "mul", "div", "pow", "sqrt", "rsqrt", "neg", "to", "exp", "log"})
SCALAR64_INPUT_DTYPES = frozenset({"float64", "float32", "int64", "int32"})


def scalar64_op_reason(op: str, kwargs: dict[str, Any]) -> str | None:
    """Why the fp64 scalar fold cannot compute ``op`` with ``kwargs``, or None. Float keyword
    arguments (alpha) would become fp32 literals in the kernel, so only defaults are folded."""
    if canonical(op) not in SCALAR64_OPS:
        return f"{op}: not an op the float64 scalar fold computes"
    if any(v not in (None, 1) for k, v in kwargs.items() if k not in ("dtype", "memory_format", "copy")):
        return f"{op}: float64 scalar ops with keyword arguments are not folded"
    return None


def fp64_values(group: GroupSpec) -> set[str]:
    """Values the kernel keeps in fp64: 0-d float64 nodes (a scalar chain such as AdamW's
    ``1 - beta ** step.double()``, computed by every program) and the 0-d inputs they read."""
    nodes = {n.name for n in group.nodes if n.dtype == "float64" and n.shape == []}
    reads = {o for n in group.nodes if n.name in nodes for o in n.operands if isinstance(o, str) and o not in nodes}
    return nodes | reads


def _ident(name: str) -> str:
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "v"
    if safe[0].isdigit() or keyword.iskeyword(safe) or safe in _RESERVED or safe.startswith("_egg"):
        safe = f"v_{safe}"
    return safe


def _unwrap(text: str) -> str:
    """Drop one pair of parentheses around the whole of ``text`` (not ``(a) * (b)``)."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and i < len(text) - 1:
            return text
    return text[1:-1]


def describe_chain(group: GroupSpec, limit: int = 110) -> str:
    """``relu(x * 2.0 + bias)``-style text of the group's output, for docstrings and headers."""
    text: dict[str, str] = {v.name: v.name for v in group.inputs}
    symbols = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
    for node in group.nodes:
        args = [text.get(o, o) if isinstance(o, str) else literal(o) for o in node.operands if o is not None]
        if node.op in symbols and len(args) == 2:
            text[node.name] = f"({args[0]} {symbols[node.op]} {args[1]})"
        else:
            bare = [_unwrap(a) for a in args]
            extra = [f"{k}={v}" for k, v in node.kwargs.items() if v is not None and k != "dtype"]
            text[node.name] = f"{node.op}({', '.join(bare + extra)})"
    out = _unwrap(text[group.output])
    return out if len(out) <= limit else out[: limit - 3] + "..."


class ElementwiseTemplate:
    """Fused elementwise/broadcast chain (kind ``elementwise_chain``)."""

    name = "elementwise"
    principle_ids: ClassVar[list[str]] = [
        "algorithm-structure/fuse-elementwise-chain",
        "parallel-mapping/flat-index-for-elementwise",
        "tiling/power-of-two-blocks-with-masks",
        "memory/masked-loads-neutral-other",
        "memory/int64-offsets",
    ]

    def match(self, group: GroupSpec) -> bool:
        return self.why_not(group) is None

    def why_not(self, group: GroupSpec) -> str | None:
        if group.kind != "elementwise_chain":
            return f"group kind {group.kind} is not an elementwise chain"
        f64 = fp64_values(group)
        for value in group.inputs:
            if value.name in f64:
                if not value.is_tensor or value.shape != [] or value.dtype not in SCALAR64_INPUT_DTYPES:
                    return f"input {value.name} of a float64 scalar op is not a 0-d float/int tensor"
                continue  # loaded once per program as fp64
            if value.is_tensor and value.dtype == "float64" and value.shape == [] and all(
                    n.dtype == "float32" for n in group.nodes if value.name in n.operands):
                continue  # a 0-d double: torch casts it to the fp32 result dtype, as the fp32 load does
            if value.is_tensor and value.dtype not in FLOAT_DTYPES | EXACT_INT_DTYPES | {"bool"}:
                return f"input {value.name} has dtype {value.dtype} (floating/bool/int8/uint8 only)"
        for node in group.nodes:
            if node.name in f64:
                if node.name in group.extra_outputs or node.name == group.output:
                    return f"{node.op}: a float64 scalar cannot be an output of the chain"
                reason = scalar64_op_reason(node.op, node.kwargs)
                if reason:
                    return reason
                continue
            reason = unsupported_reason(node.op, node.kwargs)
            if reason:
                return reason
            if node.dtype not in FLOAT_DTYPES | {"bool"}:
                return f"{node.op} produces {node.dtype} (floating/bool only)"
        if not any(v.is_tensor for v in group.inputs):
            return "no tensor input"
        for name in group.extra_outputs:  # written at the output's flat index: same shape only
            if group.node(name).shape != group.out.shape:
                return f"extra output {name} has shape {group.node(name).shape}, not the output's"
        return None

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        return {
            "PERSISTENT": [False, True],  # parallel mapping: one block per program, or a grid-stride loop
            "PROGRAMS_PER_SM": [2, 4, 8],
            "BLOCK": [256, 512, 1024, 2048, 4096],  # tiling
            "num_warps": [2, 4, 8],
            "EVICT_STREAMING": ["", "evict_first"],  # memory: inputs read exactly once
            "EVICT_BROADCAST": ["", "evict_last"],  # memory: broadcast inputs re-read by every program
        }

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        numel = 1
        for size in group.out.shape:
            numel *= size
        if device == "cpu":
            # The interpreter pays per program: few, large blocks.
            block = min(4096, max(128, 1 << max(0, (numel - 1).bit_length())))
            return {"PERSISTENT": False, "PROGRAMS_PER_SM": 4, "BLOCK": block, "num_warps": 4,
                    "EVICT_STREAMING": "", "EVICT_BROADCAST": ""}
        small_dtype = group.out.dtype in ("float16", "bfloat16")
        block = 2048 if small_dtype else 1024  # 16 bytes per thread per access with 4 warps
        while block > 256 and numel < 132 * 4 * block:  # keep at least ~4 waves of programs
            block //= 2
        return {"PERSISTENT": False, "PROGRAMS_PER_SM": 4, "BLOCK": block, "num_warps": 4 if block <= 2048 else 8,
                "EVICT_STREAMING": "evict_first" if numel >= 1 << 24 else "", "EVICT_BROADCAST": ""}

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        cfg = {**self.default_config(group, "cuda"), **config}
        kernel = f"_{launcher}_kernel"
        names = {v.name: _ident(v.name) for v in group.inputs} | {n.name: _ident(n.name) for n in group.nodes}
        tensors = [v for v in group.inputs if v.is_tensor]
        scalars = [v for v in group.inputs if not v.is_tensor]
        formula = describe_chain(group)
        source = _kernel_source(group, cfg, kernel, names, tensors, scalars, formula)
        source += "\n\n\n" + _kernel_source(group, cfg, f"{kernel}_flat", names, tensors, scalars, formula, strided=False)
        source += "\n\n" + _launcher_source(group, cfg, kernel, launcher, names, tensors, scalars, formula)
        ops = ", ".join(dict.fromkeys(n.op for n in group.nodes))
        mapping = "grid-stride persistent programs" if cfg["PERSISTENT"] else "one BLOCK per program"
        return KernelPlan(
            launcher=launcher,
            source=LAYOUT_HELPER.strip() + "\n\n\n" + source,
            structure=f"fused elementwise chain ({ops}) in one flat-grid kernel, {mapping}",
            principle_ids=list(self.principle_ids) + (["parallel-mapping/persistent-kernels"] if cfg["PERSISTENT"] else [])
            + (["memory/eviction-hints"] if cfg["EVICT_STREAMING"] or cfg["EVICT_BROADCAST"] else []),
            config={k: cfg[k] for k in self.tuning_space(group)},
        )


def _evict(policy: str) -> str:
    return f', eviction_policy="{policy}"' if policy else ""


def _kernel_source(
    group: GroupSpec, cfg: dict[str, Any], kernel: str, names: dict[str, str],
    tensors: list[Any], scalars: list[Any], formula: str, strided: bool = True,
) -> str:
    """The kernel; ``strided=False`` is the variant for inputs that are all FLAT or SCALAR: no
    size/stride parameters, since each launch argument costs host time on every call (a
    six-input chain has 48 of them) and for a small kernel that time is most of the call."""
    t_names = [names[v.name] for v in tensors]
    outs = _outputs(group)
    params = [f"{n}_ptr" for n in t_names] + [f"{o}_ptr" for o, _ in outs] + ["n_elements"]
    params += [names[s.name] for s in scalars]
    if strided:
        params += [f"size{d}" for d in range(MAX_RANK)]
        params += [f"{n}_stride{d}" for n in t_names for d in range(MAX_RANK)]
    params += [f"{n.upper()}_MODE: tl.constexpr" for n in t_names]
    params += ["STRIDED: tl.constexpr"] if strided else []
    params += ["IDX64: tl.constexpr", "BLOCK: tl.constexpr"]
    lines = ["@triton.jit", f"def {kernel}(", *_wrap(params), "):",
             f'    """out = {formula}; fp32 math, one read per input and one write."""',
             "    pid = tl.program_id(0)",
             "    if IDX64:",
             "        pid = pid.to(tl.int64)  # flat offsets past 2**31 elements"]
    body: list[str] = []
    body.append("offs = blk * BLOCK + tl.arange(0, BLOCK)" if cfg["PERSISTENT"] else "offs = pid * BLOCK + tl.arange(0, BLOCK)")
    body.append("mask = offs < n_elements")
    if strided:
        body.append("if STRIDED:  # multi-index over the collapsed output shape (size-1 dims fold away)")
        body.append("    rem = offs")
        for d in range(MAX_RANK - 1, 0, -1):
            body.append(f"    i{d} = rem % size{d}")
            body.append(f"    rem = rem // size{d}")
        body.append("    i0 = rem")
    f64 = fp64_values(group)
    for v, n in zip(tensors, t_names):
        if v.name in f64:  # a 0-d input of the fp64 scalar chain: one element, kept in fp64
            body.append(f"{n} = tl.load({n}_ptr).to(tl.float64)")
            continue
        other = "False" if v.dtype == "bool" else "0" if v.dtype in EXACT_INT_DTYPES else "0.0"
        body += [
            f"if {n.upper()}_MODE == 0:",
            f"    {n} = tl.load({n}_ptr + offs, mask=mask, other={other}{_evict(cfg['EVICT_STREAMING'])}).to(tl.float32)",
            "else:" if not strided else f"elif {n.upper()}_MODE == 1:",
            f"    {n} = tl.load({n}_ptr).to(tl.float32)",
        ]
        if strided:
            index = " + ".join(f"i{d} * {n}_stride{d}" for d in range(MAX_RANK))
            body += ["else:",
                     f"    {n} = tl.load({n}_ptr + ({index}), mask=mask, other={other}{_evict(cfg['EVICT_BROADCAST'])}).to(tl.float32)"]
    for node in group.nodes:
        # an fp64 scalar op's own cast (step.double()) is the fp64 load/arithmetic itself
        kwargs = {k: v for k, v in node.kwargs.items() if k != "dtype"} if node.name in f64 else node.kwargs
        expr = round_to_dtype(tl_expr(node.op, _operands(node, names, f64), kwargs), node.dtype)
        body.append(f"{names[node.name]} = {expr}")
    for out, node in outs:  # every value that leaves the group, from the one pass over the inputs
        result = names[node.name]
        if node.dtype == "bool":
            body.append(f"tl.store({out}_ptr + offs, {result} != 0.0, mask=mask)")
        else:
            body.append(f"tl.store({out}_ptr + offs, {result}.to({out}_ptr.dtype.element_ty), mask=mask)")
    if cfg["PERSISTENT"]:
        lines.append("    # persistent: a fixed grid of programs strides over all blocks")
        lines.append("    for blk in range(pid, tl.cdiv(n_elements, BLOCK), tl.num_programs(0)):")
        lines += [f"        {line}" for line in body]
    else:
        lines += [f"    {line}" for line in body]
    return "\n".join(lines)


def _operands(node: Any, names: dict[str, str], f64: set[str]) -> list[Any]:
    """A node's operands as kernel expressions. In an fp64 scalar op, numbers become fp64
    constants (a bare literal is an fp32 constant: 0.999 ** 10000 would be off by 1e-4 relative);
    an fp32 op reads an fp64 value rounded to fp32, as torch casts a 0-d double to the result dtype."""
    out: list[Any] = []
    for o in node.operands:
        if isinstance(o, str) and o in names:
            out.append(names[o] if node.name in f64 or o not in f64 else f"{names[o]}.to(tl.float32)")
        elif node.name in f64 and isinstance(o, (int, float)) and not isinstance(o, bool):
            out.append(f"tl.full([], {literal(o)}, tl.float64)")
        else:
            out.append(o)
    return out


def _wrap(items: list[str], indent: str = "    ", width: int = 100) -> list[str]:
    lines, cur = [], indent
    for item in items:
        piece = item + ", "
        if len(cur) + len(piece) > width and cur.strip():
            lines.append(cur.rstrip())
            cur = indent
        cur += piece
    if cur.strip():
        lines.append(cur.rstrip())
    return lines


def _launcher_source(
    group: GroupSpec, cfg: dict[str, Any], kernel: str, launcher: str, names: dict[str, str],
    tensors: list[Any], scalars: list[Any], formula: str,
) -> str:
    args = [names[v.name] for v in group.inputs]
    t_names = [names[v.name] for v in tensors]
    outs = _outputs(group)
    block = int(cfg["BLOCK"])
    returned = ", ".join(o for o, _ in outs)
    lines = [
        f"def {launcher}({', '.join(args)}):",
        f'    """{formula} (broadcast), computed by {kernel}."""',
        f"    shape = _egg_broadcast_shapes({', '.join(f'{n}.shape' for n in t_names)}{',' if len(t_names) == 1 else ''})",
        *(f"    {o} = torch.empty(shape, dtype=torch.{node.dtype}, device={t_names[0]}.device)" for o, node in outs),
        "    n = out.numel()",
        "    if n == 0:",
        f"        return {returned}",
        f"    sizes, strides, modes, ({', '.join(t_names)},) = _egg_broadcast_layout(shape, [{', '.join(t_names)}])",
    ]
    if cfg["PERSISTENT"]:
        per_sm = int(cfg["PROGRAMS_PER_SM"])
        lines += [
            f"    blocks = _egg_cdiv(n, {block})",
            "    sms = torch.cuda.get_device_properties(out.device).multi_processor_count if out.is_cuda else 4",
            f"    grid = (min(blocks, sms * {per_sm}),)",
        ]
    else:
        lines.append(f"    grid = (_egg_cdiv(n, {block}),)")
    common = [*(t_names), *(o for o, _ in outs), "n", *(f"float({names[s.name]})" for s in scalars)]
    modes = [f"{n.upper()}_MODE=modes[{i}]" for i, n in enumerate(t_names)]
    tail = [f"IDX64=n + {block} >= 2**31", f"BLOCK={block}", f"num_warps={int(cfg['num_warps'])}"]
    strided = [*common, "*sizes", *(f"*strides[{i}]" for i in range(len(t_names))), *modes, "STRIDED=True", *tail]
    lines += ["    if 2 in modes:  # some input needs the multi-index", f"        {kernel}[grid]("]
    lines += _wrap(strided, indent="            ")
    lines += ["        )", "    else:  # every input flat or one element: the kernel without strides",
              f"        {kernel}_flat[grid]("]
    lines += _wrap([*common, *modes, *tail], indent="            ")
    lines.append("        )")
    lines.append(f"    return {returned}")
    return "\n".join(lines)


def _outputs(group: GroupSpec) -> list[tuple[str, Any]]:
    """(launcher/kernel name, node) of every value the kernel writes: ``out``, ``out_x1``, ..."""
    return [("out", group.out)] + [(f"out_x{i}", group.node(n)) for i, n in enumerate(group.extra_outputs, 1)]


TEMPLATES = [ElementwiseTemplate()]
