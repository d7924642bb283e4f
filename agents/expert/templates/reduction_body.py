"""The body of a reduction kernel: accumulators, passes and per-row results, through a Writer.

Persistent groups reduce a whole row held in registers; looped groups keep per-lane accumulators
across ``for roffset`` passes and merge the lanes at the end (Chan's formula for Welford, the
rescaled sums of an online softmax). Per-row results use the interpreter's fast reductions
(``tl.sum``/``tl.max``/``tl.min``/``tl.argmax``) with torch's NaN rules written out.
"""

from __future__ import annotations

from typing import Any

from agents.expert.ir.dtypes import TL, compute, is_float
from agents.expert.ir.expr import Expr, Op, Ref
from agents.expert.kernel import Kernel, Reduction, Store
from agents.expert.templates import reduction_select as select
from agents.expert.writer import Writer


def _identity(rtype: str, dtype: str) -> str:
    if rtype in ("max", "argmax"):
        return 'float("-inf")' if is_float(dtype) else str(-(2 ** 63) if dtype == "int64" else -(2 ** 31))
    if rtype in ("min", "argmin"):
        return 'float("inf")' if is_float(dtype) else str(2 ** 63 - 1 if dtype == "int64" else 2 ** 31 - 1)
    return "1" if rtype == "prod" else "0"


