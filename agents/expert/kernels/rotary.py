"""Template: rotary position embedding (RoPE) of one or several tensors in one Triton launch.

Computes the node that :mod:`agents.expert.recognise_rotary` folds out of the reference's
``x * cos + rotate_half(x) * sin`` with ``cos = cos_table[positions].unsqueeze(...)`` (and sin
likewise), for every tensor (q, k, ...) rotated by the same positions and tables::

    out_i = cast(round(round(a * cos) + round(cat(-r[h:], r[:h]) * sin)))    h = head_dim // 2

``a`` and ``r`` are the tensor after the reference's casts (``x.float()``), each ``round`` is
torch's rounding of that op's result to its dtype (a no-op for fp32 math), ``cast`` the
reference's final ``.to(x.dtype)``.

Structure: the grid is (tokens, head blocks of tensor 0 then of tensor 1 ...). A program owns
BLOCK_H heads of one token of one tensor: it reads the token's position once, loads the two halves
of the cos and sin rows once (full rows: nothing assumes ``cos[i] == cos[i + h]``) and reuses them
for all its heads; it loads each half of each head once and writes both output halves, so q and k
are read once and written once, and the gather, the slices and the ``cat`` never exist in memory.
Tensors are addressed by strides ((token a, token b, head, dim) of a view the launcher derives),
head_dim need not be a power of two (masked), heads per tensor may differ (grouped-query
attention). Node contract (``NodeSpec``): ``op == "rotary_embedding"``, operands
``[positions, cos_table, sin_table, x0, x1, ...]``, ``kwargs["plan"]["tensors"]`` one
:class:`RotaryTensor` per x.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from agents.expert.kernels.base import GroupSpec, KernelPlan
from agents.expert.kernels.elementwise import _wrap
from agents.expert.kernels.expr import round_to_dtype

ROTARY_KEY = "rotary_embedding"  # the folded node's op (recognise_rotary.py)
FLOAT = ("float32", "float16", "bfloat16")
INDEX = ("int64", "int32")
_RESERVED = {"positions", "cos_table", "sin_table", "token", "block", "half", "d", "d_mask", "h", "mask", "pos",
             "cos_row", "sin_row", "x_row", "out_row", "tok_a", "tok_b", "head_dim", "grid", "tl", "triton",
             "torch", "math", "operator"}


class RotaryTensor(BaseModel):
    """How the reference rotated one tensor (dtype names without ``torch.``)."""

    x_casts: list[str]  # casts applied to x, in order, before ``x * cos``
    r_casts: list[str]  # casts applied to x, in order, before ``rotate_half``
    cos_casts: list[str]  # casts applied to the gathered cos rows
    sin_casts: list[str]
    unsqueeze: list[int]  # positions.unsqueeze(d) for d in order: the index shape cos broadcasts with
    mul: str  # dtype of ``x * cos``
    rmul: str  # dtype of ``rotate_half(x) * sin``
    add: str  # dtype of the sum
    out_casts: list[str]  # casts of the sum, in order (``.to(x.dtype)``)

    @property
    def out_dtype(self) -> str:
        return self.out_casts[-1] if self.out_casts else self.add


def rotary_tensors(group: GroupSpec) -> list[RotaryTensor] | None:
    """The per-tensor plans of a rotary group this template computes exactly, or None."""
    if group.kind != "rotary" or len(group.nodes) != 1 or group.extra_outputs:
        return None
    node = group.nodes[0]
    if node.op != ROTARY_KEY or group.output != node.name or not isinstance(node.kwargs.get("plan"), dict):
        return None
    try:
        tensors = [RotaryTensor.model_validate(t) for t in node.kwargs["plan"].get("tensors", [])]
    except ValidationError:
        return None
    inputs = {v.name: v for v in group.inputs}
    operands = [inputs.get(o) if isinstance(o, str) else None for o in node.operands]
    if not tensors or len(operands) != 3 + len(tensors) or any(v is None or not v.is_tensor for v in operands):
        return None
    positions, cos, sin, *xs = operands
    if positions.dtype not in INDEX or any(v.dtype not in FLOAT for v in (cos, sin, *xs)):  # type: ignore[union-attr]
        return None
    head_dim = cos.shape[-1] if len(cos.shape) == 2 else -1  # type: ignore[union-attr]
    if head_dim < 2 or head_dim % 2 or sin.shape[-1:] != [head_dim] or len(sin.shape) != 2:  # type: ignore[union-attr]
        return None
    for x, t in zip(xs, tensors):
        dtypes = [*t.x_casts, *t.r_casts, *t.cos_casts, *t.sin_casts, t.mul, t.rmul, t.add, *t.out_casts]
        if x.shape[-1:] != [head_dim] or any(dt not in FLOAT for dt in dtypes):  # type: ignore[union-attr]
            return None
    return tensors


def _idents(group: GroupSpec) -> list[str]:
    """Kernel/launcher names of the rotated tensors: their own names when no generated name
    collides (``q_ptr``, ``q_out``, ``Q_BLOCK_H``...), else x0, x1..."""
    xs = group.nodes[0].operands[3:]
    names = ["".join(c if c.isalnum() or c == "_" else "_" for c in str(x)) for x in xs]
    fixed = _RESERVED | {"cos", "sin", "cos_rows", "sin_rows", "cos_stride_p", "cos_stride_d", "sin_stride_p",
                         "sin_stride_d", "IDX64", "BLOCK_HALF"}
    generated = [g for n in names for g in (n, *(f"{n}_{p}" for p in _PER_TENSOR + _LOCALS), f"{n.upper()}_BLOCK_H")]
    safe = all(n.isidentifier() and not n.startswith("_") for n in names)
    if safe and len(set(generated)) == len(generated) and not set(generated) & fixed:
        return names
    return [f"x{i}" for i in range(len(xs))]


def _casts(expr: str, dtypes: list[str]) -> str:
    for dt in dtypes:
        expr = round_to_dtype(expr, dt)
    return expr


class RotaryTemplate:
    """Rotary embedding of q, k (and more) sharing positions and cos/sin tables (kind ``rotary``)."""

    name = "rotary"
    principle_ids: ClassVar[list[str]] = [
        "algorithm-structure/fuse-elementwise-chain",
        "algorithm-structure/avoid-layout-copies",
        "parallel-mapping/fewer-launches-when-latency-bound",
        "memory/reuse-in-registers",
        "tiling/power-of-two-blocks-with-masks",
        "memory/int64-offsets",
    ]

    def match(self, group: GroupSpec) -> bool:
        return rotary_tensors(group) is not None

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        return {"BLOCK_H": [1, 2, 4, 8, 16, 32], "num_warps": [1, 2, 4, 8],
                "EVICT_STREAMING": ["", "evict_first"],  # memory: q/k are read exactly once
                "EVICT_TABLES": ["", "evict_last"]}  # memory: a cos/sin row is re-read by every head block

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        cos = next(v for v in group.inputs if v.name == group.nodes[0].operands[1])
        row = 1 << max(0, (int(cos.shape[-1]) - 1).bit_length())
        if device == "cpu":  # the interpreter pays per program: few, large ones
            return {"BLOCK_H": 32, "num_warps": 4, "EVICT_STREAMING": "", "EVICT_TABLES": ""}
        block_h = max(1, min(16, 1024 // row))  # ~1K elements per program: 4-8 per thread
        return {"BLOCK_H": block_h, "num_warps": 4 if block_h * row >= 1024 else 2, "EVICT_STREAMING": "",
                "EVICT_TABLES": ""}

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        tensors = rotary_tensors(group)
        if tensors is None:
            raise ValueError("not a rotary group this template computes")
        cfg = {**self.default_config(group, "cuda"), **config}
        names = _idents(group)
        kernel = f"_{launcher}_kernel"
        formula = ", ".join(f"{n} * cos + rotate_half({n}) * sin" for n in names)
        source = "\n\n\n".join([LAYOUT_HELPER.strip(), _kernel_source(kernel, names, tensors, formula, cfg),
                                _launcher_source(launcher, kernel, names, tensors, cfg, formula)])
        return KernelPlan(
            launcher=launcher,
            source=source,
            structure=(f"rotary embedding of {', '.join(names)} in one launch: grid (tokens, head blocks of "
                       f"{' then '.join(names)}), each program gathers its token's cos/sin row once and rotates "
                       "BLOCK_H heads in fp32, one rounding to the output dtype"),
            principle_ids=list(self.principle_ids)
            + (["memory/eviction-hints"] if cfg["EVICT_STREAMING"] or cfg["EVICT_TABLES"] else []),
            config={k: cfg[k] for k in self.tuning_space(group)},
        )


LAYOUT_HELPER = '''
def _rotary_layout(x, out, positions, unsqueeze):
    """(x, positions, layout, extent): a (token a, token b, head) view of x [..., head_dim] for the
    rotary kernel, by strides (no copy in the usual layouts).

    The positions are unsqueezed as the reference unsqueezed its gathered cos rows and broadcast
    to x's leading dims. The head axis is the last leading dim the position does not depend on
    (stride 0); the other dims of size > 1 are token dims. More than two token dims: x and the
    positions are flattened (a copy if need be). layout = [tokens, tokens_b, heads,
    pos strides (a, b), x strides (a, b, head, dim), out strides (a, b, head)].
    """
    pos = positions
    for dim in unsqueeze:
        pos = pos.unsqueeze(dim)
    pos = torch.broadcast_to(pos, x.shape[:-1])
    dims = [i for i in range(x.dim() - 1) if x.shape[i] != 1]
    free = [i for i in dims if pos.stride(i) == 0]
    head = free[-1] if free else None
    tokens = [i for i in dims if i != head]
    if len(tokens) > 2:
        x, pos, out = x.reshape(-1, x.shape[-1]), pos.reshape(-1), out.view(-1, out.shape[-1])
        tokens, head = [0], None
    tok_a, tok_b = ([None, None] + tokens)[-2:]

    def size(i):
        return 1 if i is None else x.shape[i]

    def stride(t, i):
        return 0 if i is None else t.stride(i)

    layout = [size(tok_a) * size(tok_b), size(tok_b), size(head), stride(pos, tok_a), stride(pos, tok_b),
              stride(x, tok_a), stride(x, tok_b), stride(x, head), x.stride(-1),
              stride(out, tok_a), stride(out, tok_b), stride(out, head)]
    extent = 1 + sum((n - 1) * abs(s) for n, s in zip(x.shape, x.stride()))
    return x, pos, layout, max(extent, out.numel())
'''

_PER_TENSOR = ["ptr", "out_ptr", "pos_ptr", "tokens", "tokens_b", "heads", "pos_stride_a", "pos_stride_b",
               "stride_a", "stride_b", "stride_h", "stride_d", "out_stride_a", "out_stride_b", "out_stride_h",
               "blocks_end"]
_LOCALS = ["out", "pos", "layout", "extent", "block_h"]  # launcher variables of each tensor


def _evict(policy: str) -> str:
    return f', eviction_policy="{policy}"' if policy else ""


def _branch(n: str, t: RotaryTensor, start: str, cfg: dict[str, Any]) -> list[str]:
    """Kernel lines rotating BLOCK_H heads of tensor ``n`` for one token."""
    load = "tl.load({row} + {off}, mask=d_mask, other=0.0" + _evict(cfg["EVICT_TABLES"]) + ").to(tl.float32)"
    angles = []
    for which, casts in (("cos", t.cos_casts), ("sin", t.sin_casts)):
        for half, off in (("1", "d"), ("2", "(d + half)")):
            angles.append(f"{which}{half} = {_casts(load.format(row=f'{which}_row', off=f'{off} * {which}_stride_d'), casts)}")
    x_load = f"tl.load(x_row + {{off}} * {n}_stride_d, mask=mask, other=0.0{_evict(cfg['EVICT_STREAMING'])}).to(tl.float32)"
    lines = [
        f"tok_a = token // {n}_tokens_b",
        f"tok_b = token % {n}_tokens_b",
        f"pos = tl.load({n}_pos_ptr + tok_a * {n}_pos_stride_a + tok_b * {n}_pos_stride_b).to(tl.int64)",
        "cos_row = cos_table_ptr + tl.where(pos < 0, pos + cos_rows, pos) * cos_stride_p  # torch wraps negatives",
        "sin_row = sin_table_ptr + tl.where(pos < 0, pos + sin_rows, pos) * sin_stride_p",
        *angles,
        f"h = {'block' if start == '0' else f'(block - {start})'} * {n.upper()}_BLOCK_H + tl.arange(0, {n.upper()}_BLOCK_H)",
        f"mask = (h < {n}_heads)[:, None] & d_mask[None, :]",
        f"x_row = {n}_ptr + tok_a * {n}_stride_a + tok_b * {n}_stride_b + h[:, None] * {n}_stride_h",
        f"x1 = {x_load.format(off='d[None, :]')}  # first half of each head",
        f"x2 = {x_load.format(off='(d[None, :] + half)')}  # second half",
    ]
    a1, a2 = _casts("x1", t.x_casts), _casts("x2", t.x_casts)
    r1, r2 = _casts("x1", t.r_casts), _casts("x2", t.r_casts)
    lines.append(f"a1, a2 = {a1}, {a2}" + ("  # x cast as the reference casts it" if a1 != "x1" else ""))
    lines.append("r1, r2 = a1, a2  # rotate_half reads the same x" if (r1, r2) == (a1, a2) else
                 f"r1, r2 = {r1}, {r2}  # x cast as rotate_half reads it")
    lines.append("# rotate_half(r) = cat(-r2, r1): out = (a1 * cos1 - r2 * sin1, a2 * cos2 + r1 * sin2)")
    for i, rot in (("1", "(-r2)"), ("2", "r1")):
        expr = (f"{round_to_dtype(f'a{i} * cos{i}[None, :]', t.mul)} + "
                f"{round_to_dtype(f'{rot} * sin{i}[None, :]', t.rmul)}")
        lines.append(f"o{i} = {_casts(round_to_dtype(expr, t.add), t.out_casts)}")
    lines += [
        f"out_row = {n}_out_ptr + tok_a * {n}_out_stride_a + tok_b * {n}_out_stride_b + h[:, None] * {n}_out_stride_h",
        f"tl.store(out_row + d[None, :], o1.to({n}_out_ptr.dtype.element_ty), mask=mask)",
        f"tl.store(out_row + (d[None, :] + half), o2.to({n}_out_ptr.dtype.element_ty), mask=mask)",
    ]
    return lines


def _kernel_source(kernel: str, names: list[str], tensors: list[RotaryTensor], formula: str,
                   cfg: dict[str, Any]) -> str:
    params = ["cos_table_ptr", "sin_table_ptr", "cos_rows", "sin_rows", "cos_stride_p", "cos_stride_d",
              "sin_stride_p", "sin_stride_d", "half"]
    params += [f"{n}_{p}" for n in names for p in _PER_TENSOR]
    params += ["IDX64: tl.constexpr", *(f"{n.upper()}_BLOCK_H: tl.constexpr" for n in names), "BLOCK_HALF: tl.constexpr"]
    lines = ["@triton.jit", f"def {kernel}(", *_wrap(params), "):",
             f'    """{formula}, with cos/sin = table[positions].',
             "",
             f"    Program (token, block): block indexes the head blocks of {', then of '.join(names)}; the",
             "    program rotates BLOCK_H heads of one token: one position read, one cos/sin row, fp32 math",
             '    rounded as the reference rounds each op, one read and one write of each element."""',
             "    token = tl.program_id(0)",
             "    block = tl.program_id(1)",
             "    if IDX64:  # offsets past 2**31 elements",
             "        token = token.to(tl.int64)",
             "        block = block.to(tl.int64)",
             "    d = tl.arange(0, BLOCK_HALF)",
             "    d_mask = d < half  # head_dim need not be a power of two"]
    start = "0"
    for i, (n, t) in enumerate(zip(names, tensors)):
        last = i == len(names) - 1
        keyword = "else:" if last and i else ("if" if i == 0 else "elif") + f" block < {n}_blocks_end:"
        lines.append(f"    {keyword}  # {n}")
        lines.append(f"        if token < {n}_tokens:")
        lines += [f"            {line}" for line in _branch(n, t, start, cfg)]
        start = f"{n}_blocks_end"
    return "\n".join(lines)



