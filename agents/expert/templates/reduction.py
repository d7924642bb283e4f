"""Template: a reduction kernel (``reduction.py.j2``): XBLOCK rows x RBLOCK reduced elements.

One kernel computes every reduction of the same rows and the pointwise work around them. Its
reductions are ordered in *levels* (softmax: ``amax`` is level 1, ``sum(exp(x - amax))`` level
2, the normalised output is stored after level 2):

* **persistent** (``PERSISTENT=True``, the reduced extent fits ``RBLOCK``): each row is loaded
  once into registers and every level runs on it (one read, one write);
* **looped**: one ``for roffset`` pass per level over the reduced extent, the output stores in
  the pass after the level they need (inputs are re-read per pass, never an intermediate).
  A ``sum(exp(f - c(amax)))`` level fuses into its ``amax`` pass as an *online* softmax
  (running max and rescaled sum per lane), so softmax/log-softmax/logsumexp/cross-entropy take
  two passes, not three; ``var``/``mean`` pairs are one Welford pass.

Accumulation is in fp32 (fp64 for fp64 inputs); max/min propagate NaN and argmax/argmin return
the first index, as torch does; a 16-bit result is rounded to its dtype before anything in the
kernel reads it, as a store and reload would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from agents.expert.ir.dtypes import TL, compute, is_float
from agents.expert.ir.expr import Expr, Load, Op, Ref, walk
from agents.expert.ir.index import Var
from agents.expert.kernel import Kernel, Reduction, Store
from agents.expert.templates import (
    SMS,
    describe,
    KernelSource,
    Launch,
    RenderContext,
    cdiv,
    idx64,
    launcher_spec,
    next_pow2,
    pointer_params,
    render_file,
)
from agents.expert.writer import Writer

MAX_PERSISTENT = {"cpu": 16384, "cuda": 16384}


@dataclass
class Group:
    kind: str  # plain | welford | online
    members: list[Reduction]
    level: int = 1
    scale: Expr | None = None  # online: c(m) with Ref(m) standing for the running max
    shifted: Expr | None = None  # online: A, the exponent's argument before subtracting c(m)


@dataclass
class Levels:
    groups: list[Group]
    full: dict[int, list[Store]] = field(default_factory=dict)  # level -> stores in that pass
    rows: dict[int, list[Store]] = field(default_factory=dict)  # after level -> row stores

    @property
    def depth(self) -> int:
        return max([g.level for g in self.groups] + [max(self.full, default=0)])


def _refs(e: Expr | None) -> set[str]:
    return {x.name for x in walk(e) if isinstance(x, Ref)} if e is not None else set()


def _online(m: Reduction, s: Reduction) -> tuple[Expr, Expr] | None:
    """(A, c) when ``s`` sums ``exp(A - c(m))`` with ``c`` reading only ``m``'s row value."""
    if m.rtype != "max" or s.rtype != "sum" or not is_float(m.acc) or s.mask is not None or m.mask is not None:
        return None
    body = s.body
    if not (isinstance(body, Op) and body.op == "exp" and isinstance(body.args[0], Op) and body.args[0].op == "sub"):
        return None
    a, c = body.args[0].args
    if _refs(a) or _refs(c) != {m.name} or any(isinstance(x, Load) for x in walk(c)):
        return None
    return a, c