class Render:
    """The body of one reduction kernel, written through a :class:`Writer`."""

    def __init__(self, kernel: Kernel, w: Writer, rmask: bool, shape: str, lanes: bool = False) -> None:
        self.k, self.w, self.rmask, self.shape = kernel, w, rmask, shape
        self.lanes = lanes  # ONLINE_MAX="lane": online groups that allow it keep a running max per lane
        self.ptx = False  # the body calls a helper with inline PTX behind the kernel's PTX flag
        # an online group's last update, by its max's name: (this chunk's exp terms, the rescale of what
        # was summed before); a chained GEMM that sums the terms' products rescales by it too (matmul_rows)
        self.online_terms: dict[str, tuple[str, str]] = {}
        # an online group's sum per row ([XBLOCK, 1], each chunk's terms summed as they come) instead of
        # per lane: a GEMM's passes (matmul_rows.py) keep no third [BLOCK_M, BLOCK_N] tile in registers
        self.row_sums = False

    def per_lane(self, g: Any) -> bool:
        """This online group keeps its running max per lane (ONLINE_MAX="lane" and it may)."""
        return self.lanes and lane_online(g)

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
    def persistent(self, g: Any) -> None:
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
        if g.kind == "select":
            select.persistent(self, g.members[0])
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
    def init(self, g: Any) -> list[tuple[str, ...]]:
        """Accumulator variables of a group (declared before its pass)."""
        w, x = self.w, frozenset({"x"})
        r = g.members[0]
        acc = TL[compute(r.acc)] if r.rtype not in ("any", "all") else "tl.int32"
        if g.kind == "welford":
            names = (w.fresh("_mean"), w.fresh("_m2"), w.fresh("_n"))
            for n in names:
                w.emit(f"{n} = tl.zeros({self.shape}, {acc})", x)  # loop-carried: the body's dtype
            return [names]
        if self.per_lane(g):  # a max and a sum a lane (update)
            m, s = w.fresh("_max"), w.fresh("_sum")
            w.emit(f"{m} = tl.full({self.shape}, {_lowest_finite(r.acc)}, {acc})", x)
            w.emit(f"{s} = tl.zeros({self.shape}, {acc})", x)
            return [(m, s)]
        if g.kind == "online":  # the row's running max (NaN once a NaN is seen), per-lane sums rescaled to it
            m, s = w.fresh("_max"), w.fresh("_sum")
            rows = self.shape.split(",")[0] + ", 1]"  # [XBLOCK, 1] (a GEMM epilogue's: [BLOCK_M, 1])
            w.emit(f'{m} = tl.full({rows}, float("-inf"), {acc})', x)
            w.emit(f"{s} = tl.zeros({rows if self.row_sums else self.shape}, {acc})", x)
            return [(m, s)]
        out = []
        for r in g.members:
            if r.rtype in ("argmax", "argmin"):
                v, i = w.fresh("_accv"), w.fresh("_acci")
                w.emit(f"{v} = tl.full({self.shape}, {_identity(r.rtype, r.acc)}, {acc})", x)
                w.emit(f"{i} = tl.full({self.shape}, rnumel, {'tl.int64' if w.idx64 else 'tl.int32'})", x)
                out.append((v, i))
            else:
                a = w.fresh("_acc")
                ident = _identity(r.rtype, r.acc) if r.rtype not in ("any", "all") else "0"
                w.emit(f"{a} = tl.full({self.shape}, {ident}, {acc})", x)
                out.append((a,))
        return out

    def update(self, g: Any, accs: list[tuple[str, ...]]) -> None:
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
        if self.per_lane(g):
            # ONLINE_MAX="lane": each lane keeps its own running max m and sum s = sum(exp(f - m)), with
            # no chunk max (a block-wide reduction and barrier each pass) and still one exp an element:
            # with t = f - m, a new lane max (t > 0) rescales s by exp(-t) and adds exp(0) = 1, any
            # other element adds exp(t); both are exp(-|t|). m starts at the lowest finite value, not
            # -inf, so -inf elements (and masked lanes) give t = -inf, exp = 0 and no NaN, and the
            # first finite element always starts its lane (exp(-huge) = 0 rescales an empty sum).
            # A NaN gives t = NaN: the sum and (NaN-propagating) max turn NaN, as torch's do.
            m, s = accs[0]
            mx = g.members[0]
            f = self.masked(self.full(mx.body), mask, 'float("-inf")')
            t = w.assign(f"{f} - {m}", xr)
            # -|t| <= 0, so e is in [0, 1], and s is 0 (no finite element yet) or at least 1 once one
            # came (t > 0 set it to s * e + 1): a subnormal e adds nothing in fp32 either way, so the
            # flushing exp is exact here and saves three instructions an element (helpers.py)
            ftz = not w.cpu and compute(mx.acc) == "float32"
            self.ptx |= ftz  # the kernel takes the PTX flag (its launch's device is a CUDA GPU)
            e = w.assign(f"_egg_exp2_ftz(tl.abs({t}) * -1.4426950408889634, PTX)" if ftz else f"tl.exp(-tl.abs({t}))", xr)
            w.emit(f"{s} = tl.where({t} > 0, {s} * {e} + 1.0, {s} + {e})", xr)
            w.emit(f"{m} = _egg_max_nan({m}, {f})", xr)
            return
        if g.kind == "online":
            # The running max is the row's (the chunk's max each pass), so rescaling the lanes' sums
            # costs one exp per row per pass and each element one exp. A running max per lane paid
            # two exps an element: for cross-entropy's 1024 x 128256 logits that is 263M exps, ~70 us
            # of the H200's exp units (16 a clock per SM) against ~61 us to read the logits; that
            # kernel ran at 0.41 of the memory roofline (2026-12-02). One exp: ~35 us.
            # Per element: one exp, one FMA, the chunk max; the rest is per row ([XBLOCK, 1], in the
            # loop: each is one instruction a thread, not one an element). A NaN wins the max as
            # in torch (a NaN-propagating combine: the same max instruction, where counting NaNs per
            # lane cost three more an element and a lane counter's registers), and then every term.
            m, s = accs[0]
            mx, sm = g.members
            assert g.scale is not None and g.shifted is not None
            f = self.masked(self.full(mx.body), mask, 'float("-inf")')
            # (the interpreter's tl.max is numpy's, which propagates NaN already, and its tl.reduce
            # calls the combine in Python: a looped cross-entropy at odd shapes took over 300 s)
            chunk = f"tl.max({f}, 1)" if w.cpu else f"tl.reduce({f}, 1, _egg_max_nan)"
            m_new = w.assign(f"_egg_max_nan({m}, {chunk}[:, None])", xr)
            # nothing but -inf so far: shift by 0 instead (exp(-inf - -inf) would be NaN; every
            # element is -inf, so each term is exp(-inf) = 0), and no sum to rescale
            m_safe = w.assign(f'tl.where({m_new} == float("-inf"), 0.0, {m_new})', xr)
            c_old, c_new = self._scale(g, mx.name, m), self._scale(g, mx.name, m_safe)
            a = self.full(g.shifted)
            term = self.masked(w.assign(f"tl.exp({a} - {c_new})", xr), mask, "0.0")
            rescale = w.assign(f'tl.where({m} == float("-inf"), 0.0, tl.exp({c_old} - {c_new}))', xr)
            w.emit(f"{s} = {s} * {rescale} + " + (f"tl.sum({term}, 1)[:, None]" if self.row_sums else term), xr)
            w.emit(f"{m} = {m_new}", xr)
            self.online_terms[mx.name] = (term, rescale)
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

    def _scale(self, g: Any, m_name: str, var: str) -> str:
        """Render c(m) with the running-max variable ``var`` standing for m's row value."""
        assert g.scale is not None
        stand_in = f"__{var}"
        self.w.refs[stand_in] = (var, frozenset({"x", "r"}))
        return self.w.value(_replace_ref(g.scale, m_name, stand_in))

    def finish(self, g: Any, accs: list[tuple[str, ...]]) -> None:
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
        if self.per_lane(g):
            # the row's max over the lanes', each lane's sum rescaled to it; a row of -inf only left
            # every lane at the lowest finite value with an empty sum: its max is -inf, as torch's
            m_l, s_l = accs[0]
            mx, sm = g.members
            big = self.row("max", m_l, mx.acc)
            total = w.assign(f"tl.sum({s_l} * tl.exp({m_l} - {big}), 1)[:, None]", x)
            w.bind(mx.name, w.assign(f'tl.where({total} == 0.0, float("-inf"), {big})', x), mx.dtype, x)
            w.bind(sm.name, total, sm.dtype, x)
            return
        if g.kind == "online":
            m, s_l = accs[0]
            mx, sm = g.members
            w.bind(mx.name, m, mx.dtype, x)
            w.bind(sm.name, s_l if self.row_sums else w.assign(f"tl.sum({s_l}, 1)[:, None]", x), sm.dtype, x)
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
            deps = frozenset({"x"}) if s.role not in ("full", "matmul") else frozenset({"x", "r"})
            self.w.store(s.buffer, s.index, self.w.value(s.value), s.dtype, deps)


def lane_online(g: Any) -> bool:
    """An online group that may keep its running max per lane (ONLINE_MAX="lane"): its sum is of
    ``exp(f - m)`` with ``f`` the max's own body and ``m`` the max itself (softmax, log-softmax,
    cross-entropy). A scaled shift or a guard on the max (logsumexp's ``where(|m| == inf, 0, m)``)
    stays on the row's running max: the lane rule's rescale is exact only for ``f - m``."""
    mx = g.members[0]
    return g.kind == "online" and isinstance(g.scale, Ref) and g.scale.name == mx.name and g.shifted is mx.body


def _lowest_finite(dtype: str) -> str:
    import torch

    return repr(float(torch.finfo(getattr(torch, compute(dtype))).min))


def _replace_ref(e: Expr, old: str, new: str) -> Expr:
    if isinstance(e, Ref):
        return Ref(new, e.dtype) if e.name == old else e
    if isinstance(e, Op):
        return Op(e.op, tuple(_replace_ref(a, old, new) for a in e.args), e.dtype, e.params)
    return e


