"""The fusion scheduler: IR nodes -> kernels (Inductor's scheduler, small).

A kernel iterates one *domain*: ``xnumel`` output rows (``xindex``) times ``rnumel`` reduced
elements (``rindex``; 1 for pointwise kernels). Nodes join a kernel in one of these roles:

* a **reduction** node whose domain equals the kernel's (size-1 dims ignored);
* a **full** pointwise node: as many elements as the whole domain (row-major correspondence:
  its flat index is the domain's flat index) - an elementwise prologue/epilogue over the rows;
* an **x-only** pointwise node: as many elements as the output rows (``rsqrt(var + eps)``);
* the one **scan** of a scan kernel, or the one **matmul** of a matmul kernel (then only full
  pointwise nodes: the epilogue).

Inside a kernel a load of a buffer produced by the same kernel never touches memory: a pointwise
producer is recomputed at the loaded index (its body inlined), and a reduction/scan/matmul result
is used from registers (:class:`~agents.expert.ir.expr.Ref`), which is legal only where the load
reads exactly the element that lane produced (the load index equals the store index): that check
is the fusion rule. Nodes are placed greedily in graph order: into the kernel that produces most
of what they read, else into a kernel of the same domain that reads the same inputs (horizontal
fusion: several reductions of the same rows), else a new kernel; no placement may create a cycle
between kernels. A buffer is stored only if something outside its kernel reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from agents.expert.ir.expr import Expr, Load, Ref, substitute
from agents.expert.ir.index import Affine, Var, row_major, simplify_divmod, unravel
from agents.expert.ir.nodes import (
    ExternNode,
    InputNode,
    IRGraph,
    Layout,
    MatmulNode,
    Node,
    PointwiseNode,
    ReductionNode,
    ScanNode,
    ScatterNode,
)


class NotFusable(Exception):
    """This node cannot join this kernel (the message says why, for debugging)."""


@dataclass(frozen=True)
class Policy:
    """What the scheduler may fuse (the designer's structural variants differ here)."""

    fuse_reductions: bool = True  # several reductions and their epilogues in one kernel


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
    scatter: Any = None  # (target, index, value, domain)
    reads: set[str] = field(default_factory=set)  # buffers loaded from memory
    produced: dict[str, Node] = field(default_factory=dict)

    @property
    def xvar(self) -> Var:
        return Var("xindex", self.xnumel)

    @property
    def rvar(self) -> Var:
        return Var("rindex", self.rnumel)


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


def _numels(domain: tuple[tuple[int, bool], ...]) -> tuple[int, int]:
    x = math.prod(s for s, r in domain if not r)
    r = math.prod(s for s, r in domain if r)
    return x, r


class _Placer:
    def __init__(self, graph: IRGraph, policy: Policy) -> None:
        self.graph = graph
        self.policy = policy
        self.kernels: list[Kernel] = []
        self.steps: list[Kernel | ExternStep] = []
        self.producer: dict[str, Kernel | ExternStep] = {}
        self.deps: dict[int, set[int]] = {}  # id(step) -> ids of steps it reads from

    def step_id(self, s: Kernel | ExternStep) -> int:
        return id(s)

    def reads_of(self, node: Node) -> set[str]:
        if isinstance(node, ExternNode):
            return {v.buffer for v in _views(node.args) + _views(list(node.kwargs.values()))}
        exprs: list[Expr] = []
        for attr in ("body", "a", "b", "bias", "value", "mask"):
            e = getattr(node, attr, None)
            if isinstance(e, Expr):
                exprs.append(e)
        out: set[str] = set()
        from agents.expert.ir.expr import walk

        for e in exprs:
            out |= {x.buffer for x in walk(e) if isinstance(x, Load)}
        if isinstance(node, ScatterNode):
            out.add(node.target)
        return out

    def ancestors(self, sid: int) -> set[int]:
        seen: set[int] = set()
        stack = [sid]
        while stack:
            cur = stack.pop()
            for d in self.deps.get(cur, ()):
                if d not in seen:
                    seen.add(d)
                    stack.append(d)
        return seen

    def place(self, node: Node) -> None:
        reads = self.reads_of(node)
        producers = {self.producer[b] for b in reads if b in self.producer}
        if isinstance(node, ExternNode):
            step = ExternStep(node)
            self._commit(step, node, producers)
            return
        kind, domain = node_domain(node)
        ordered = sorted(producers, key=lambda s: -sum(1 for b in reads if self.producer.get(b) is s))
        candidates = [s for s in ordered if isinstance(s, Kernel)]
        # horizontal: the latest kernels of the same domain that read the same inputs
        for k in reversed(self.kernels[-8:]):
            if k not in candidates and k.domain == domain and (k.reads & reads or kind == "reduction"):
                candidates.append(k)
        for k in candidates:
            if self._acyclic(k, producers) and self._try_join(k, node, kind, domain):
                self._commit(k, node, producers)
                return
        k = Kernel(kind, domain)
        if not self._try_join(k, node, kind, domain):
            raise NotFusable(f"{node.name} cannot start a kernel of its own")
        self.kernels.append(k)
        self._commit(k, node, producers)

    def _acyclic(self, k: Kernel, producers: set[Any]) -> bool:
        kid = id(k)
        return all(p is k or kid not in self.ancestors(id(p)) for p in producers)

    def _commit(self, step: Kernel | ExternStep, node: Node, producers: set[Any]) -> None:
        if step not in self.steps:
            self.steps.append(step)
        sid = id(step)
        self.deps.setdefault(sid, set()).update(id(p) for p in producers if p is not step)
        self.producer[node.name] = step
        if isinstance(node, ExternNode):
            for k in range(1, len(node.extra) + 1):
                self.producer[f"{node.name}_{k}"] = step
        if isinstance(step, Kernel):
            step.produced[node.name] = node
            step.nodes.append(node)

    def _try_join(self, k: Kernel, node: Node, kind: str, domain: tuple[tuple[int, bool], ...]) -> bool:
        trial = Kernel(k.kind, k.domain, list(k.nodes))
        if not _compatible(trial, node, kind, domain, self.policy):
            return False
        trial.nodes.append(node)
        if trial.kind == "pointwise" and kind in ("reduction", "scan"):
            trial.kind, trial.domain = kind, domain
        try:
            resolve(trial, self.graph)
        except NotFusable:
            return False
        k.kind, k.domain = trial.kind, trial.domain
        return True


def _views(items: Any) -> list[Any]:
    from agents.expert.ir.nodes import View

    out: list[Any] = []
    for a in items if isinstance(items, (list, tuple)) else [items]:
        if isinstance(a, View):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out += _views(a)
    return out


def _compatible(k: Kernel, node: Node, kind: str, domain: tuple[tuple[int, bool], ...], policy: Policy) -> bool:
    if not k.nodes:
        return True
    xn, rn = _numels(k.domain)
    has_red = any(isinstance(n, ReductionNode) for n in k.nodes)
    if kind == "pointwise":
        numel = node.layout.numel
        if k.kind in ("matmul", "scan", "pointwise"):
            return numel == xn * rn
        if k.kind == "reduction":
            if not policy.fuse_reductions and numel == xn * rn and rn > 1:
                return False
            return numel in (xn * rn, xn)
        return False
    if kind == "reduction":
        if k.kind == "reduction":
            if k.domain != domain:
                return False
            if not policy.fuse_reductions:
                return all(isinstance(n, ReductionNode) and _welford_pair(n, node) for n in k.nodes)
            return True
        if k.kind == "pointwise" and not has_red:
            xr, rr = _numels(domain)
            return policy.fuse_reductions and all(n.layout.numel in (xr * rr, xr) for n in k.nodes)
        return False
    return False


def _welford_pair(a: Node, b: Node) -> bool:
    return (isinstance(a, ReductionNode) and isinstance(b, ReductionNode) and a.rtype.startswith("welford")
            and b.rtype.startswith("welford") and a.body is b.body)


# -- resolution: a kernel's nodes in kernel atoms ------------------------------------------------

def _unravel_dense(addr: Affine, layout: Layout) -> list[Affine]:
    if not layout.is_dense():
        raise NotFusable("the producer's layout is not dense")
    rel = addr - layout.offset
    out = []
    for size, stride in zip(layout.shape, layout.stride):
        out.append(Affine.of(0) if size == 1 else simplify_divmod(rel, stride, size))
    return out


def _kernel_atoms(k: Kernel) -> tuple[list[Affine], list[int], list[bool]]:
    """One affine atom expression per (squeezed) domain dim: x dims from xindex, r dims from rindex."""
    xs = [s for s, r in k.domain if not r]
    rs = [s for s, r in k.domain if r]
    xa = unravel(Affine.of(Var("xindex", k.xnumel)), xs) if xs else []
    ra = unravel(Affine.of(Var("rindex", k.rnumel)), rs) if rs else []
    out, sizes, flags = [], [], []
    xi = ri = 0
    for s, r in k.domain:
        if r:
            out.append(ra[ri])
            ri += 1
        else:
            out.append(xa[xi])
            xi += 1
        sizes.append(s)
        flags.append(r)
    return out, sizes, flags


def _node_env(k: Kernel, node: Node, atoms: list[Affine], sizes: list[int], flags: list[bool]) -> dict[Var, Affine]:
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
    return dict(zip(node.vars, unravel(flat, list(node.layout.shape))))


def _store_index(node: Node, env: dict[Var, Affine], k: Kernel) -> Affine:
    if isinstance(node, ReductionNode):
        xs = [env[v] for v, s, r in zip(node.vars, node.domain, node.reduced) if not r]
        return node.layout.index(node.out_index(xs))
    if isinstance(node, MatmulNode):
        return node.layout.index([*node.bvars, node.mvar, node.nvar])
    return node.layout.index([env[v] for v in node.vars])  # type: ignore[attr-defined]


def resolve(k: Kernel, graph: IRGraph) -> None:
    """Fill ``k``'s reductions/stores with bodies in kernel atoms; NotFusable if a load of an
    in-kernel producer cannot be served from registers."""
    k.xnumel, k.rnumel = _numels(k.domain)
    if k.kind == "matmul":
        mm = next(n for n in k.nodes if isinstance(n, MatmulNode))
        k.xnumel, k.rnumel = mm.layout.numel, 1
    atoms, sizes, flags = _kernel_atoms(k) if k.kind != "matmul" else ([], [], [])
    by_name = {n.name: n for n in k.nodes}
    envs: dict[str, dict[Var, Affine]] = {}
    store_at: dict[str, Affine] = {}
    for n in k.nodes:
        if k.kind == "matmul" and isinstance(n, PointwiseNode):
            mm = next(x for x in k.nodes if isinstance(x, MatmulNode))
            flat = row_major([Affine.of(v) for v in (*mm.bvars, mm.mvar, mm.nvar)], [*mm.batch, mm.m, mm.n])
            if n.layout.numel != mm.layout.numel:
                raise NotFusable("an epilogue of another size")
            envs[n.name] = dict(zip(n.vars, unravel(flat, list(n.layout.shape))))
        else:
            envs[n.name] = _node_env(k, n, atoms, sizes, flags)
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
            if index != store_at[q.name]:
                raise NotFusable(f"{load.buffer} is read at another element than the one this lane computed")
            return Ref(q.name, q.layout.dtype)

        return substitute(expr, env, on_load)

    k.reductions, k.stores, k.scan, k.matmul, k.scatter = [], [], None, None, None
    for i, n in enumerate(k.nodes):
        env = envs[n.name]
        if isinstance(n, ReductionNode):
            assert n.body is not None
            mask = resolved(n.mask, env, i) if n.mask is not None else None
            k.reductions.append(Reduction(n.name, n.rtype, resolved(n.body, env, i), mask, n.layout.dtype,
                                          n.body.dtype))
            k.stores.append(Store(n.name, store_at[n.name], Ref(n.name, n.layout.dtype), n.layout.dtype, "x"))
        elif isinstance(n, ScanNode):
            assert n.body is not None
            k.scan = (n.name, n.stype, resolved(n.body, env, i), n.layout.dtype)
            k.stores.append(Store(n.name, store_at[n.name], Ref(n.name, n.layout.dtype), n.layout.dtype, "scan"))
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
            role = "x" if k.kind == "reduction" and n.layout.numel == k.xnumel and n.layout.numel != k.xnumel * k.rnumel else "full"
            k.stores.append(Store(n.name, store_at[n.name], resolved(n.body, env, i), n.layout.dtype, role))
    k.reads = reads


# -- the program ----------------------------------------------------------------------------------

def schedule(graph: IRGraph, policy: Policy | None = None) -> Program:
    placer = _Placer(graph, policy or Policy())
    for node in graph.nodes.values():
        if isinstance(node, InputNode):
            continue
        placer.place(node)
    steps = _toposort(placer)
    for i, step in enumerate(steps):
        if isinstance(step, Kernel):
            resolve(step, graph)
            step.name = _kernel_name(step, i)
    stored = _needed(graph, steps)
    for step in steps:
        if isinstance(step, Kernel):
            step.stores = [s for s in step.stores if s.buffer in stored]
    return Program(graph, steps, stored)


def _toposort(placer: _Placer) -> list[Kernel | ExternStep]:
    order: list[Kernel | ExternStep] = []
    done: set[int] = set()
    by_id = {id(s): s for s in placer.steps}

    def visit(s: Kernel | ExternStep, stack: set[int]) -> None:
        sid = id(s)
        if sid in done:
            return
        if sid in stack:
            raise NotFusable("the kernels depend on each other in a cycle")
        stack.add(sid)
        for d in sorted(placer.deps.get(sid, ()), key=lambda x: placer.steps.index(by_id[x])):
            visit(by_id[d], stack)
        stack.discard(sid)
        done.add(sid)
        order.append(s)

    for s in placer.steps:
        visit(s, set())
    return order


def _needed(graph: IRGraph, steps: list[Kernel | ExternStep]) -> set[str]:
    need = {v.buffer for v in graph.outputs} | {v.buffer for v in graph.mutations.values()}
    for s in steps:
        if isinstance(s, Kernel):
            need |= s.reads
            if s.scatter is not None:
                need.add(s.scatter[0])
        else:
            need |= {v.buffer for v in _views(list(s.node.args)) + _views(list(s.node.kwargs.values()))}
    # a scatter writes into its target's storage: whoever reads the scatter reads the target
    for node in graph.nodes.values():
        if isinstance(node, ScatterNode) and node.name in need:
            need.add(node.target)
    return need


def _kernel_name(k: Kernel, i: int) -> str:
    ops: list[str] = []
    for n in k.nodes:
        base = n.name.rstrip("0123456789_") or n.kind
        if base not in ops:
            ops.append(base)
    text = "_".join(ops[:3]) + ("_etc" if len(ops) > 3 else "")
    return f"_egg_{k.kind[:3]}{i}_{text}"[:60]