def plan_levels(kernel: Kernel, online: bool) -> Levels:
    groups: list[Group] = []
    of: dict[str, Group] = {}
    for r in kernel.reductions:
        if r.rtype.startswith("welford"):
            g = next((g for g in groups if g.kind == "welford" and g.members[0].body is r.body
                      and g.members[0].mask is r.mask), None)
            if g is not None:
                g.members.append(r)
                of[r.name] = g
                continue
            g = Group("welford", [r])
        else:
            g = Group("plain", [r])
            if online:
                for prev in groups:
                    if prev.kind == "plain" and (found := _online(prev.members[0], r)) is not None:
                        prev.kind, prev.members = "online", [prev.members[0], r]
                        prev.shifted, prev.scale = found
                        of[r.name] = prev
                        g = None  # type: ignore[assignment]
                        break
            if g is None:
                continue
        groups.append(g)
        of[r.name] = g
    for g in groups:  # members are in graph order, so a dependency's level is already known
        needed = set().union(*(_refs(m.body) | _refs(m.mask) for m in g.members)) - {m.name for m in g.members}
        g.level = 1 + max((of[n].level for n in needed if n in of), default=0)
    levels = Levels(groups)
    for s in kernel.stores:
        deps = _refs(s.value)
        need = max((of[n].level for n in deps if n in of), default=0)
        if s.role == "full":
            levels.full.setdefault(max(1, need + 1), []).append(s)
        else:
            levels.rows.setdefault(need, []).append(s)
    return levels


def _identity(rtype: str, dtype: str) -> str:
    if rtype in ("max", "argmax"):
        return 'float("-inf")' if is_float(dtype) else str(-(2 ** 63) if dtype == "int64" else -(2 ** 31))
    if rtype in ("min", "argmin"):
        return 'float("inf")' if is_float(dtype) else str(2 ** 63 - 1 if dtype == "int64" else 2 ** 31 - 1)
    return "1" if rtype == "prod" else "0"


