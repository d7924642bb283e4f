"""Write the candidate file: header, the reference's source, the kernels, and ``ModelNew``.

``ModelNew`` subclasses the reference ``Model`` (same constructor, so the harness's seeding gives
it the same parameters) and overrides ``forward`` with the traced graph written back as Python:
each fused group becomes one launcher call at the position of its output; every other node calls
exactly what the reference called (``self.conv(x)``, ``torch.matmul``, views). In-place ops the
reference applies to a forward input are applied to a clone: a candidate must not mutate inputs.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

import torch
from torch import fx

from agents.expert.fxpatch import setitem_copy
from agents.expert.lowering import Lowered, ParamRef, qualified
from agents.expert.partition import Group
from agents.expert.trace import ExpertDecline, TracedProblem

IMPORTS = "import math\nimport operator\n\nimport torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"

_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
           operator.mod: "%", operator.pow: "**", operator.matmul: "@", operator.and_: "&", operator.or_: "|",
           operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>", operator.eq: "==", operator.ne: "!=",
           operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
           operator.iadd: "+", operator.isub: "-", operator.imul: "*", operator.itruediv: "/"}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not "}
_GUARDS = {"_assert", "_assert_is_none", "_assert_async"}


def strip_problem_source(source: str) -> tuple[list[str], str]:
    """(``from __future__`` lines, the source without them and without get_inputs/get_init_inputs)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    drop: set[int] = set()
    future: list[str] = []
    for node in tree.body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        span = range(start - 1, (node.end_lineno or node.lineno))
        if isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs"):
            drop.update(span)
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            future.extend(lines[i] for i in span)
            drop.update(span)
    kept = [line for i, line in enumerate(lines) if i not in drop]
    return future, "\n".join(kept).strip() + "\n"


def init_source(source: str) -> str:
    """``__init__`` forwarding Model's exact signature (the harness compares constructor params)."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    a = item.args
                    call = [p.arg for p in (a.posonlyargs + a.args)[1:]]
                    call += [f"*{a.vararg.arg}"] if a.vararg else []
                    call += [f"{p.arg}={p.arg}" for p in a.kwonlyargs]
                    call += [f"**{a.kwarg.arg}"] if a.kwarg else []
                    return (f"    def __init__({ast.unparse(a)}):\n"
                            f"        super().__init__({', '.join(call)})\n")
    return ""


def _fmt(value: Any, names: dict[fx.Node, str]) -> str:
    if isinstance(value, fx.Node):
        return names[value]
    if isinstance(value, ParamRef):
        return value.expr
    if isinstance(value, tuple):
        inner = ", ".join(_fmt(v, names) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v, names) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt(v, names)}" for k, v in value.items()) + "}"
    if isinstance(value, slice):
        return f"slice({_fmt(value.start, names)}, {_fmt(value.stop, names)}, {_fmt(value.step, names)})"
    if value is Ellipsis:
        return "..."
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, torch.Size):
        return f"torch.Size({list(value)!r})"
    if isinstance(value, (torch.dtype, torch.memory_format, torch.layout)):
        return str(value)
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    raise ExpertDecline(f"cannot write the argument {value!r} of the traced forward back as Python")


def _attr_expr(path: str) -> str:
    parts = path.split(".")
    if all(p.isidentifier() for p in parts):
        return "self." + path
    module, attr = ".".join(parts[:-1]), parts[-1]
    return f'self.get_submodule("{module}").{attr}' if module else f"getattr(self, {attr!r})"


def _attr_value(path: str, tp: TracedProblem, names: dict[fx.Node, str]) -> str:
    """``self.<path>`` for the reference's own attributes. A tensor fx made up while tracing
    (``torch.tensor(0.5)`` in forward becomes ``_tensor_constant0`` on the GraphModule only) is
    written out as a literal, created on the inputs' device so fused kernels can read it."""
    if not path.startswith("_tensor_constant"):  # fx's name for constants it sets on the root while tracing
        return _attr_expr(path)
    value = getattr(tp.gm, path, None)
    if not isinstance(value, torch.Tensor) or value.numel() > 1024:
        raise ExpertDecline(f"the traced forward reads {path}, which is not an attribute of Model")
    placeholders = [n for n in tp.gm.graph.nodes if n.op == "placeholder" and tp.meta.get(n.name)
                    and tp.meta[n.name].is_tensor]
    device = f", device={names[placeholders[0]]}.device" if placeholders else ""
    return f"torch.tensor({_fmt(value.tolist(), names)}, dtype={value.dtype}{device})"


def _function_expr(fn: Any, tp: TracedProblem) -> str:
    if getattr(fn, "__module__", None) == tp.module.__name__:
        return fn.__name__  # a helper defined in the problem file (copied verbatim)
    name = qualified(fn)
    if name.startswith("builtins."):
        return name.removeprefix("builtins.")
    if not name.startswith(("torch.", "math.", "operator.")):
        raise ExpertDecline(f"the traced forward calls {name}, which the candidate cannot import")
    return name


