"""Kernels: what the scheduler builds and the templates render.

A :class:`Kernel` iterates one domain (``xnumel`` rows by ``rnumel`` reduced elements) over a
list of IR nodes; :func:`resolve` rewrites their bodies into the kernel's index atoms
(``xindex``, ``rindex``), replacing every load of a buffer the kernel itself produces: a
pointwise producer is recomputed at the loaded index (its body inlined), a reduction/scan/matmul
result is used from registers (:class:`~agents.expert.ir.expr.Ref`) where the load reads exactly
the element that lane computed - anything else raises :class:`NotFusable`, which is the fusion
rule the scheduler relies on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import structlog

from agents.expert.chain import second_stage
from agents.expert.ir.expr import Expr, Load, Ref, substitute
from agents.expert.ir.index import Affine, Var, row_major, simplify_divmod, unravel
from agents.expert.ir.nodes import (
    ExternNode,
    IRGraph,
    Layout,
    MatmulNode,
    Node,
    PointwiseNode,
    ReductionNode,
    ScanNode,
    ScatterNode,
)

log = structlog.get_logger(__name__)


class NotFusable(Exception):
    """This node cannot join this kernel (the message says why, for debugging)."""


@dataclass
class Store:
    buffer: str
    index: Affine  # kernel atoms
    value: Expr  # resolved: in kernel atoms, in-kernel producers inlined or Ref'd
    dtype: str
    role: str  # full | x | scan | matmul


@dataclass
class Reduction:
    name: str
    rtype: str
    body: Expr
    mask: Expr | None
    dtype: str  # the node's output dtype (a Ref is rounded to it)
    acc: str  # accumulation dtype (the body's)
    k: int = 0  # kth_largest / kth_smallest: the order statistic


@dataclass(eq=False)
class Kernel:
    kind: str  # pointwise | reduction | scan | matmul | scatter
    domain: tuple[tuple[int, bool], ...]  # (size, reduced) with size-1 dims dropped
    nodes: list[Node] = field(default_factory=list)
    name: str = ""
    # filled by resolve():
    xnumel: int = 1
    rnumel: int = 1
    reductions: list[Reduction] = field(default_factory=list)
    stores: list[Store] = field(default_factory=list)
    scan: Any = None  # (name, stype, body, dtype)
    matmul: Any = None  # the resolved MatmulNode (A/B/bias bodies in its own vars)
    # a chained second GEMM (schedule.Policy.chain_gemms): (its MatmulNode, its A operand resolved over the
    # first GEMM's (*bvars, mvar, nvar): the first GEMM's epilogue tile, in registers); its store and its
    # epilogue's have roles "chain" and "chain_full", over its own vars
    chained: Any = None
    scatter: Any = None  # (target, index, value, domain)
    reads: set[str] = field(default_factory=set)  # buffers loaded from memory
    parts: list[Kernel] = field(default_factory=list)  # a combo kernel's independent sub-kernels
    produced: dict[str, Node] = field(default_factory=dict)


@dataclass(eq=False)
class ExternStep:
    node: ExternNode


@dataclass
class Program:
    graph: IRGraph
    steps: list[Kernel | ExternStep]
    stored: set[str]  # buffers some kernel stores (and the launcher allocates)

    @property
    def kernels(self) -> list[Kernel]:
        return [s for s in self.steps if isinstance(s, Kernel)]

    def externs(self) -> list[ExternNode]:
        return [s.node for s in self.steps if isinstance(s, ExternStep)]



# -- domains ------------------------------------------------------------------------------------

def _squeeze(domain: tuple[int, ...], reduced: tuple[bool, ...]) -> tuple[tuple[int, bool], ...]:
    return tuple((s, r) for s, r in zip(domain, reduced) if s != 1)


def node_domain(node: Node) -> tuple[str, tuple[tuple[int, bool], ...]]:
    if isinstance(node, ReductionNode):
        return "reduction", _squeeze(node.domain, node.reduced)
    if isinstance(node, ScanNode):
        shape = node.layout.shape
        return "scan", _squeeze(shape, tuple(i == node.axis for i in range(len(shape))))
    if isinstance(node, MatmulNode):
        return "matmul", ((node.layout.numel, False),)
    if isinstance(node, ScatterNode):
        return "scatter", ((math.prod(node.domain), False),)
    return "pointwise", ((node.layout.numel, False),)


def numels(domain: tuple[tuple[int, bool], ...]) -> tuple[int, int]:
    x = math.prod(s for s, r in domain if not r)
    r = math.prod(s for s, r in domain if r)
    return x, r


# -- resolution: a kernel's nodes in kernel atoms ------------------------------------------------

def _unravel_dense(addr: Affine, layout: Layout) -> list[Affine]:
    if not layout.is_dense():
        raise NotFusable("the producer's layout is not dense")
    rel = addr - layout.offset
    out = []
    for size, stride in zip(layout.shape, layout.stride):
        out.append(Affine.of(0) if size == 1 else simplify_divmod(rel, stride, size))
    return out


def _kernel_atoms(k: Kernel) -> tuple[list[Affine], list[int]]:
    """One affine atom expression per (squeezed) domain dim: x dims from xindex, r dims from rindex."""
    xs = [s for s, r in k.domain if not r]
    rs = [s for s, r in k.domain if r]
    xa = unravel(Affine.of(Var("xindex", k.xnumel)), xs) if xs else []
    ra = unravel(Affine.of(Var("rindex", k.rnumel)), rs) if rs else []
    out, sizes = [], []
    xi = ri = 0
    for s, r in k.domain:
        if r:
            out.append(ra[ri])
            ri += 1
        else:
            out.append(xa[xi])
            xi += 1
        sizes.append(s)
    return out, sizes


def _node_env(k: Kernel, node: Node, atoms: list[Affine], sizes: list[int]) -> dict[Var, Affine]:
    if isinstance(node, (ReductionNode, ScanNode)):
        dims = node.domain if isinstance(node, ReductionNode) else node.layout.shape
        env: dict[Var, Affine] = {}
        it = iter(atoms)
        for v, s in zip(node.vars, dims):
            env[v] = Affine.of(0) if s == 1 else next(it)
        return env
    if isinstance(node, MatmulNode):
        return {}
    assert isinstance(node, PointwiseNode)
    numel = node.layout.numel
    if numel == k.xnumel * k.rnumel:
        flat = row_major(atoms, sizes)
    elif numel == k.xnumel:
        flat = Affine.of(Var("xindex", k.xnumel))
    else:
        raise NotFusable(f"{node.name} has {numel} elements, the kernel {k.xnumel} x {k.rnumel}")
    if node.layout.is_dense():  # storage order: a permuted output (NHWC memory of an NCHW view) maps too
        return dict(zip(node.vars, _unravel_dense(flat + node.layout.offset, node.layout)))
    return dict(zip(node.vars, unravel(flat, list(node.layout.shape))))


def _store_index(node: Node, env: dict[Var, Affine], k: Kernel) -> Affine:
    if isinstance(node, ReductionNode):
        xs = [env[v] for v, s, r in zip(node.vars, node.domain, node.reduced) if not r]
        return node.layout.index(node.out_index(xs))
    if isinstance(node, MatmulNode):
        return node.layout.index([*node.bvars, node.mvar, node.nvar])
    return node.layout.index([env[v] for v in node.vars])  # type: ignore[attr-defined]


def _pinned(index: Affine) -> Affine:
    """``index`` with its size-1 vars at their one value, 0 (a broadcast reads them as 0 already)."""
    ones = {v: Affine.of(0) for v in index.vars() if v.size == 1}
    return index.subs(ones) if ones else index


def _logical(k: Kernel, node: PointwiseNode) -> dict[Var, Affine] | None:
    """The epilogue lane map of a pointwise node over a GEMM's logical output (``out_index``)."""
    mm = next(x for x in k.nodes if isinstance(x, MatmulNode))
    if mm.out_index is None or tuple(node.layout.shape) != mm.out_shape:
        return None
    return dict(zip(node.vars, mm.out_index))


