"""Template: out-of-place item assignment ``out = base.clone(); out[index] = value`` (op ``setitem``).

What a KV-cache append (``cache[rows, positions] = new``) or a slice write (``x[:, a:b] = y``)
computes. The codegen hands the template one ``setitem`` node (see
:func:`agents.expert.lowering.setitem_step`): operands ``[base, value, *index values]`` and the
index layout in ``kwargs["index"]``.

The launcher runs two kernels on the caller's stream:

1. a copy of ``base`` into a fresh contiguous tensor (strided reads, so any base layout works);
2. a scatter over the elements of ``base[index]``: each program decomposes its flat indices
   into the indexed view's coordinates, maps them to the destination (slice starts and steps,
   integer index tensors loaded with their broadcast strides and wrapped like torch's negative
   indices) and stores ``value`` (broadcast to the view, cast to the base dtype).

Fusing the two into one pass would need the inverse of the index map, which a general index does
not have; the copy dominates the bytes anyway (the scatter touches only the written elements).
Supported indices: slices with static or run-time bounds and positive steps, ``...``, integer
index tensors (int64/int32; adjacent or not, torch's placement rules), and plain ints when no
index tensor is present. Declined (the node stays a torch statement): bool masks, ``None``,
lists, ints mixed with index tensors, and a value with more dims than the indexed view.
Duplicate destinations are written by whichever program stores last, as on a GPU in torch.
"""

from __future__ import annotations

from typing import Any, ClassVar

from agents.expert.kernels.base import GroupSpec, KernelPlan, NodeSpec, ValueSpec

_DATA_DTYPES = {"float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8"}
_INDEX_DTYPES = {"int64", "int32"}


def _bound(value: Any, names: dict[int, str]) -> str:
    """A slice bound as launcher Python: a literal, or the launcher parameter holding it."""
    if isinstance(value, list):
        return names[value[1]]
    return repr(value)


class _Plan:
    """The static geometry of one ``setitem`` node (ranks, which dim each index item reads)."""

    def __init__(self, group: GroupSpec) -> None:
        node = group.nodes[0]
        self.node: NodeSpec = node
        self.inputs = {v.name: v for v in group.inputs}
        self.base: ValueSpec = self.inputs[str(node.operands[0])]
        value = node.operands[1]
        self.value: ValueSpec | None = self.inputs.get(value) if isinstance(value, str) else None
        self.literal = None if self.value is not None else value
        rank = len(self.base.shape)
        items: list[list[Any]] = list(node.kwargs.get("index", []))
        if sum(1 for it in items if it[0] == "ellipsis") > 1:
            raise ValueError("two ellipses")
        if any(it[0] == "ellipsis" for it in items):
            at = next(i for i, it in enumerate(items) if it[0] == "ellipsis")
            fill = rank - (len(items) - 1)
            items = items[:at] + [["slice", None, None, None]] * fill + items[at + 1:]
        if len(items) > rank:
            raise ValueError("more index items than dims")
        items += [["slice", None, None, None]] * (rank - len(items))
        self.items = items
        for it in items:
            if it[0] not in ("slice", "tensor", "int"):
                raise ValueError(f"index item {it[0]}")
        self.tensor_dims = [d for d, it in enumerate(items) if it[0] == "tensor"]
        if self.tensor_dims and any(it[0] == "int" for it in items):
            raise ValueError("ints mixed with index tensors")
        self.index_tensors = [self.inputs[str(node.operands[it[1]])] for it in items if it[0] == "tensor"]
        self.adv_rank = max((len(t.shape) for t in self.index_tensors), default=0)
        # the indexed view's dims: ("slice", base dim) or ("adv", dim of the broadcast index shape)
        slices = [d for d, it in enumerate(items) if it[0] == "slice"]
        adv = [("adv", j) for j in range(self.adv_rank)]
        dims = self.tensor_dims
        if dims and dims == list(range(dims[0], dims[-1] + 1)):
            self.view = ([("slice", d) for d in slices if d < dims[0]] + adv
                         + [("slice", d) for d in slices if d > dims[-1]])
        else:
            self.view = adv + [("slice", d) for d in slices]

    def why_not(self) -> str | None:
        if self.base.dtype not in _DATA_DTYPES:
            return f"base dtype {self.base.dtype}"
        if any(t.dtype not in _INDEX_DTYPES for t in self.index_tensors):
            return "index tensors must be int64/int32 (bool masks are not handled)"
        if self.value is not None and self.value.is_tensor:
            if self.value.dtype not in _DATA_DTYPES:
                return f"value dtype {self.value.dtype}"
            if len(self.value.shape) > len(self.view) and any(s != 1 for s in self.value.shape[:-len(self.view) or None]):
                return "value has more dims than the indexed view"
        elif self.value is not None or not isinstance(self.literal, (int, float)) or isinstance(self.literal, bool):
            return "the value is neither a tensor nor a number"
        for it in self.items:
            if it[0] == "slice" and isinstance(it[3], int) and it[3] <= 0:
                return "slice step must be positive"
        return None


