"""The candidate file: header and config, the reference, helpers, kernels and launchers, ``ModelNew``.

Liger-Kernel's order: private ``@triton.jit`` kernels, then their launchers, then the public
module. ``ModelNew`` subclasses the reference ``Model`` (same constructor: the harness's seeding
gives it the same parameters), binds the modules owning the parameters and buffers it reads once
(``_egg_bind``; parameter objects are read from them per call, so ``.to()`` and rebinding keep
working), checks that the inputs have the shapes, strides and dtypes the kernels were specialised
to, calls the launchers and the extern torch calls in graph order, applies buffer mutations (a
kernel writes the module buffer in place where that is safe, else a ``copy_``), and returns the
structure the reference returns.
"""

from __future__ import annotations

import ast
import json
import math
from dataclasses import dataclass, field
from typing import Any

import torch

from agents.expert.decline import ExpertDecline
from agents.expert.ir.nodes import ExternNode, InputNode, Layout, ScatterNode, View, contiguous_strides
from agents.expert.kernel import ExternStep, Kernel, Program
from agents.expert.templates import KernelSource
from egg import pyast

CONFIG_TAG = "# EGG-EXPERT-CONFIG: "
IMPORTS = "import math\n\nimport torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"


def strip_problem_source(source: str) -> tuple[list[str], str]:
    """(``from __future__`` lines, the source without them and without get_inputs/get_init_inputs)."""
    tree = pyast.parse(source)
    lines = source.splitlines()
    drop: set[int] = set()
    future: list[str] = []
    for node in tree.body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        span = range(start - 1, node.end_lineno or node.lineno)
        if isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs"):
            drop.update(span)
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            future.extend(lines[i] for i in span)
            drop.update(span)
    return future, "\n".join(line for i, line in enumerate(lines) if i not in drop).strip() + "\n"


def init_signature(source: str) -> tuple[str, str]:
    """(``__init__`` parameters, the ``super().__init__`` arguments) of the reference's Model."""
    for node in pyast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    a = item.args
                    call = [p.arg for p in (a.posonlyargs + a.args)[1:]]
                    call += [f"*{a.vararg.arg}"] if a.vararg else []
                    call += [f"{p.arg}={p.arg}" for p in a.kwonlyargs]
                    call += [f"**{a.kwarg.arg}"] if a.kwarg else []
                    return ast.unparse(a), ", ".join(call)
    return "self", ""


@dataclass
class Shared:
    """What the specialisations of one candidate share: the modules bound once, the constants."""

    owners: list[str] = field(default_factory=list)  # module paths ("" is the model itself)
    consts: list[str] = field(default_factory=list)  # constant tensors created in __init__

    def bind(self) -> list[str]:
        if not self.owners:
            return []
        mods = ", ".join("self" if not o else f"self.get_submodule({o!r})" for o in self.owners)
        return [f"self._egg_owners = ({mods}{',' if len(self.owners) == 1 else ''})"]


@dataclass
class Specialised:
    """One shape set's forward: its body and the key (input shapes, dtypes, baked scalars) that
    selects it."""

    tag: str
    lines: list[str]
    key: str  # a Python literal


def _view_expr(view: View, names: dict[str, str], layouts: dict[str, Layout]) -> str:
    base = names[view.buffer]
    own = layouts[view.buffer]
    lay = view.layout
    if lay == own:
        return base
    if lay.offset == own.offset and sorted(zip(lay.stride, lay.shape)) == sorted(zip(own.stride, own.shape)):
        perm = []
        used: set[int] = set()
        for st, sz in zip(lay.stride, lay.shape):
            k = next(i for i, (s2, z2) in enumerate(zip(own.stride, own.shape)) if (s2, z2) == (st, sz) and i not in used)
            used.add(k)
            perm.append(k)
        if len(perm) == len(own.shape):
            return f"{base}.permute({', '.join(map(str, perm))})" if perm != list(range(len(perm))) else base
    off = lay.offset - own.offset
    contiguous = lay.stride == contiguous_strides(lay.shape) and own.stride == contiguous_strides(own.shape)
    if not off and contiguous and lay.numel == own.numel:
        return f"{base}.view({tuple(lay.shape)})"
    offset = f"{base}.storage_offset() + {off}" if off else f"{base}.storage_offset()"
    return f"{base}.as_strided({tuple(lay.shape)}, {tuple(lay.stride)}, {offset})"