def _launcher_source(launcher: str, kernel: str, names: list[str], tensors: list[RotaryTensor],
                     cfg: dict[str, Any], formula: str) -> str:
    block_h = int(cfg["BLOCK_H"])
    lines = [f"def {launcher}(positions, cos_table, sin_table, {', '.join(names)}):",
             f'    """({formula}) with cos/sin = table[positions]: one launch of {kernel}."""',
             "    head_dim = cos_table.shape[-1]",
             "    if head_dim % 2:",
             '        raise NotImplementedError("rotary kernel: odd head_dim (rotate_half halves are unequal)")']
    previous = "0"
    for n, t in zip(names, tensors):
        lines += [
            f"    {n}_out = torch.empty({n}.shape, dtype=torch.{t.out_dtype}, device={n}.device)",
            f"    {n}, {n}_pos, {n}_layout, {n}_extent = _rotary_layout({n}, {n}_out, positions, {t.unsqueeze!r})",
            f"    {n}_block_h = min({block_h}, _egg_next_pow2(max(1, {n}_layout[2])))",
            f"    {n}_blocks_end = {'' if previous == '0' else previous + ' + '}_egg_cdiv({n}_layout[2], {n}_block_h)",
        ]
        previous = f"{n}_blocks_end"
    outs = ", ".join(f"{n}_out" for n in names) + ("," if len(names) == 1 else "")
    def largest(items: list[str]) -> str:
        return items[0] if len(items) == 1 else f"max({', '.join(items)})"

    lines += [f"    grid = ({largest([f'{n}_layout[0]' for n in names])}, {previous})",
              "    if grid[0] == 0 or grid[1] == 0:",
              f"        return {outs}",
              f"    {kernel}[grid]("]
    call = ["cos_table", "sin_table", "cos_table.shape[0]", "sin_table.shape[0]", "cos_table.stride(0)",
            "cos_table.stride(1)", "sin_table.stride(0)", "sin_table.stride(1)", "head_dim // 2"]
    call += [a for n in names for a in (n, f"{n}_out", f"{n}_pos", f"*{n}_layout", f"{n}_blocks_end")]
    call += [f"IDX64={largest([f'{n}_extent' for n in names])} >= 2**31",
             *(f"{n.upper()}_BLOCK_H={n}_block_h" for n in names),
             "BLOCK_HALF=_egg_next_pow2(head_dim // 2)", f"num_warps={int(cfg['num_warps'])}"]
    lines += _wrap(call, indent="        ")
    lines += ["    )", f"    return {outs}"]
    return "\n".join(lines)


TEMPLATES = [RotaryTemplate()]