class SetitemTemplate:
    """``base[index] = value`` out of place: a strided copy kernel, then a scatter kernel."""

    name = "setitem"
    principle_ids: ClassVar[list[str]] = [
        "parallel-mapping/flat-index-for-elementwise",
        "tiling/power-of-two-blocks-with-masks",
        "memory/int64-offsets",
    ]

    def match(self, group: GroupSpec) -> bool:
        if group.kind != "scatter" or len(group.nodes) != 1 or group.nodes[0].op != "setitem":
            return False
        try:
            return _Plan(group).why_not() is None
        except (ValueError, KeyError, IndexError, TypeError):
            return False

    def tuning_space(self, group: GroupSpec) -> dict[str, list[Any]]:
        return {"BLOCK": [256, 512, 1024, 2048, 4096], "num_warps": [2, 4, 8]}

    def default_config(self, group: GroupSpec, device: str) -> dict[str, Any]:
        numel = 1
        for size in group.out.shape:
            numel *= size
        if device == "cpu":
            return {"BLOCK": min(4096, max(128, 1 << max(0, (numel - 1).bit_length()))), "num_warps": 4}
        return {"BLOCK": 1024, "num_warps": 4}

    def render(self, group: GroupSpec, config: dict[str, Any], launcher: str) -> KernelPlan:
        cfg = {**self.default_config(group, "cuda"), **config}
        plan = _Plan(group)
        reason = plan.why_not()
        if reason:
            raise ValueError(f"setitem template: {reason}")
        source = "\n\n\n".join([_copy_kernel(len(plan.base.shape)), _scatter_kernel(plan),
                                _launcher(launcher, group, plan, cfg)])
        return KernelPlan(
            launcher=launcher, source=source,
            structure="item assignment out of place: strided copy kernel + index scatter kernel",
            principle_ids=list(self.principle_ids), config={k: cfg[k] for k in self.tuning_space(group)},
        )


def _copy_name(rank: int) -> str:
    return f"_setitem_copy_{rank}d"  # the same text for every launcher of this rank: kept once


def _scatter_name(plan: _Plan) -> str:
    dims = "".join("a" if kind == "adv" else "s" for kind, _ in plan.view)
    return f"_setitem_scatter_{dims or 'scalar'}_{len(plan.index_tensors)}i_{'t' if plan.value is not None else 'c'}"


def _copy_kernel(rank: int) -> str:
    params = ", ".join(["src_ptr", "out_ptr", "n"] + [f"size{d}" for d in range(rank)]
                       + [f"stride{d}" for d in range(rank)] + ["CONTIGUOUS: tl.constexpr", "BLOCK: tl.constexpr"])
    lines = ["@triton.jit", f"def {_copy_name(rank)}({params}):",
             '    """out (contiguous) = src (any strides), one BLOCK of the flat index per program."""',
             "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
             "    mask = offs < n",
             "    if CONTIGUOUS:",
             "        src = offs",
             "    else:",
             "        rem = offs",
             "        src = offs * 0"]
    for d in range(rank - 1, -1, -1):
        lines += [f"        src += (rem % size{d}) * stride{d}", f"        rem = rem // size{d}"]
    lines.append("    tl.store(out_ptr + offs, tl.load(src_ptr + src, mask=mask), mask=mask)")
    return "\n".join(lines)


def _scatter_kernel(plan: _Plan) -> str:
    r = len(plan.view)
    k = len(plan.index_tensors)
    params = ["out_ptr", "value_ptr" if plan.value is not None else "value", "n", "base_off"]
    params += [f"vsize{j}" for j in range(r)] + [f"vstride{j}" for j in range(r)]
    params += [f"idx{i}_ptr" for i in range(k)] + [f"idx{i}_size" for i in range(k)]
    params += [f"idx{i}_ostride" for i in range(k)]
    params += [f"idx{i}_stride{j}" for i in range(k) for j in range(plan.adv_rank)]
    params += [f"step_stride{j}" for j in range(r)] + ["BLOCK: tl.constexpr"]
    lines = ["@triton.jit", f"def {_scatter_name(plan)}({', '.join(params)}):",
             '    """out[index] = value over the n elements of the indexed view (flat index per program)."""',
             "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
             "    mask = offs < n", "    rem = offs"]
    for j in range(r - 1, -1, -1):
        lines += [f"    c{j} = rem % vsize{j}", f"    rem = rem // vsize{j}"]
    # slice dims: base_off holds every start * stride; step_stride = step * out stride (0 for adv dims)
    lines.append("    dst = base_off + " + (" + ".join(f"c{j} * step_stride{j}" for j in range(r)) or "offs * 0"))
    lines.append("    ok = mask")
    adv_at = [j for j, (kind, _) in enumerate(plan.view) if kind == "adv"]
    for i in range(k):
        where = " + ".join(f"c{adv_at[j]} * idx{i}_stride{j}" for j in range(plan.adv_rank)) or "offs * 0"
        lines += [f"    i{i} = tl.load(idx{i}_ptr + ({where}), mask=mask, other=0).to(tl.int64)",
                  f"    i{i} = tl.where(i{i} < 0, i{i} + idx{i}_size, i{i})  # negative indices count from the end",
                  f"    ok = ok & (i{i} >= 0) & (i{i} < idx{i}_size)",
                  f"    dst += i{i} * idx{i}_ostride"]
    if plan.value is not None:
        src = " + ".join(f"c{j} * vstride{j}" for j in range(r)) or "offs * 0"
        lines.append(f"    val = tl.load(value_ptr + ({src}), mask=mask)")
    else:
        lines.append("    val = value + tl.zeros([BLOCK], tl.float32)")
    lines.append("    tl.store(out_ptr + dst, val.to(out_ptr.dtype.element_ty), mask=ok)")
    return "\n".join(lines)