def _literal(value: Any, names: dict[str, str], layouts: dict[str, Layout]) -> str:
    if isinstance(value, View):
        return _view_expr(value, names, layouts)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_literal(v, names, layouts) for v in value)
        return f"[{inner}]" if isinstance(value, list) else (f"({inner},)" if len(value) == 1 else f"({inner})")
    if isinstance(value, torch.device):
        return "_dev"
    if isinstance(value, (torch.dtype, torch.layout, torch.memory_format)):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    raise ExpertDecline(f"cannot write the argument {value!r} of an extern call as Python")


def out_structure(spec: Any, leaves: list[str]) -> str:
    """The forward's return expression for a pytree ``spec`` over ``leaves``."""
    it = iter(leaves)

    def build(s: Any) -> str:
        if s is None or s.is_leaf():
            return next(it)
        kids = [build(c) for c in (s.children() if callable(getattr(s, "children", None)) else s.children_specs)]
        if s.type is tuple:
            return f"({', '.join(kids)},)" if len(kids) == 1 else f"({', '.join(kids)})"
        if s.type is list:
            return f"[{', '.join(kids)}]"
        if s.type is dict:
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(s.context, kids)) + "}"
        raise ExpertDecline(f"the forward returns a {s.type.__name__}, which the candidate cannot rebuild")

    return build(spec)


def key_expr(program: Program) -> str:
    """The expression forward computes to pick a specialisation: each user input's shape and dtype
    (tensors) or value (the scalars the capture baked in), in forward's argument order."""
    return "(" + "".join(f"{e}, " for e in _key_parts(program)[0]) + ")"


def _key_parts(program: Program) -> tuple[list[str], list[str]]:
    graph = program.graph
    items: list[tuple[int, str, str]] = []
    for n in graph.inputs():
        if n.role == "user_input":
            items.append((int(n.target), f"inputs[{n.target}].shape, inputs[{n.target}].dtype",
                          f"{tuple(n.layout.shape)!r}, torch.{n.layout.dtype}"))
    for pos, value in graph.scalars:
        items.append((pos, f"inputs[{pos}]", repr(value)))
    items.sort()
    return [e for _, e, _ in items], [v for _, _, v in items]