def _call_args(args: tuple[Any, ...], kwargs: dict[str, Any], names: dict[fx.Node, str]) -> str:
    parts = [_fmt(a, names) for a in args] + [f"{k}={_fmt(v, names)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def node_statement(node: fx.Node, tp: TracedProblem, low: Lowered | None, names: dict[fx.Node, str]) -> str:
    """One line of Python computing ``node`` exactly as the reference does."""
    local = dict(names)
    args = list(node.args)
    if low is not None and low.inplace and args and isinstance(args[0], fx.Node) and args[0].op == "placeholder":
        local[args[0]] = f"{names[args[0]]}.clone()"  # the reference mutates its input; we must not
    target = names[node]
    if "expert_expr" in node.meta:  # a folded norm left unfused: the reference's own ops (recognise.py)
        return f"{target} = " + node.meta["expert_expr"].format(*(_fmt(a, local) for a in args))
    if node.op == "get_attr":
        return f"{target} = {_attr_value(str(node.target), tp, names)}"
    if node.target is setitem_copy:  # the reference's item assignment, applied to a copy (fxpatch.py)
        base, index, value = args
        return f"{target} = {_fmt(base, local)}.clone(); {target}[{_index(index, local)}] = {_fmt(value, local)}"
    if node.op == "call_module":
        path = str(node.target)
        module = "self." + path if all(p.isidentifier() for p in path.split(".")) else f'self.get_submodule("{path}")'
        return f"{target} = {module}({_call_args(tuple(args), dict(node.kwargs), local)})"
    if node.op == "call_method":
        receiver = _fmt(args[0], local)
        return f"{target} = {receiver}.{node.target}({_call_args(tuple(args[1:]), dict(node.kwargs), local)})"
    fn = node.target
    if fn in _BINARY and len(args) == 2 and not node.kwargs:
        return f"{target} = {_fmt(args[0], local)} {_BINARY[fn]} {_fmt(args[1], local)}"
    if fn in _UNARY and len(args) == 1:
        return f"{target} = {_UNARY[fn]}{_fmt(args[0], local)}"
    if fn is operator.getitem:
        return f"{target} = {_fmt(args[0], local)}[{_index(args[1], local)}]"
    if fn is getattr and len(args) == 2 and isinstance(args[1], str):
        return f"{target} = {_fmt(args[0], local)}.{args[1]}"
    return f"{target} = {_function_expr(fn, tp)}({_call_args(tuple(args), dict(node.kwargs), local)})"


def _index(index: Any, names: dict[fx.Node, str]) -> str:
    def one(v: Any) -> str:
        if isinstance(v, slice):
            text = ":".join("" if p is None else _fmt(p, names) for p in (v.start, v.stop))
            return text + (f":{_fmt(v.step, names)}" if v.step is not None else "")
        return _fmt(v, names)

    if isinstance(index, tuple):
        return ", ".join(one(v) for v in index) + ("," if len(index) == 1 else "")
    return one(index)


def _skipped(tp: TracedProblem, groups: list[Group], low: dict[str, Lowered]) -> set[fx.Node]:
    """Nodes not written: fused members (but outputs), fx guards, and values only they needed."""
    skip: set[fx.Node] = set()
    for g in groups:
        skip.update(m for m in g.members if m is not g.output)
    for node in tp.gm.graph.nodes:
        if node.op == "call_function" and getattr(node.target, "__name__", "") in _GUARDS:
            skip.add(node)
    needed = {s for g in groups for s in g.sources if isinstance(s, fx.Node)}  # launcher arguments
    changed = True
    while changed:  # dead values: every user was dropped, and computing them has no side effect
        changed = False
        for node in tp.gm.graph.nodes:
            lowered = low.get(node.name)
            pure = node.op in ("call_function", "call_method", "get_attr") and not (lowered and lowered.inplace)
            if node not in skip and node not in needed and pure and node.users and all(u in skip for u in node.users):
                skip.add(node)
                changed = True
    return skip


def forward_source(tp: TracedProblem, groups: list[Group], low: dict[str, Lowered], doc: str) -> str:
    names = {n: n.name for n in tp.gm.graph.nodes}
    skip = _skipped(tp, groups, low)
    by_output = {g.output: g for g in groups}
    params: list[str] = []
    body: list[str] = []
    for node in tp.gm.graph.nodes:
        if node.op == "placeholder":
            default = f" = {_fmt(node.args[0], names)}" if node.args else ""
            params.append(f"{node.name}{default}")
        elif node.op == "output":
            body.append(f"return {_fmt(node.args[0], names)}")
        elif node in by_output:
            g = by_output[node]
            args = ", ".join(_fmt(s, names) for s in g.sources)
            targets = ", ".join(names[n] for n in (node, *g.extra_outputs))  # extra outputs: a tuple
            body.append(f"{targets} = {g.launcher}({args})  # {g.template.name} kernel, {len(g.spec.nodes)} op(s)")
        elif node not in skip:
            body.append(node_statement(node, tp, low.get(node.name), names))
    lines = [f"    def forward(self, {', '.join(params)}):" if params else "    def forward(self):",
             f'        """{doc}"""']
    lines += [f"        {line}" for line in body]
    return "\n".join(lines) + "\n"