def _launcher(launcher: str, group: GroupSpec, plan: _Plan, cfg: dict[str, Any]) -> str:
    args = [f"a{i}" for i in range(len(group.inputs))]
    arg_of = {v.name: a for v, a in zip(group.inputs, args)}
    operand = {i: arg_of[o] for i, o in enumerate(plan.node.operands) if isinstance(o, str) and o in arg_of}
    base = arg_of[plan.base.name]
    block, warps = int(cfg["BLOCK"]), int(cfg["num_warps"])
    rank = len(plan.base.shape)
    copy, scatter = _copy_name(rank), _scatter_name(plan)
    lines = [f"def {launcher}({', '.join(args)}):",
             f'    """{plan.base.name}[index] = value out of place: {copy}, then {scatter}."""',
             f"    out = torch.empty({base}.shape, dtype={base}.dtype, device={base}.device)",
             "    n = out.numel()",
             "    if n == 0:",
             "        return out",
             f"    {copy}[(_egg_cdiv(n, {block}),)]({base}, out, n, "
             + "".join(f"{base}.shape[{d}], " for d in range(rank))
             + "".join(f"{base}.stride({d}), " for d in range(rank))
             + f"CONTIGUOUS={base}.is_contiguous(), BLOCK={block}, num_warps={warps})"]
    idx = [operand[it[1]] for it in plan.items if it[0] == "tensor"]
    if idx:
        lines.append(f"    adv = _egg_broadcast_shapes({', '.join(f'{t}.shape' for t in idx)},)")
        lines += [f"    idx{i} = {t}.expand(adv)" for i, t in enumerate(idx)]
    lines.append("    base_off = 0")
    view_sizes: dict[int, str] = {}
    step_strides: dict[int, str] = {}
    for d, it in enumerate(plan.items):
        if it[0] == "int":
            lines.append(f"    base_off += ({it[1]} % out.shape[{d}]) * out.stride({d})")
        elif it[0] == "slice" and it[1:] == [None, None, None]:
            view_sizes[d], step_strides[d] = f"out.shape[{d}]", f"out.stride({d})"
        elif it[0] == "slice":
            bounds = ", ".join(_bound(v, operand) for v in it[1:])
            lines += [f"    start{d}, stop{d}, step{d} = slice({bounds}).indices(out.shape[{d}])",
                      f"    base_off += start{d} * out.stride({d})"]
            view_sizes[d] = f"len(range(start{d}, stop{d}, step{d}))"
            step_strides[d] = f"step{d} * out.stride({d})"
    sizes = [view_sizes[d] if kind == "slice" else f"adv[{d}]" for kind, d in plan.view]
    lines.append(f"    view = [{', '.join(sizes)}]")
    lines += ["    m = math.prod(view)", "    if m == 0:", "        return out"]
    value = "value"
    if plan.value is not None:
        lines += [f"    value = {operand[1]}",
                  "    while value.dim() > len(view):  # leading size-1 dims, as torch's setitem allows",
                  "        value = value[0]",
                  "    value = value.expand(view)"]
    else:
        value = repr(plan.literal)
    call = ["out", value, "m", "base_off", *(f"view[{j}]" for j in range(len(plan.view)))]
    call += [f"value.stride({j})" if plan.value is not None else "0" for j in range(len(plan.view))]
    call += [f"idx{i}" for i in range(len(idx))]
    call += [f"out.shape[{d}]" for d in plan.tensor_dims] + [f"out.stride({d})" for d in plan.tensor_dims]
    call += [f"idx{i}.stride({j})" for i in range(len(idx)) for j in range(plan.adv_rank)]
    call += [step_strides[d] if kind == "slice" else "0" for kind, d in plan.view]
    call += [f"BLOCK={block}", f"num_warps={warps}"]
    lines.append(f"    {scatter}[(_egg_cdiv(m, {block}),)](")
    lines += _wrap(call)
    lines += ["    )", "    return out"]
    return "\n".join(lines)


def _wrap(items: list[str], width: int = 100) -> list[str]:
    lines, cur = [], "       "
    for item in items:
        if len(cur) + len(item) + 2 > width and cur.strip():
            lines.append(cur)
            cur = "       "
        cur += f" {item},"
    return [*lines, cur] if cur.strip() else lines


TEMPLATES = [SetitemTemplate()]