def forward_lines(program: Program, sources: dict[str, KernelSource], inplace: dict[str, str],
                  layouts: dict[str, Layout], shared: Shared, tag: str) -> Specialised:
    graph = program.graph
    names: dict[str, str] = {}
    lines: list[str] = []
    consts, owners = shared.consts, shared.owners
    used = set(program.stored) | {b for k in program.kernels for b in k.reads}
    for e in program.externs():
        used |= {v.buffer for v in _walk_views(list(e.args) + list(e.kwargs.values()))}
    checks: list[str] = []
    relayout: list[tuple[str, Layout]] = []
    for node in graph.inputs():
        names[node.name] = node.name
        if node.name not in used and node.name not in {v.buffer for v in graph.mutations.values()} \
                and not any(fqn == node.target for fqn in graph.mutations):
            continue
        lay = node.layout
        if node.role == "user_input":
            lines.append(f"{node.name} = inputs[{node.target}]")
            checks.append(f"{node.name}.shape != {tuple(lay.shape)} or {node.name}.dtype != torch.{lay.dtype}")
            relayout.append((node.name, lay))
        elif node.role in ("parameter", "buffer"):
            owner, _, attr = str(node.target).rpartition(".")
            if owner not in owners:
                owners.append(owner)
            k = owners.index(owner)
            access = f".{attr}" if attr.isidentifier() else f".get_parameter({attr!r})"
            value = f"owners[{k}]{access}"
            lines.append(f"{node.name} = torch.view_as_real({value})" if node.as_real else f"{node.name} = {value}")
        else:
            consts.append(_const(node))
            lines.append(f"{node.name} = self._egg_consts[{len(consts) - 1}]")
    if owners:
        lines.insert(0, "owners = self._egg_owners")
    for pos, value in graph.scalars:  # baked into the kernels: another value is another program
        checks.append(f"inputs[{pos}] != {value!r}")
    first = next((n.name for n in graph.inputs() if n.role == "user_input" and n.name in used), None) or \
        next((n.name for n in graph.inputs() if n.name in used), None)
    if checks:
        lines.append("if " + " or ".join(f"({c})" for c in checks) + ":")
        got = " + ".join(f"str(({n}.shape, {n}.dtype))" for n, _ in relayout) or "str(inputs)"
        lines.append('    raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars '
                     f'of its shape sets: got " + {got})')
    for name, lay in relayout:  # the kernels index inputs with these strides: another layout is copied
        lines += _relayout(name, lay, f"{name}.stride()", tuple(lay.stride))
    lines.append(f"_dev = {first}.device" if first else '_dev = torch.device("cpu")')
    for step in program.steps:
        if isinstance(step, ExternStep):
            lines += _extern_lines(step.node, names, layouts)
            continue
        src = sources[step.name]
        args = [names.get(p, p) if p != "_device" else "_dev" for p in src.inputs]
        call = f"{src.launcher}({', '.join(args)})"
        if src.outputs:
            for o in src.outputs:
                names[o] = o
            lines.append(f"{', '.join(src.outputs)}{',' if len(src.outputs) == 1 else ''} = {call}")
        else:
            lines.append(call)
        for node in step.nodes:  # a scatter wrote into its target's storage: the same tensor
            if isinstance(node, ScatterNode):
                names[node.name] = names.get(node.target, node.target)
        for s in step.stores:
            if s.buffer in inplace:
                names[s.buffer] = inplace[s.buffer]
    for fqn, view in graph.mutations.items():
        target = next(n for n in graph.inputs() if n.target == fqn)
        if view.buffer in inplace and inplace[view.buffer] == target.name:
            continue
        lines.append(f"{target.name}.copy_({_view_expr(view, names, layouts)})")
    leaves = [_view_expr(v, names, layouts) for v in graph.outputs]
    lines.append(f"return {out_structure(graph.out_spec, leaves)}")
    key = "(" + "".join(f"{v}, " for v in _key_parts(program)[1]) + ")"
    return Specialised(tag, lines, key)


def _walk_views(items: list[Any]) -> list[View]:
    out: list[View] = []
    for a in items:
        if isinstance(a, View):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out += _walk_views(list(a))
    return out


# Library calls whose output PyTorch always allocates contiguous (their captured layout is then the
# runtime one); any other library op may pick its output layout per backend at run time.
_CONTIGUOUS_OUT = {"aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.baddbmm.default"}


def _extern_lines(node: ExternNode, names: dict[str, str], layouts: dict[str, Layout]) -> list[str]:
    """The torch call, then a layout guard on each output the program indexes with captured strides.

    A library op's output strides are its backend's choice, made at run time: SDPA returns
    [B, S, H, D]-ordered memory from its flash kernel (bf16 on a GPU) and [B, H, S, D] from its math
    kernel (fp32 with GQA), and the capture saw only one of them. The kernels and views after the
    call assume the captured strides, so an output with other strides is copied into them (rare,
    and correct either way) instead of being read through the wrong index map.
    """
    packet, _, overload = node.target.rpartition(".")
    fn = f"torch.ops.{packet}.{overload}"
    args = [_literal(a, names, layouts) for a in node.args]
    args += [f"{k}={_literal(v, names, layouts)}" for k, v in node.kwargs.items()]
    outs = [node.name] + [f"{node.name}_{k}" for k in range(1, len(node.extra) + 1)]
    for o in outs:
        names[o] = o
    target = outs[0] if not node.extra else ", ".join(outs)
    lines = [f"{target} = {fn}({', '.join(args)})"]
    for name, lay in zip(outs, [layouts.get(node.name)] + list(node.extra)):
        if lay is None or (node.target in _CONTIGUOUS_OUT and lay.stride == contiguous_strides(lay.shape)):
            continue
        if 1 in lay.shape:  # a size-1 dimension's stride is arbitrary: compare the others only
            keep = [i for i, n in enumerate(lay.shape) if n != 1]
            got = "(" + "".join(f"{name}.stride({i}), " for i in keep) + ")"
            want = tuple(lay.stride[i] for i in keep)
        else:
            got, want = f"{name}.stride()", tuple(lay.stride)
        lines += _relayout(name, lay, got, want)
    return lines