class _Render:
    """The body of one reduction kernel, written through a :class:`Writer`."""

    def __init__(self, kernel: Kernel, w: Writer, rmask: bool, shape: str) -> None:
        self.k, self.w, self.rmask, self.shape = kernel, w, rmask, shape

    def lane_mask(self, r: Reduction) -> str | None:
        parts = ["rmask"] if self.rmask else []
        if r.mask is not None:
            parts.append(self.w.value(r.mask))
        return " & ".join(parts) if parts else None

    def full(self, e: Expr) -> str:
        v = self.w.value(e)
        if self.w.deps(e) >= {"x", "r"}:
            return v
        if not self.w.deps(e) and not v.isidentifier():  # a constant: a tensor of it
            return self.w.assign(f"tl.full({self.shape}, {v}, {TL[compute(e.dtype)]})", frozenset({"x", "r"}))
        return self.w.assign(f"tl.broadcast_to({v}, {self.shape})", frozenset({"x", "r"}))

    def masked(self, v: str, mask: str | None, ident: str) -> str:
        return v if mask is None else self.w.assign(f"tl.where({mask}, {v}, {ident})", frozenset({"x", "r"}))

    # -- one shot (persistent) ---------------------------------------------------------------
    def persistent(self, g: Group) -> None:
        w = self.w
        if g.kind == "welford":
            r = g.members[0]
            mask = self.lane_mask(r)
            v = self.full(r.body)
            count = str(float(self.k.rnumel)) if r.mask is None else w.assign(
                f"tl.sum(({mask}).to(tl.float32), 1)[:, None]", frozenset({"x"}))
            mean = w.assign(f"tl.sum({self.masked(v, mask, '0.0')}, 1)[:, None] / {count}", frozenset({"x"}))
            d = self.masked(w.assign(f"{v} - {mean}", frozenset({"x", "r"})), mask, "0.0")
            m2 = w.assign(f"tl.sum({d} * {d}, 1)[:, None]", frozenset({"x"}))
            for m in g.members:
                w.bind(m.name, mean if m.rtype == "welford_mean" else m2, m.dtype, frozenset({"x"}))
            return
        for r in g.members:  # an online group is two plain reductions when the row is in registers
            self.bind_plain(r, self.full(r.body), self.lane_mask(r))

    def bind_plain(self, r: Reduction, v: str, mask: str | None) -> None:
        w, x = self.w, frozenset({"x"})
        ident = _identity(r.rtype, r.acc)
        if r.rtype in ("argmax", "argmin"):
            v = self.masked(v, mask, ident)
            best = w.assign(f"tl.{r.rtype}({v}, 1, tie_break_left=True)[:, None]", x)
            if is_float(r.acc):  # torch: a NaN is the extreme value; the first one wins
                idx = w.assign(f"tl.broadcast_to(rindex, {self.shape})", frozenset({"x", "r"}))
                first = w.assign(f"tl.min(tl.where({v} != {v}, {idx}, rnumel), 1)[:, None]", x)
                best = w.assign(f"tl.where({first} < rnumel, {first}, {best})", x)
            w.bind(r.name, best, r.dtype, x)
            return
        v = self.masked(v, mask, ident if r.rtype not in ("any", "all") else ("0" if r.rtype == "any" else "1"))
        w.bind(r.name, self.row(r.rtype, v, r.acc), r.dtype, x)

    def row(self, rtype: str, v: str, acc: str) -> str:
        """The per-row result of lanes ``v`` ([XBLOCK, RBLOCK]) with the interpreter's fast paths
        (tl.sum/max/min); max/min propagate NaN as torch's do."""
        w, x = self.w, frozenset({"x"})
        if rtype in ("max", "min"):
            m = w.assign(f"tl.{rtype}({v}, 1)[:, None]", x)
            if not is_float(acc):
                return m
            nan = w.assign(f"tl.sum(({v} != {v}).to(tl.int32), 1)[:, None] > 0", x)
            return w.assign(f'tl.where({nan}, float("nan"), {m})', x)
        text = {"sum": f"tl.sum({v}, 1)[:, None]", "prod": f"tl.reduce({v}, 1, _egg_prod)[:, None]",
                "any": f"(tl.sum(({v} != 0).to(tl.int32), 1)[:, None] > 0)",
                "all": f"(tl.sum(({v} == 0).to(tl.int32), 1)[:, None] == 0)"}[rtype]
        return w.assign(text, x)

    # -- looped ------------------------------------------------------------------------------
    def init(self, g: Group) -> list[tuple[str, ...]]:
        """Accumulator variables of a group (declared before its pass)."""
        w, x = self.w, frozenset({"x"})
        r = g.members[0]
        acc = TL[compute(r.acc)] if r.rtype not in ("any", "all") else "tl.int32"
        if g.kind == "welford":
            names = (w.fresh("_mean"), w.fresh("_m2"), w.fresh("_n"))
            for n in names:
                w.emit(f"{n} = tl.zeros({self.shape}, tl.float32)", x)
            return [names]
        if g.kind == "online":
            m, s = w.fresh("_max"), w.fresh("_sum")
            w.emit(f'{m} = tl.full({self.shape}, float("-inf"), tl.float32)', x)
            w.emit(f"{s} = tl.zeros({self.shape}, tl.float32)", x)
            return [(m, s)]
        out = []
        for r in g.members:
            if r.rtype in ("argmax", "argmin"):
                v, i = w.fresh("_accv"), w.fresh("_acci")
                w.emit(f"{v} = tl.full({self.shape}, {_identity(r.rtype, r.acc)}, {acc})", x)
                w.emit(f"{i} = tl.full({self.shape}, rnumel, tl.int32)", x)
                out.append((v, i))
            else:
                a = w.fresh("_acc")
                ident = _identity(r.rtype, r.acc) if r.rtype not in ("any", "all") else "0"
                w.emit(f"{a} = tl.full({self.shape}, {ident}, {acc})", x)
                out.append((a,))
        return out

    def update(self, g: Group, accs: list[tuple[str, ...]]) -> None:
        w, xr = self.w, frozenset({"x", "r"})
        r = g.members[0]
        mask = self.lane_mask(r)
        if g.kind == "welford":
            mean, m2, n = accs[0]
            v = self.full(r.body)
            valid = "1.0" if mask is None else w.assign(f"({mask}).to(tl.float32)", xr)
            n_new = w.assign(f"{n} + {valid}", xr)
            delta = w.assign(f"{v} - {mean}", xr)
            w.emit(f"{mean} = {mean} + {valid} * {delta} / tl.where({n_new} == 0.0, 1.0, {n_new})", xr)
            w.emit(f"{m2} = {m2} + {valid} * {delta} * ({v} - {mean})", xr)
            w.emit(f"{n} = {n_new}", xr)
            return
        if g.kind == "online":
            m, s = accs[0]
            mx, sm = g.members
            assert g.scale is not None and g.shifted is not None
            f = self.masked(self.full(mx.body), mask, 'float("-inf")')
            m_new = w.assign(f"tl.maximum({m}, {f})", xr)
            c_old, c_new = self._scale(g, mx.name, m), self._scale(g, mx.name, m_new)
            a = self.full(g.shifted)
            term = self.masked(w.assign(f"tl.exp({a} - {c_new})", xr), mask, "0.0")
            w.emit(f"{s} = tl.where({s} == 0.0, 0.0, {s} * tl.exp({c_old} - {c_new})) + {term}", xr)
            w.emit(f"{m} = {m_new}", xr)
            return
        for r2, acc in zip(g.members, accs):
            v = self.full(r2.body)
            ident = _identity(r2.rtype, r2.acc)
            if r2.rtype in ("argmax", "argmin"):
                av, ai = acc
                idx = w.assign(f"tl.broadcast_to(rindex, {self.shape})", xr)
                w.emit(f"{av}, {ai} = _egg_{r2.rtype}({av}, {ai}, {self.masked(v, mask, ident)}, "
                       f"{idx if mask is None else f'tl.where({mask}, {idx}, rnumel)'})", xr)
                continue
            (a,) = acc
            if r2.rtype in ("any", "all"):
                test = f"({v} != 0)" if r2.rtype == "any" else f"({v} == 0)"
                v = self.masked(w.assign(f"{test}.to(tl.int32)", xr), mask, "0")
                w.emit(f"{a} = {a} + {v}", xr)
                continue
            v = self.masked(v, mask, ident)
            combine = {"sum": f"{a} + {v}", "prod": f"{a} * {v}",
                       "max": f"_egg_max_nan({a}, {v})" if is_float(r2.acc) else f"tl.maximum({a}, {v})",
                       "min": f"_egg_min_nan({a}, {v})" if is_float(r2.acc) else f"tl.minimum({a}, {v})"}[r2.rtype]
            w.emit(f"{a} = {combine}", xr)

    def _scale(self, g: Group, m_name: str, var: str) -> str:
        """Render c(m) with the running-max variable ``var`` standing for m's row value."""
        assert g.scale is not None
        stand_in = f"__{var}"
        self.w.refs[stand_in] = (var, frozenset({"x", "r"}))
        return self.w.value(_replace_ref(g.scale, m_name, stand_in))

    def finish(self, g: Group, accs: list[tuple[str, ...]]) -> None:
        w, x = self.w, frozenset({"x"})
        if g.kind == "welford":
            mean_l, m2_l, n_l = accs[0]  # Chan's merge of the lanes, written with sums
            n = w.assign(f"tl.sum({n_l}, 1)[:, None]", x)
            mean = w.assign(f"tl.sum({n_l} * {mean_l}, 1)[:, None] / tl.where({n} == 0.0, 1.0, {n})", x)
            dev = w.assign(f"{mean_l} - {mean}", frozenset({"x", "r"}))
            m2 = w.assign(f"tl.sum({m2_l}, 1)[:, None] + tl.sum({n_l} * {dev} * {dev}, 1)[:, None]", x)
            for mbr in g.members:
                w.bind(mbr.name, mean if mbr.rtype == "welford_mean" else m2, mbr.dtype, x)
            return
        if g.kind == "online":
            m_l, s_l = accs[0]
            mx, sm = g.members
            mrow = self.row("max", m_l, "float32")
            c_lane, c_row = self._scale(g, mx.name, m_l), self._scale(g, mx.name, mrow)
            srow = w.assign(f"tl.sum(tl.where({s_l} == 0.0, 0.0, {s_l} * tl.exp({c_lane} - {c_row})), 1)[:, None]",
                            x)
            w.bind(mx.name, mrow, mx.dtype, x)
            w.bind(sm.name, srow, sm.dtype, x)
            return
        for r, acc in zip(g.members, accs):
            if r.rtype in ("argmax", "argmin"):
                av, ai = acc  # the lanes' best values and their first indices
                best = self.row("max" if r.rtype == "argmax" else "min", av, r.acc)
                hit = f"({av} == {best})" + (f" | (({best} != {best}) & ({av} != {av}))" if is_float(r.acc) else "")
                idx = w.assign(f"tl.min(tl.where({hit}, {ai}, rnumel), 1)[:, None]", x)
                w.bind(r.name, idx, r.dtype, x)
                continue
            (a,) = acc
            if r.rtype in ("any", "all"):
                text = f"(tl.sum({a}, 1)[:, None] > 0)" if r.rtype == "any" else f"(tl.sum({a}, 1)[:, None] == 0)"
                w.bind(r.name, w.assign(text, x), r.dtype, x)
                continue
            w.bind(r.name, self.row(r.rtype, a, r.acc), r.dtype, x)

    def stores(self, stores: list[Store]) -> None:
        for s in stores:
            deps = frozenset({"x"}) if s.role != "full" else frozenset({"x", "r"})
            self.w.store(s.buffer, s.index, self.w.value(s.value), s.dtype, deps)


