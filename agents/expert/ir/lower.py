"""Lowering: the captured canonical ATen graph -> the loop-level IR (:mod:`agents.expert.ir.nodes`).

Each fx node maps to a :class:`~agents.expert.ir.values.TV` through the lowering registered for
its ATen op (``lower_pointwise``, ``lower_views``, ``lower_reduce``, ``lower_matmul``); ops with
no lowering become :class:`~agents.expert.ir.nodes.ExternNode` torch calls. Pointwise results stay
lazy and inline into their consumers; a value is *realized* (stored) only where it must be: a
graph output or buffer mutation, an input of an extern call, a reduction/scan/matmul/scatter
result (those are nodes by nature), or a value several consumers share whose recomputation
would re-read too much (Inductor's rule: four or more inputs, or a long op chain).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
import torch
from torch import fx

from agents.expert.decline import ExpertDecline
from agents.expert.ir import dtypes
from agents.expert.ir.expr import Const, loads_of, op_count
from agents.expert.ir.index import Var
from agents.expert.ir.nodes import ExternNode, InputNode, IRGraph, Layout, Node, PointwiseNode, View
from agents.expert.ir.values import TV, from_view

log = structlog.get_logger(__name__)

LOWERINGS: dict[str, Callable[..., Any]] = {}
REALIZE_READS = 4  # distinct buffers a shared lazy value may read before it is stored instead
REALIZE_OPS = 40
RANDOM_OPS = frozenset({
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "bernoulli", "native_dropout",
    "uniform", "normal", "randperm", "multinomial", "exponential", "poisson", "geometric", "cauchy",
    "log_normal", "rrelu_with_noise", "_fused_dropout", "random",
})


def register(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a lowering under ATen names: ``"aten.add.Tensor"`` (one overload) or ``"aten.add"``
    (every overload without its own entry)."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return wrap


@dataclass(frozen=True)
class LowerOptions:
    matmul: str = "extern"  # extern (cuBLAS) | template (the Triton matmul template)
    split: tuple[tuple[str, int], ...] = ()  # reduction nodes to split into partials + a second stage, and their chunks per row
    conv: str = "nchw"  # nchw (as captured) | channels-last (ir/lower_conv.py) | gemm | gemm-registers (ir/lower_conv_gemm.py) | depthwise (ir/lower_conv_depthwise.py)
    tf32: bool = False  # fp32 GEMM-template operands rounded to TF32 once, in memory (lower_matmul.tf32_rounded)
    halves: bool = True  # fp32 GEMM-template products of two upcast 16-bit operands multiply the 16-bit values (lower_matmul.exact_halves)
    kmajor: bool = False  # fp32 GEMM operands copied K-major with 16-byte rows where they are not, for tensor-core dots (lower_matmul.k_major); TF32 implicit-GEMM convolutions gather channels-last (lower_conv_gemm)


def meta_layout(node: fx.Node, value: Any | None = None) -> Layout:
    val = value if value is not None else node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        raise ExpertDecline(f"{node.name} ({node.target}) has no tensor metadata")
    return Layout(tuple(int(s) for s in val.shape), tuple(int(s) for s in val.stride()), dtypes.name(val.dtype))


def op_name(target: Any) -> str:
    text = str(target)
    return text if text.startswith(("aten.", "prims.")) else getattr(target, "__name__", text)


class Lowering:
    def __init__(self, cg: Any, options: LowerOptions) -> None:
        self.cg = cg
        self.options = options
        self.nodes: dict[str, Node] = {}
        self.values: dict[fx.Node, Any] = {}
        self.current: fx.Node | None = None
        self.notes: list[str] = []
        self._realized: dict[int, tuple[TV, TV]] = {}  # id(lazy value) -> (it, its stored copy)
        self._stored: dict[tuple[Any, Layout], TV] = {}  # (body, layout) -> the node storing it

    # -- nodes and names ---------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "buf"
        if base[0].isdigit():
            base = "v_" + base
        name, i = base, 1
        while name in self.nodes:
            name, i = f"{base}_{i}", i + 1
        return name

    def add(self, node: Node) -> TV:
        self.nodes[node.name] = node
        return from_view(View(node.name, node.layout))

    def vars_for(self, name: str, shape: tuple[int, ...] | list[int]) -> tuple[Var, ...]:
        return tuple(Var(f"{name}_i{k}", int(s)) for k, s in enumerate(shape))

    def realize(self, tv: TV, hint: str = "buf", layout: Layout | None = None) -> TV:
        """``tv`` stored in a buffer of its own (a view of one already is), in ``layout``
        (default: the current node's metadata strides when dense, else contiguous)."""
        if tv.view is not None and layout is None:
            return tv
        if layout is None:
            layout = Layout.contiguous(tv.shape, tv.dtype)
            if self.current is not None:
                try:
                    meta = meta_layout(self.current)
                    if meta.shape == tv.shape and meta.dtype == tv.dtype and meta.is_dense():
                        layout = meta
                except ExpertDecline:
                    pass
        # canonical vars: the same value realized twice (two views of it feed two externs) is one node
        vs = tuple(Var(f"_r{k}", int(s)) for k, s in enumerate(tv.shape))
        body = tv.at(list(vs))
        key = (body, layout)
        if key in self._stored:
            return self._stored[key]
        name = self.fresh(hint)
        self._stored[key] = self.add(PointwiseNode(name, layout, vs, body))
        return self._stored[key]

    def as_view(self, tv: TV, hint: str) -> View:
        """``tv`` as a stored tensor: realized once, however many externs read it."""
        if tv.view is None:
            key = id(tv)
            if key not in self._realized:
                self._realized[key] = (tv, self.realize(tv, hint))
            tv = self._realized[key][1]
        assert tv.view is not None
        return tv.view

    # -- the graph ---------------------------------------------------------------------------
    def run(self) -> IRGraph:
        gm: fx.GraphModule = self.cg.gm
        by_name = {gi.name: gi for gi in self.cg.inputs}
        output_node = None
        for node in gm.graph.nodes:
            self.current = node
            if node.op == "placeholder":
                self.values[node] = self._placeholder(node, by_name.get(node.name))
            elif node.op == "call_function":
                self.values[node] = self._call(node)
            elif node.op == "output":
                output_node = node
            elif node.op == "get_attr":
                raise ExpertDecline(f"the captured graph reads attribute {node.target} directly")
        self.current = None
        outputs = [self._output_view(n, i) for i, n in enumerate(self.cg.outputs)]
        # a mutated user input is left alone: a candidate must not change its inputs (the judge
        # checks); module buffers are updated as the module would update them
        users = {gi.name for gi in self.cg.inputs if gi.kind == "user_input"}
        mutations = {fqn: self._output_view(self._by_name(name), None, hint=f"new_{fqn}")
                     for fqn, name in self.cg.mutations.items() if fqn not in users}
        del output_node
        scalars = [(int(pos), value) for _, pos, value in getattr(self.cg, "scalar_inputs", [])
                   if isinstance(pos, int) and isinstance(value, (int, float, bool))]
        return IRGraph(_live(self.nodes, outputs, list(mutations.values())), outputs, self.cg.out_spec, mutations,
                       list(self.notes), scalars)

    def _by_name(self, name: str) -> fx.Node:
        for n in self.cg.gm.graph.nodes:
            if n.name == name:
                return n
        raise ExpertDecline(f"the captured graph has no node {name}")

    def _output_view(self, node: Any, position: int | None, hint: str | None = None) -> View:
        if not isinstance(node, fx.Node):
            raise ExpertDecline(f"output {position} is not a tensor computed by the graph ({node!r})")
        value = self.values.get(node)
        if not isinstance(value, TV):
            raise ExpertDecline(f"output {node.name} is not a tensor")
        self.current = node
        view = self.as_view(value, hint or node.name)
        self.current = None
        return view

    def _placeholder(self, node: fx.Node, gi: Any) -> TV:
        if gi is None:
            raise ExpertDecline(f"placeholder {node.name} is not among the captured inputs")
        if gi.dtype.is_complex:  # held as its real view: a trailing (re, im) dim
            real = dtypes.name(gi.dtype.to_real())
            layout = Layout((*gi.shape, 2), (*(2 * s for s in gi.stride), 1), real)
            tv = self.add(InputNode(node.name, layout, role=gi.kind, target=gi.target, as_real=True))
            tv.complex = True
            return tv
        layout = Layout(tuple(gi.shape), tuple(gi.stride), dtypes.name(gi.dtype))
        if gi.kind == "constant" and isinstance(gi.value, torch.Tensor) and gi.value.numel() == 1:
            value = gi.value.reshape(()).item()
            return TV(layout.shape, layout.dtype, lambda idx, v=value, d=layout.dtype: Const(v, d))
        role = gi.kind
        if role == "constant" and gi.value is None:
            role = "buffer"  # a plain tensor attribute of the model: read by its name, like a buffer
        return self.add(InputNode(node.name, layout, role=role, target=gi.target,
                                  value=gi.value if role == "constant" else None))

    def _arg(self, a: Any) -> Any:
        if isinstance(a, fx.Node):
            if a not in self.values:
                raise ExpertDecline(f"{a.name} is used before it is computed")
            return self.values[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self._arg(x) for x in a)
        return a

    def _call(self, node: fx.Node) -> Any:
        target = node.target
        if target is operator.getitem:
            base, index = node.args
            return self._arg(base)[index]
        name = op_name(target)
        packet = name.rsplit(".", 1)[0] if name.count(".") >= 2 else name
        short = packet.split(".")[-1]
        if short in RANDOM_OPS or (short == "native_dropout" and node.args and len(node.args) > 2 and node.args[2]):
            raise ExpertDecline(f"the reference draws random numbers ({packet}): no candidate can reproduce them")
        if short.startswith("_assert") or short in ("sym_constrain_range_for_size", "_local_scalar_dense_check"):
            return None
        args = [self._arg(a) for a in node.args]
        kwargs = {k: self._arg(v) for k, v in node.kwargs.items()}
        if _complex_node(node, args):
            from agents.expert.ir.lower_complex import lower_complex

            return lower_complex(self, node, name, args, kwargs)
        fn = LOWERINGS.get(name) or LOWERINGS.get(packet)
        result = fn(self, node, *args, **kwargs) if fn is not None else None
        if result is None:
            result = extern(self, node, args, kwargs)
        if isinstance(result, TV) and result.view is None and len(node.users) > 1 and _expensive(result):
            result = self.realize(result, node.name)
        return result


def _complex_node(node: fx.Node, args: list[Any]) -> bool:
    val = node.meta.get("val")
    return (isinstance(val, torch.Tensor) and val.dtype.is_complex) or any(
        isinstance(a, TV) and a.complex for a in args)


def _live(nodes: dict[str, Node], outputs: list[View], mutations: list[View]) -> dict[str, Node]:
    """The nodes the outputs and mutations need (a realized value nobody reads is dropped)."""
    from agents.expert.ir.expr import walk
    from agents.expert.ir.nodes import ScatterNode

    need = {v.buffer for v in outputs + mutations}
    for name in reversed(list(nodes)):
        node = nodes[name]
        extern_out = isinstance(node, ExternNode) and any(f"{name}_{k}" in need for k in range(1, len(node.extra) + 1))
        if (name not in need and not extern_out) or isinstance(node, InputNode):  # an input's value is data
            continue
        exprs = [getattr(node, a, None) for a in ("body", "a", "b", "bias", "value", "mask")]
        for e in exprs:
            if e is not None:
                need |= {x.buffer for x in walk(e) if hasattr(x, "buffer")}
        if isinstance(node, ScatterNode):
            need.add(node.target)
            need |= {x.buffer for atom in node.index.indirects() for x in walk(atom.value) if hasattr(x, "buffer")}
        if isinstance(node, ExternNode):
            need |= {v.buffer for v in _flat_views(list(node.args) + list(node.kwargs.values()))}
    return {k: v for k, v in nodes.items() if k in need or isinstance(v, InputNode)}


def _flat_views(items: list[Any]) -> list[View]:
    out: list[View] = []
    for a in items:
        if isinstance(a, View):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out += _flat_views(list(a))
    return out


def _expensive(tv: TV) -> bool:
    probe = tv.at([Var(f"_probe{k}", s) for k, s in enumerate(tv.shape)])
    return len({ld.buffer for ld in loads_of(probe)}) >= REALIZE_READS or op_count(probe) >= REALIZE_OPS


def extern(lw: Lowering, node: fx.Node, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """A torch call for an op the codegen does not compute: its tensor inputs are realized."""
    def conv(a: Any) -> Any:
        if isinstance(a, TV):
            return lw.as_view(a, f"{node.name}_in")
        if isinstance(a, (list, tuple)):
            return type(a)(conv(x) for x in a)
        return a

    cargs = tuple(conv(a) for a in args)
    ckw = {k: conv(v) for k, v in kwargs.items()}
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        layout = meta_layout(node, val)
        return lw.add(ExternNode(lw.fresh(node.name), layout, target=op_name(node.target), args=cargs, kwargs=ckw))
    if isinstance(val, (tuple, list)) and val and all(isinstance(v, torch.Tensor) for v in val):
        layouts = [meta_layout(node, v) for v in val]
        name = lw.fresh(node.name)
        ext = ExternNode(name, layouts[0], target=op_name(node.target), args=cargs, kwargs=ckw, extra=layouts[1:])
        first = lw.add(ext)
        rest = [from_view(View(f"{name}_{k}", lay)) for k, lay in enumerate(layouts[1:], 1)]
        return (first, *rest)
    raise ExpertDecline(f"{op_name(node.target)} ({node.name}) returns {type(val).__name__}, not tensors")


def lower_graph(cg: Any, options: LowerOptions | None = None) -> IRGraph:
    from agents.expert.ir import (  # noqa: F401 - importing registers the lowerings
        lower_conv,
        lower_indexing,
        lower_matmul,
        lower_pointwise,
        lower_reduce,
        lower_select,
        lower_views,
        lower_windows,
    )

    return Lowering(cg, options or LowerOptions()).run()