def _onto_first(first: MatmulNode, second: MatmulNode) -> dict[Var, Affine]:
    """A chained GEMM's operand vars onto the first GEMM's tile: its rows are the first's rows, its K
    the first's N."""
    env = {v: Affine.of(w) for v, w in zip(second.bvars, first.bvars)}
    return {**env, second.mvar: Affine.of(first.mvar), second.kvar: Affine.of(first.nvar)}


def resolve(k: Kernel, graph: IRGraph) -> None:
    """Fill ``k``'s reductions/stores with bodies in kernel atoms; NotFusable if a load of an
    in-kernel producer cannot be served from registers."""
    k.xnumel, k.rnumel = numels(k.domain)
    gemms = [n for n in k.nodes if isinstance(n, MatmulNode)]
    if k.kind == "matmul":
        k.xnumel, k.rnumel = gemms[0].layout.numel, 1
    second = second_stage(k.nodes)  # a chained GEMM's tile and its epilogue (chain.py)

    def gemm_of(node: Node) -> MatmulNode:  # the GEMM whose output tile ``node`` is computed over
        return gemms[1] if node.name in second else gemms[0]
    atoms, sizes = _kernel_atoms(k) if k.kind != "matmul" else ([], [])
    by_name = {n.name: n for n in k.nodes}
    envs: dict[str, dict[Var, Affine]] = {}
    store_at: dict[str, Affine] = {}
    for n in k.nodes:
        if isinstance(n, ScatterNode):
            envs[n.name] = {}
            continue
        if k.kind == "matmul" and isinstance(n, ReductionNode):  # a row reduction over N
            mm = gemm_of(n)
            row = row_major([Affine.of(v) for v in (*mm.bvars, mm.mvar)], [*mm.batch, mm.m])
            lead = unravel(row, list(n.domain[:-1]))
            envs[n.name] = {**dict(zip(n.vars[:-1], lead)), n.vars[-1]: Affine.of(mm.nvar)}
        elif k.kind == "matmul" and isinstance(n, PointwiseNode) and (logical := _logical(k, n)) is not None:
            envs[n.name] = logical  # an epilogue over the GEMM's logical output (interleaved phases)
        elif k.kind == "matmul" and isinstance(n, PointwiseNode):
            mm = gemm_of(n)
            dims = [*mm.bvars, mm.mvar, mm.nvar] if n.layout.numel == mm.layout.numel else [*mm.bvars, mm.mvar]
            if n.layout.numel not in (mm.layout.numel, mm.layout.numel // mm.n):
                raise NotFusable("an epilogue of another size")
            flat = row_major([Affine.of(v) for v in dims], [v.size for v in dims])
            if n.layout.is_dense():
                envs[n.name] = dict(zip(n.vars, _unravel_dense(flat + n.layout.offset, n.layout)))
            else:
                envs[n.name] = dict(zip(n.vars, unravel(flat, list(n.layout.shape))))
        else:
            envs[n.name] = _node_env(k, n, atoms, sizes)
        store_at[n.name] = _store_index(n, envs[n.name], k)
    reads: set[str] = set()
    position = {n.name: i for i, n in enumerate(k.nodes)}

    def resolved(expr: Expr, env: dict[Var, Affine], at: int, depth: int = 0) -> Expr:
        if depth > 64:
            raise NotFusable("inlining too deep")

        def on_load(load: Load, index: Affine) -> Expr:
            q = by_name.get(load.buffer)
            if q is None or position[q.name] >= at:
                if q is not None:
                    raise NotFusable(f"{load.buffer} is read before it is computed")
                reads.add(load.buffer)
                return Load(load.buffer, index, load.dtype)
            if isinstance(q, PointwiseNode):
                qenv = dict(zip(q.vars, _unravel_dense(index, q.layout)))
                assert q.body is not None
                return resolved(q.body, qenv, position[q.name], depth + 1)
            if _pinned(index) != _pinned(store_at[q.name]):
                raise NotFusable(f"{load.buffer} is read at another element than the one this lane computed")
            return Ref(q.name, q.layout.dtype)

        return substitute(expr, env, on_load)

    k.reductions, k.stores, k.scan, k.matmul, k.scatter, k.chained = [], [], None, None, None, None
    for i, n in enumerate(k.nodes):
        env = envs[n.name]
        if isinstance(n, ReductionNode):
            assert n.body is not None
            mask = resolved(n.mask, env, i) if n.mask is not None else None
            k.reductions.append(Reduction(n.name, n.rtype, resolved(n.body, env, i), mask, n.layout.dtype,
                                          n.body.dtype, n.k))
            k.stores.append(Store(n.name, store_at[n.name], Ref(n.name, n.layout.dtype), n.layout.dtype, "x"))
        elif isinstance(n, ScanNode):
            assert n.body is not None
            k.scan = (n.name, n.stype, resolved(n.body, env, i), n.layout.dtype, n.reverse)
            k.stores.append(Store(n.name, store_at[n.name], Ref(n.name, n.layout.dtype), n.layout.dtype, "scan"))
        elif isinstance(n, MatmulNode) and n is not gemms[0]:  # a chained GEMM: A from the first one's tile
            for e in (n.b, n.bias):
                if e is not None:
                    resolved(e, {}, i)  # records the reads (chain.chains: they never read the kernel itself)
            assert n.a is not None
            k.chained = (n, resolved(n.a, _onto_first(gemms[0], n), i))
            k.stores.append(Store(n.name, store_at[n.name], Ref(n.name, n.layout.dtype), n.layout.dtype, "chain"))
        elif isinstance(n, MatmulNode):
            k.matmul = n
            for e in (n.a, n.b, n.bias):
                if e is not None:
                    resolved(e, {}, i)  # records the reads; prologues never read the kernel itself
            k.stores.append(Store(n.name, store_at[n.name], Ref(n.name, n.layout.dtype), n.layout.dtype, "matmul"))
        elif isinstance(n, ScatterNode):
            assert n.value is not None
            value = resolved(n.value, {v: Affine.of(v) for v in n.vars}, i)
            index = n.index  # destination: in the scatter's own vars
            for atom in index.indirects():
                resolved(atom.value, {}, i)
            k.scatter = (n.target, index, value, n)
            reads.add(n.target)
        else:
            assert isinstance(n, PointwiseNode) and n.body is not None
            if k.kind == "matmul" and n.name in second:
                role = "chain_full"  # the second GEMM's epilogue (schedule: its full outputs only)
            elif k.kind == "matmul":
                role = "x" if n.layout.numel != gemms[0].layout.numel else "full"
            else:
                role = "x" if k.kind == "reduction" and n.layout.numel == k.xnumel and n.layout.numel != \
                    k.xnumel * k.rnumel else "full"
            k.stores.append(Store(n.name, store_at[n.name], resolved(n.body, env, i), n.layout.dtype, role))
    k.reads = reads