def _replace_ref(e: Expr, old: str, new: str) -> Expr:
    if isinstance(e, Ref):
        return Ref(new, e.dtype) if e.name == old else e
    if isinstance(e, Op):
        return Op(e.op, tuple(_replace_ref(a, old, new) for a in e.args), e.dtype, e.params)
    return e


def _column_major(kernel: Kernel) -> bool:
    """True when the rows are what is contiguous in memory (a reduction over dim 1 of NCHW)."""
    r_unit = x_unit = False
    for red in kernel.reductions:
        for ld in (x for x in walk(red.body) if isinstance(x, Load)):
            for atom, c in ld.index.terms:
                if c != 1:
                    continue
                names = {v.name for v in ld.index.vars()} if not isinstance(atom, Var) else {atom.name}
                if isinstance(atom, Var) and atom.name == "rindex" or (not isinstance(atom, Var) and "rindex" in names):
                    r_unit = True
                elif "xindex" in names:
                    x_unit = True
    return x_unit and not r_unit


class ReductionTemplate:
    name = "reduction"
    principle_ids: ClassVar[list[str]] = [
        "algorithm-structure/fuse-reduction-with-neighbours",
        "tiling/fp32-accumulators",
        "memory/masked-loads-neutral-other",
    ]

    def applies(self, kernel: Kernel) -> str | None:
        return None if kernel.kind == "reduction" else f"a {kernel.kind} kernel"

    def tuning_space(self, kernel: Kernel) -> dict[str, list[Any]]:
        fits = next_pow2(kernel.rnumel) <= MAX_PERSISTENT["cuda"]
        return {"PERSISTENT": [True, False] if fits else [False], "XBLOCK": [1, 2, 4, 8, 16, 32, 64],
                "RBLOCK": [64, 256, 1024, 2048, 4096], "num_warps": [2, 4, 8, 16]}

    def default_config(self, kernel: Kernel, device: str) -> dict[str, Any]:
        rn, xn = kernel.rnumel, kernel.xnumel
        rp = next_pow2(rn)
        persistent = rp <= MAX_PERSISTENT[device if device in MAX_PERSISTENT else "cuda"]
        if device == "cpu":
            rblock = rp if persistent else 4096
            return {"PERSISTENT": persistent, "XBLOCK": max(1, min(next_pow2(xn), 16384 // rblock)),
                    "RBLOCK": rblock, "num_warps": 4}
        if _column_major(kernel):
            xblock = min(64, next_pow2(xn))
            rblock = min(rp, max(1, 4096 // xblock)) if persistent and rp * xblock <= 8192 else 64
            return {"PERSISTENT": persistent and rp * xblock <= 8192, "XBLOCK": xblock, "RBLOCK": rblock,
                    "num_warps": 8}
        if persistent:
            xblock = max(1, min(64, 4096 // rp, next_pow2(xn)))
            while xblock > 1 and cdiv(xn, xblock) < 2 * SMS:
                xblock //= 2
            tile = xblock * rp
            return {"PERSISTENT": True, "XBLOCK": xblock, "RBLOCK": rp,
                    "num_warps": 4 if tile <= 1024 else 8 if tile <= 4096 else 16}
        return {"PERSISTENT": False, "XBLOCK": 1, "RBLOCK": 2048, "num_warps": 8}

    def render(self, kernel: Kernel, config: dict[str, Any], ctx: RenderContext) -> KernelSource:
        cfg = {**self.default_config(kernel, ctx.device), **config}
        persistent = bool(cfg["PERSISTENT"]) and next_pow2(kernel.rnumel) <= MAX_PERSISTENT["cuda"]
        rblock = next_pow2(kernel.rnumel) if persistent else int(cfg["RBLOCK"])
        xblock = int(cfg["XBLOCK"])
        xmask, rmask = kernel.xnumel % xblock != 0, kernel.rnumel % rblock != 0
        masks = {**({"x": "xmask"} if xmask else {}), **({"r": "rmask"} if rmask else {})}
        ptrs = pointer_params(kernel, ctx)
        wide = idx64(kernel, ctx)
        w = Writer(ptrs, {"xindex": "xindex", "rindex": "rindex"}, masks, {"xindex": "x", "rindex": "r"}, wide)
        r = _Render(kernel, w, rmask, "[XBLOCK, RBLOCK]")
        levels = plan_levels(kernel, online=not persistent)
        phases: list[dict[str, Any]] = []
        r.stores(levels.rows.get(0, []))
        for level in range(1, levels.depth + 1):
            groups = [g for g in levels.groups if g.level == level]
            if persistent:
                r.stores(levels.full.get(level, []))
                for g in groups:
                    r.persistent(g)
                r.stores(levels.rows.get(level, []))
                continue
            mark = len(w.lines)
            w.begin_loop()
            accs = [r.init(g) for g in groups]
            for g, a in zip(groups, accs):
                r.update(g, a)
            r.stores(levels.full.get(level, []))
            body = w.end_loop()
            before = w.take(mark)
            for g, a in zip(groups, accs):
                r.finish(g, a)
            r.stores(levels.rows.get(level, []))
            after = w.take(mark)
            what = ", ".join(m.name for g in groups for m in g.members) or "the stores"
            phases.append({"before": before, "loop": body, "after": after, "doc": what})
        params = list(dict.fromkeys(ptrs.values()))
        doc = describe(kernel)
        call = Launch(kernel.name, f"({cdiv(kernel.xnumel, xblock)},)", [p.removesuffix("_ptr") for p in params],
                      [f"XBLOCK={xblock}", f"RBLOCK={rblock}", f"num_warps={int(cfg['num_warps'])}"])
        spec, inputs, outputs = launcher_spec(kernel, ctx, [call], doc)
        k = {"name": kernel.name, "params": params, "doc": doc, "xnumel": kernel.xnumel, "rnumel": kernel.rnumel,
             "xmask": xmask, "rmask": rmask, "persistent": persistent, "body": w.lines, "phases": phases,
             "cast64": ".to(tl.int64)" if wide else ""}
        source = render_file("reduction.py.j2", k=k, L=spec)
        mode = "persistent (rows in registers)" if persistent else f"looped ({len(phases)} pass(es))"
        names = ", ".join(dict.fromkeys(red.rtype for red in kernel.reductions))
        used = {"PERSISTENT": persistent, "XBLOCK": xblock, "RBLOCK": rblock, "num_warps": int(cfg["num_warps"])}
        return KernelSource(kernel.name, spec["name"], source, inputs, outputs, 1,
                            f"{names} over {kernel.rnumel} x {kernel.xnumel} rows, {mode}, with "
                            f"{len(kernel.stores)} store(s)", used, list(self.principle_ids))


__all__ = ["ReductionTemplate", "plan_levels"]