def _relayout(name: str, lay: Layout, got: str, want: tuple[int, ...]) -> list[str]:
    """Copy ``name`` into ``lay`` when its strides (``got``, compared with ``want``) are others."""
    return [f"if {got} != {want}:",
            f"    {name} = torch.empty_strided({tuple(lay.shape)}, {tuple(lay.stride)}, dtype={name}.dtype, "
            f"device={name}.device).copy_({name})"]


def _const(node: InputNode) -> str:
    value = node.value
    if not isinstance(value, torch.Tensor) or value.numel() > 4096:
        raise ExpertDecline(f"the graph holds a constant tensor {node.name} the candidate cannot embed")
    return f"torch.tensor({value.tolist()!r}, dtype=torch.{node.layout.dtype})" + (
        f".reshape({tuple(value.shape)})" if value.dim() != 1 else "")


def model_class(init: tuple[str, str], specialised: list[Specialised], shared: Shared, key: str, doc: str) -> str:
    """``ModelNew`` and the module-level forward of each specialisation (the first is the default;
    another set's inputs select theirs by ``key``)."""
    params, call = init
    lines = ["class ModelNew(Model):", f'    """{doc}"""', "",
             f"    def __init__({params}):", f"        super().__init__({call})"]
    if shared.consts:
        lines.append("        self._egg_consts = (" + ", ".join(shared.consts) + ("," if len(shared.consts) == 1 else "")
                     + ")")
    lines += ["        self._egg_bind()", "",
              "    def _egg_bind(self):",
              '        """The modules owning the parameters and buffers forward reads (bound once)."""']
    lines += [f"        {line}" for line in shared.bind()] or ["        pass"]
    if shared.consts:
        lines += ["", "    def _apply(self, fn, *args, **kwargs):",
                  "        out = super()._apply(fn, *args, **kwargs)",
                  "        self._egg_consts = tuple(fn(c) for c in self._egg_consts)  # move the constants too",
                  "        return out"]
    first = specialised[0].tag
    lines += ["", "    def forward(self, *inputs):"]
    if len(specialised) == 1:
        lines.append(f"        return _egg_forward_{first}(self, inputs)")
    else:
        lines.append(f"        return _EGG_SPECIALISED.get({key}, _egg_forward_{first})(self, inputs)")
    for spec in specialised:
        lines += ["", "", f"def _egg_forward_{spec.tag}(self, inputs):",
                  f'    """ModelNew.forward for the inputs {spec.key}."""']
        lines += [f"    {line}" for line in spec.lines]
    if len(specialised) > 1:
        table = {}
        for spec in specialised:  # one shape set's key wins over a later identical one
            table.setdefault(spec.key, spec.tag)
        lines += ["", "", "_EGG_SPECIALISED = {"]
        lines += [f"    {k}: _egg_forward_{t}," for k, t in table.items()]
        lines.append("}")
    return "\n".join(lines) + "\n"


def header(problem: str, variant: str, summary: str, structure: str, sources: list[KernelSource],
           principle_ids: list[str], config: dict[str, Any]) -> str:
    lines = [f"# EGG expert candidate for {problem} (agents.expert: loop-level IR + templates, no LLM)",
             f"# structure: {structure}", f"# variant: {variant}: {summary}"]
    lines += [f"#   {s.name}: " + " ".join(f"{k}={v!r}" for k, v in s.config.items()) for s in sources]
    lines += [f"# principles: {', '.join(principle_ids)}", CONFIG_TAG + json.dumps(config, sort_keys=True)]
    return "\n".join(lines)


__all__ = ["CONFIG_TAG", "IMPORTS", "Kernel", "Shared", "Specialised", "forward_lines", "header", "init_signature",
           "key_expr", "model_class", "out_structure", "strip_problem_source"]
