"""The fusion scheduler: IR nodes -> kernels (Inductor's scheduler, small).

A kernel iterates one *domain*: ``xnumel`` output rows (``xindex``) times ``rnumel`` reduced
elements (``rindex``; 1 for pointwise kernels). Nodes join a kernel in one of these roles:

* a **reduction** node whose domain equals the kernel's (size-1 dims ignored);
* a **full** pointwise node: as many elements as the whole domain (row-major correspondence:
  its flat index is the domain's flat index) - an elementwise prologue/epilogue over the rows;
* an **x-only** pointwise node: as many elements as the output rows (``rsqrt(var + eps)``);
* the one **scan** of a scan kernel, or the one **matmul** of a matmul kernel (then only full
  pointwise nodes: the epilogue; row reductions where a row fits one tile; with
  ``Policy.chain_gemms``, one second GEMM reading that tile as its A operand, and its own
  epilogue: ``chain.py``).

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
from dataclasses import dataclass
from typing import Any

import structlog

from agents.expert.chain import ROW_TILE, chains, passes_over_n, second_gemm, second_stage
from agents.expert.ir.expr import Expr, Load
from agents.expert.ir.nodes import ExternNode, InputNode, IRGraph, MatmulNode, Node, ReductionNode, ScatterNode
from agents.expert.kernel import (
    ExternStep,
    Kernel,
    NotFusable,
    Program,
    numels,
    node_domain,
    resolve,
)
from agents.expert.templates.pointwise import flat_lane_stride, transposed_place
from agents.expert.templates.reduction_order import COLUMN_XBLOCK, column_major

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Policy:
    """What the scheduler may fuse (the designer's structural variants differ here)."""

    fuse_reductions: bool = True  # several reductions and their epilogues in one kernel
    combos: bool = True  # independent pointwise kernels of one wave share a launch
    chain_gemms: bool = False  # a GEMM whose A operand is another GEMM's row-tile epilogue joins its kernel
    # a GEMM's rows longer than one tile keep their row reductions (and a chained GEMM) in its kernel, as
    # passes over N, each block's tile from its own K loop (templates/matmul_rows.py: flash attention in one)
    row_passes: bool = False


FLAT_STRIDE_MAX = 8  # a large combo part's lanes less than this many elements apart (8 fp32: one 32-byte sector)
FLAT_STRIDE_NUMEL = 1 << 20  # ... where a part has at least this many elements
SPLIT_TYPES = frozenset({"sum", "max", "min", "any", "all", "welford_mean", "welford_m2"})
SPLIT_MIN_CHUNK = 1024  # a split row's chunks keep at least this many elements (a chunk is one stage-1 program's work)
# A column-major reduction's program takes COLUMN_XBLOCK outputs, so its chunks may be shorter: one of
# 256 rows is still 64K elements of work (a batch norm's statistics over a 16384 x 4096 GEMM output).
SPLIT_MIN_COLUMN_CHUNK = 256


@dataclass(frozen=True)
class SplitRule:
    """When a reduction is split, and into how many chunks (the packs' constants on the target's SM
    count: ``algorithm-structure/split-reduction-*``); hashable, so analyses cache by it."""

    sm_count: int = 132
    max_rows_per_sm: float = 2.0
    min_length: int = 8192
    programs_per_sm: int = 8

    @classmethod
    def of(cls, target: Any) -> SplitRule:
        from agents.expert.target import SPLIT_MAX_ROWS_PER_SM, SPLIT_MIN_LENGTH, SPLIT_PROGRAMS_PER_SM, as_target

        t = as_target(target)
        return cls(t.sm_count, float(t.const(SPLIT_MAX_ROWS_PER_SM)), int(t.const(SPLIT_MIN_LENGTH)),
                   int(t.const(SPLIT_PROGRAMS_PER_SM)))

    def applies(self, xnumel: int, rnumel: int, column: bool = False) -> bool:
        """Few programs (rows; a column-major kernel's blocks of COLUMN_XBLOCK outputs) over a long
        reduced extent."""
        return self._programs(xnumel, column) < self.max_rows_per_sm * self.sm_count and rnumel >= self.min_length

    def splits(self, xnumel: int, rnumel: int, column: bool = False) -> int:
        """Chunks per row: doubled until the first stage has ``programs_per_sm`` programs per SM."""
        n, programs = 1, self._programs(xnumel, column)
        least = SPLIT_MIN_COLUMN_CHUNK if column else SPLIT_MIN_CHUNK
        while programs * n < self.programs_per_sm * self.sm_count and rnumel // (n * 2) >= least:
            n *= 2
        return n

    @staticmethod
    def _programs(xnumel: int, column: bool) -> int:
        # before 2026-12-05 a column-major kernel counted its outputs as rows: KernelBench level 2 #41's
        # batch norm over a 16384 x 4096 GEMM output (4096 outputs) was never split and ran as 16
        # programs on the H100's 132 SMs
        return -(-xnumel // COLUMN_XBLOCK) if column else xnumel


def split_candidates(program: Program, rule: SplitRule | None = None) -> tuple[tuple[str, int], ...]:
    """Reductions to split (Inductor's split reduction) and their chunks per row: those of a kernel
    with few long rows (``rule``) whose reductions do not feed one another. A softmax over a few long
    rows stays one looped kernel: splitting its max would cut the max/sum fusion, and a loss or
    batch-norm statistics over few rows get the parallelism of chunk partials."""
    from agents.expert.ir.expr import Ref, walk

    rule = rule or SplitRule()
    out: dict[str, int] = {}
    for k in program.kernels:
        if k.kind != "reduction":
            continue
        column = column_major(k)
        if not rule.applies(k.xnumel, k.rnumel, column):
            continue
        names = {r.name for r in k.reductions}
        chained = any(isinstance(e, Ref) and e.name in names for r in k.reductions
                      for e in walk(r.body) + (walk(r.mask) if r.mask is not None else []))
        if not chained and all(r.rtype in SPLIT_TYPES for r in k.reductions):
            n = rule.splits(k.xnumel, k.rnumel, column)
            if n < 2:
                continue
            # a Welford pair is lowered (and split) under its mean's name, even when only M2 is used
            for r in k.reductions:
                out[r.name.removesuffix("_m2") if r.rtype == "welford_m2" else r.name] = n
    return tuple(sorted(out.items()))


class _Placer:
    def __init__(self, graph: IRGraph, policy: Policy) -> None:
        self.graph = graph
        self.policy = policy
        self.kernels: list[Kernel] = []
        self.steps: list[Kernel | ExternStep] = []
        self.producer: dict[str, Kernel | ExternStep] = {}
        self.deps: dict[int, set[int]] = {}  # id(step) -> ids of steps it reads from

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
        # most shared reads first, then creation order: a set of steps iterates in address order,
        # which made the kernel a node joined (and so a candidate's source) vary from run to run
        ordered = sorted(producers, key=lambda s: (-sum(1 for b in reads if self.producer.get(b) is s),
                                                   self.steps.index(s)))
        candidates = [s for s in ordered if isinstance(s, Kernel)]
        # horizontal: the latest kernels of the same domain that read the same inputs
        for k in reversed(self.kernels[-8:]):  # horizontal: recent kernels reading the same inputs
            if k not in candidates and (k.reads & reads or (kind == "reduction" and k.domain == domain)):
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
        except NotFusable as exc:
            log.debug("expert.not_fusable", node=node.name, kernel=[n.name for n in k.nodes], why=str(exc))
            return False
        k.kind, k.domain, k.reads = trial.kind, trial.domain, trial.reads
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
    xn, rn = numels(k.domain)
    has_red = any(isinstance(n, ReductionNode) for n in k.nodes)
    if kind == "matmul":  # a second GEMM reading the first one's rows from registers (a chain)
        return k.kind == "matmul" and isinstance(node, MatmulNode) and policy.chain_gemms and \
            chains(k.nodes, node, math.inf if policy.row_passes else ROW_TILE)
    if kind == "pointwise":
        numel = node.layout.numel
        if k.kind == "matmul" and (second := second_gemm(k.nodes)) is not None:  # after a chain: either GEMM's
            gemm = second if node.name in second_stage([*k.nodes, node]) else _matmul_first(k)  # full epilogue
            return numel == gemm.layout.numel
        if k.kind == "matmul":  # the epilogue: per element, or per row after a row reduction
            rows = _matmul_rows(k)
            mm = _matmul_first(k)
            # over the GEMM's logical output (interleaved phases; padded ones have fewer elements than lanes)
            logical = mm.out_shape is not None and tuple(node.layout.shape) == mm.out_shape
            return numel == xn * rn or logical or (has_red and numel == rows)
        if k.kind in ("scan", "pointwise"):
            return numel == xn * rn
        if k.kind == "reduction":
            full = numel == xn * rn and rn > 1
            if full and not policy.fuse_reductions:
                return False
            return numel in (xn * rn, xn)
        return False
    if kind == "reduction":
        if k.kind == "matmul":  # a row reduction of the GEMM's output, when a row fits one tile (or passes)
            mm = _matmul_first(k)
            return (policy.fuse_reductions and second_gemm(k.nodes) is None and isinstance(node, ReductionNode)
                    and (mm.n <= ROW_TILE or policy.row_passes and passes_over_n(mm, node))
                    and mm.out_valid is None  # padded phases: a row holds lanes past the output
                    and node.domain[-1] == mm.n and list(node.reduced) == [False] * (len(node.domain) - 1) + [True]
                    and math.prod(node.domain[:-1]) == math.prod(mm.batch) * mm.m)
        if k.kind == "reduction":
            if k.domain != domain:
                return False
            if not policy.fuse_reductions:
                return all(isinstance(n, ReductionNode) and _welford_pair(n, node) for n in k.nodes)
            return True
        if k.kind == "pointwise" and not has_red:
            xr, rr = numels(domain)
            return policy.fuse_reductions and all(n.layout.numel in (xr * rr, xr) for n in k.nodes)
        return False
    return False


def _matmul_first(k: Kernel) -> MatmulNode:
    return next(n for n in k.nodes if isinstance(n, MatmulNode))


def _matmul_rows(k: Kernel) -> int:
    mm = _matmul_first(k)
    return math.prod(mm.batch) * mm.m


def _welford_pair(a: Node, b: Node) -> bool:
    return (isinstance(a, ReductionNode) and isinstance(b, ReductionNode) and a.rtype.startswith("welford")
            and b.rtype.startswith("welford") and a.body is b.body)


# -- the program ----------------------------------------------------------------------------------

def schedule(graph: IRGraph, policy: Policy | None = None) -> Program:
    placer = _Placer(graph, policy or Policy())
    for node in graph.nodes.values():
        if isinstance(node, InputNode):
            continue
        placer.place(node)
    waves = _waves(placer)
    for step in (s for wave in waves for s in wave):
        if isinstance(step, Kernel):
            resolve(step, graph)
    steps = [s for wave in waves for s in wave]
    stored = _needed(graph, steps)
    for step in steps:
        if isinstance(step, Kernel):
            step.stores = [s for s in step.stores if s.buffer in stored]
    if placer.policy.combos:
        steps = [s for wave in waves for s in _combine(wave)]
    for i, step in enumerate(steps):
        if isinstance(step, Kernel):
            step.name = _kernel_name(step, i)
            for j, part in enumerate(step.parts):
                part.name = f"{step.name}_part{j}"
    return Program(graph, steps, stored)


def _waves(placer: _Placer) -> list[list[Kernel | ExternStep]]:
    """Steps grouped by dependency depth (a step's wave is one more than its deepest input's):
    the steps of one wave are independent, in creation order."""
    by_id = {id(s): s for s in placer.steps}
    depth: dict[int, int] = {}

    def level(sid: int, stack: frozenset[int]) -> int:
        if sid in depth:
            return depth[sid]
        if sid in stack:
            raise NotFusable("the kernels depend on each other in a cycle")
        deps = placer.deps.get(sid, set())
        depth[sid] = 1 + max((level(d, stack | {sid}) for d in deps), default=-1)
        return depth[sid]

    waves: dict[int, list[Kernel | ExternStep]] = {}
    for s in placer.steps:
        waves.setdefault(level(id(s), frozenset()), []).append(by_id[id(s)])
    return [waves[k] for k in sorted(waves)]


COMBO_KINDS = ("pointwise", "scatter")


def _combine(wave: list[Kernel | ExternStep]) -> list[Kernel | ExternStep]:
    """Independent pointwise/scatter kernels of one wave as one launch (a combo kernel: each
    program runs the part its id falls in): rotary's q and k, a KV cache's two appends. A kernel
    that writes through a transposed index keeps its own launch: a combo's part is a flat block,
    where alone it is a tiled transpose (flat, a transposing copy writes 4 bytes of each 32-byte
    sector it touches). So does a large one whose flat block would read that way (neighbouring lanes
    8 or more elements apart: the implicit-GEMM convolution's NCHW -> NHWC input copy read each
    element from a sector of its own in a combo, 2026-12-05); a small one (a weight) costs less read
    so than a launch of its own. A transposed read whose lowest digit is still contiguous joins:
    rotary's q and k were measured that way (0.86 of the memory roofline on the H200, 2026-12-03)."""
    parts = [s for s in wave if isinstance(s, Kernel) and s.kind in COMBO_KINDS
             and transposed_place(s, stores_only=True) is None
             and (s.xnumel < FLAT_STRIDE_NUMEL or flat_lane_stride(s) < FLAT_STRIDE_MAX)]
    if len(parts) < 2:
        return wave
    combo = Kernel("combo", ((sum(p.xnumel for p in parts), False),))
    combo.parts = parts
    combo.nodes = [n for p in parts for n in p.nodes]
    combo.reads = set().union(*(p.reads for p in parts))
    combo.stores = [st for p in parts for st in p.stores]
    combo.xnumel = sum(p.xnumel for p in parts)
    out: list[Kernel | ExternStep] = [s for s in wave if s not in parts]
    return [combo, *out]


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
