"""Expression DAGs -> Triton source lines, shared by every kernel template.

:class:`Writer` renders a resolved :class:`~agents.expert.ir.expr.Expr` into named temporaries
(common subexpressions once), indexes into integer arithmetic (each floor-division/modulo atom
once, ``x0 = xindex % 16``), and loads with exactly the masks their lanes need: ``xmask`` only
where the value depends on the row, ``rmask`` only where it depends on the reduced position,
plus the masks of enclosing :class:`~agents.expert.ir.expr.Masked` pieces (``cat`` and padding
never read outside their piece).

Values that do not depend on the reduced position are hoisted out of the ``for roffset`` loop
of a looped reduction (a row's ``rsqrt(var + eps)`` is computed once per row, not per chunk);
values that depend on nothing are scalars (a 0-d input is one load per program).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agents.expert import ops
from agents.expert.ir.dtypes import HALVES, TL, compute, is_float
from agents.expert.ir.expr import Const, Expr, IndexValue, Load, Masked, Op, Ref, walk
from agents.expert.ir.index import Affine, DivMod, Indirect, Var, divmod_text, render
from agents.expert.ir.ranges import INT_DTYPES, int_range, nibble_of


@dataclass
class _Scope:
    lines: list[str] = field(default_factory=list)
    cache: dict[Any, str] = field(default_factory=dict)
    loop: bool = False  # values depending on rindex live here; others go to the enclosing scope


WINDOW_LOADS_MIN = 4  # loads of one buffer at shifted indices that make a window (a stencil's taps, a pool's)


def windowed_buffers(exprs: Iterable[Expr]) -> frozenset[str]:
    """Buffers a window of loads in ``exprs`` reads (a depthwise convolution's taps, an overlapping
    pool's): at least ``WINDOW_LOADS_MIN`` indices that differ by constants, two of them overlapping
    (one index atom shifted within its range), so lanes read each element again and no load of them
    streams (evicted first: :attr:`Writer.reread`). Loads at disjoint offsets (a fused gate/up
    projection's halves, a pool whose stride is its window) and rotary's x at three shifts (itself and
    its rotated halves: each element read twice) keep their hints."""
    shifts: dict[tuple[str, tuple[Any, ...]], set[int]] = {}
    for e in exprs:
        for ld in walk(e):
            if isinstance(ld, Load):
                shifts.setdefault((ld.buffer, ld.index.terms), set()).add(ld.index.const)
    out = set()
    for (buffer, terms), consts in shifts.items():
        if len(consts) < WINDOW_LOADS_MIN:
            continue
        ranges = [(coef, atom.bounds()) for atom, coef in terms]
        if any(_overlap(b - a, ranges) for a in consts for b in consts if b > a):
            out.add(buffer)
    return frozenset(out)


def _overlap(shift: int, ranges: list[tuple[int, tuple[int, int]]]) -> bool:
    """One index atom moved within its range covers ``shift``: two such loads read a common element."""
    return any(shift % abs(coef) == 0 and abs(shift // coef) <= hi - lo for coef, (lo, hi) in ranges)


class Writer:
    """Renders one kernel body. ``params``: buffer name -> pointer parameter; ``var_names``:
    kernel Var name -> Triton expression (``xindex`` ...); ``masks``: dependence tag -> mask
    variable (``{"x": "xmask"}``); ``refs``: in-kernel node values bound so far."""

    def __init__(self, params: dict[str, str], var_names: dict[str, str], masks: dict[str, str],
                 var_tags: dict[str, str], idx64: bool = False, prefix: str = "",
                 evict: dict[str, str] | None = None, numel: int = 0, cpu: bool = False) -> None:
        self.params = params
        self.var_names = var_names
        self.masks = masks
        self.var_tags = var_tags  # Var name -> dependence tag ("x", "r", "m", "n", ...)
        self.idx64 = idx64
        self.refs: dict[str, tuple[str, frozenset[str]]] = {}
        self.scopes: list[_Scope] = [_Scope()]
        self.extra_masks: list[tuple[str, frozenset[str]]] = []
        self._n = 0
        self.prefix = prefix  # names of this writer's temporaries (two writers may share a kernel)
        # eviction hints: "stream" for loads of every element once, "reuse" for broadcast reads
        self.evict = {k: v for k, v in (evict or {}).items() if v}
        self.numel = numel  # lanes of the kernel: a load spanning as many addresses streams
        self.reread: frozenset[str] = frozenset()  # buffers a window of loads reads: never streamed (windowed_buffers)
        # keyed by the expression itself, which the dict keeps alive: an id() key could be reused by
        # a later expression once a temporary one (a rewritten scale, a scope's cache) is freed
        self._deps: dict[Expr, frozenset[str]] = {}
        # the interpreter's tl.dot is exact fp32 whatever the precision asked: a TF32 rounding of a dot's
        # operand has nothing to match there, and the CPU reference is exact fp32 (cuDNN's flags are GPU-only)
        self.cpu = cpu
        self.nibbles = False  # a nibble of a byte tensor to a 16-bit float through _egg_nibble_half (GEMM operands)
        self.ptx = False  # the body calls a helper with inline PTX: the kernel takes the PTX flag
        # tag -> (1-D index name, its mask or None, expansion): a load along that tag's dim alone is a
        # vector load expanded into the tile (a GEMM's group scale): in the tile's 2-D layout Triton
        # would load each element once per replica (32 loads a thread a K step for a [1, 64] row)
        self.vectors: dict[str, tuple[str, str | None, str]] = {}
        self._space = ""  # namespace of cached index atoms (a vector load renders them 1-D)

    # -- scopes --------------------------------------------------------------------------------
    @property
    def lines(self) -> list[str]:
        return self.scopes[0].lines

    def emit(self, line: str, deps: frozenset[str] = frozenset({"x", "r"})) -> None:
        self._scope_for(deps).lines.append(line)

    def begin_loop(self) -> None:
        """Values written from here on that depend on ``rindex`` go into the loop body; the rest
        is hoisted into the enclosing scope (before the loop)."""
        self.scopes.append(_Scope(loop=True))

    def end_loop(self) -> list[str]:
        """The loop body written since :meth:`begin_loop`."""
        return self.scopes.pop().lines or ["pass"]

    def take(self, mark: int) -> list[str]:
        """The top-level lines written since ``mark`` (``len(self.lines)`` earlier), removed."""
        out = self.lines[mark:]
        del self.lines[mark:]
        return out

    def _scope_for(self, deps: frozenset[str]) -> _Scope:
        # "k": a value of the loop's step that no lane mask covers (a GEMM's group index, uniform over a K tile)
        if "r" in deps or "k" in deps or len(self.scopes) == 1:
            return self.scopes[-1]
        for scope in reversed(self.scopes):
            if not scope.loop:
                return scope
        return self.scopes[0]

    def fresh(self, prefix: str = "tmp") -> str:
        self._n += 1
        return f"{self.prefix}{prefix}{self._n}"

    def assign(self, expr: str, deps: frozenset[str], prefix: str = "tmp", key: Any = None) -> str:
        scope = self._scope_for(deps)
        if key is not None and key in scope.cache:
            return scope.cache[key]
        name = self.fresh(prefix)
        scope.lines.append(f"{name} = {expr}")
        if key is not None:
            scope.cache[key] = name
        return name

    # -- dependence ----------------------------------------------------------------------------
    def deps(self, e: Any) -> frozenset[str]:
        if isinstance(e, Affine):
            out: set[str] = set()
            for atom in e.atoms():
                out |= self._atom_deps(atom)
            return frozenset(out)
        if e in self._deps:
            return self._deps[e]
        if isinstance(e, (Load, IndexValue)):
            d = self.deps(e.index)
        elif isinstance(e, Ref):
            d = self.refs[e.name][1] if e.name in self.refs else frozenset({"x"})
        elif isinstance(e, Op):
            d = frozenset().union(*(self.deps(a) for a in e.args)) if e.args else frozenset()
        elif isinstance(e, Masked):
            d = self.deps(e.mask) | self.deps(e.body)
        else:
            d = frozenset()
        self._deps[e] = d
        return d

    def _atom_deps(self, atom: Any) -> set[str]:
        if isinstance(atom, Var):
            return {self.var_tags.get(atom.name, "x")}
        if isinstance(atom, DivMod):
            return set(self.deps(atom.base))
        assert isinstance(atom, Indirect)
        return set(self.deps(atom.value))

    # -- indexes -------------------------------------------------------------------------------
    def index(self, a: Affine) -> str:
        return render(a, self._atom)

    def _atom(self, atom: Any) -> str:
        if isinstance(atom, Var):
            return self.var_names[atom.name]
        if isinstance(atom, DivMod):
            base = self.index(atom.base)
            return self.assign(divmod_text(atom, base), frozenset(self._atom_deps(atom)), prefix="i",
                               key=("atom", self._space, atom))
        assert isinstance(atom, Indirect)
        return self.value(atom.value)

    # -- values --------------------------------------------------------------------------------
    def mask_for(self, deps: frozenset[str]) -> str | None:
        parts = [m for tag, m in self.masks.items() if tag in deps]
        parts += [m for m, _ in self.extra_masks]
        return " & ".join(parts) if parts else None

    def value(self, e: Expr) -> str:
        deps = self.deps(e)
        for m, mdeps in self.extra_masks:
            deps = deps | mdeps
        key = (e, tuple(m for m, _ in self.extra_masks))
        scope = self._scope_for(deps)
        if key in scope.cache:
            return scope.cache[key]
        text, prefix = self._render(e, deps)
        if text.isidentifier() or _is_literal(text):
            scope.cache[key] = text
            return text
        return self.assign(text, deps, prefix=prefix, key=key)

    def _render(self, e: Expr, deps: frozenset[str]) -> tuple[str, str]:
        if isinstance(e, Const):
            return ops.literal(e.value, compute(e.dtype)), "c"
        if isinstance(e, Ref):
            return self.refs[e.name][0], "tmp"
        if isinstance(e, IndexValue):
            text = self.index(e.index)
            if e.dtype != "int64" or not self.idx64:
                return f"({text})" if not text.isidentifier() else text, "tmp"
            return f"({text})", "tmp"
        if isinstance(e, Load):
            return self._load(e, deps), "tmp"
        if isinstance(e, Masked):
            m = self.value(e.mask)
            self.extra_masks.append((m, self.deps(e.mask)))
            try:
                if self._other_is_enough(e):  # the load's own mask is the piece's: its other is the value
                    return self._load(e.body, deps, ops.literal(e.other, compute(e.dtype))), "tmp"  # type: ignore[arg-type]
                inner = self.value(e.body)
            finally:
                self.extra_masks.pop()
            return f"tl.where({m}, {inner}, {ops.literal(e.other, compute(e.dtype))})", "tmp"
        assert isinstance(e, Op)
        if self.nibbles and e.op == "to" and e.dtype in HALVES and e.args[0].dtype in INT_DTYPES:
            nibble = nibble_of(e.args[0])
            if nibble is not None:
                return self._nibble_half(*nibble, e.dtype), "tmp"
        args = [self.value(a) for a in e.args]
        if e.op == "to" and e.dtype in HALVES and e.args[0].dtype in INT_DTYPES:
            exact = self._exact_half(e.args[0], args[0], e.dtype)
            if exact is not None:
                return exact, "tmp"
        if e.op == "round_tf32" and self.cpu:
            return args[0], "tmp"
        text = ops.render(e.op, args, [a.dtype for a in e.args], e.dtype, dict(e.params))
        if e.dtype in HALVES and not (e.op == "to" and e.args and e.args[0].dtype == e.dtype):
            text = ops.round_to(text, e.dtype)
        return text, "tmp"

    def _other_is_enough(self, e: Masked) -> bool:
        """Whether ``Masked(c, load, other)`` is ``tl.load(..., c, other=other)``: the load's mask
        would be ``c`` alone, or ``c`` and the rows' ``xmask`` (a row past the end is never stored
        nor combined with another row), with no enclosing piece, so the ``tl.where`` on ``c`` after
        it selects what the load's ``other`` gives wherever the value is used. A padded window's tap
        (a max pool's ``-inf``) then costs a predicated load, not a load and a select (level 1 #41:
        8 taps an output, issue-bound; 2.915 -> 2.744 ms on an H100, 2026-12-06). Only where
        ``other`` is exact in the loaded dtype."""
        body = e.body
        if not isinstance(body, Load) or not is_float(body.dtype) or len(self.extra_masks) != 1:
            return False
        if any(tag in self.deps(body.index) for tag in self.masks if tag != "x"):
            return False  # a masked reduced lane (r, k, a tile's columns) must read the reduction's own neutral
        return body.dtype in ("float32", "float64") or e.other in (0.0, float("inf"), float("-inf"))

    def _vector(self, e: Load) -> tuple[str, str | None, str] | None:
        """The vector form of this load's index, mask and expansion, where it has one."""
        tags = self.deps(e.index) - {"k", "b"}  # uniform over the tile: a scalar term
        tag = next(iter(tags)) if len(tags) == 1 else None
        if tag not in self.vectors or self.extra_masks:
            return None
        name, mask, expand = self.vectors[tag]
        names, space = self.var_names, self._space
        self.var_names = {**names, **{v: name for v, t in self.var_tags.items() if t == tag}}
        self._space = tag
        try:
            idx = self.index(e.index)
        finally:
            self.var_names, self._space = names, space
        return idx, mask, expand

    def _nibble_half(self, byte: Expr, high: bool, c: int, dtype: str) -> str:
        """A nibble of a byte tensor, plus ``c``, as a 16-bit float: ``_egg_nibble_half`` (inline PTX
        behind the kernel's PTX flag: four bytes a register) gives ``base + nibble``, one exact
        subtraction the value. The kernel takes the PTX flag (:attr:`ptx`)."""
        self.ptx = True
        return self._less_base(f"_egg_nibble_half({self.value(byte)}, {high}, {dtype == 'float16'}, PTX)", c, dtype)

    def _less_base(self, half: str, lo: int, dtype: str) -> str:
        """``half`` (the 16-bit float ``base + x - lo``, its significand OR-ed) as fp32 ``x``: one exact
        subtraction of ``base - lo``. On the CPU the bf16 subtraction runs in fp32 (the interpreter has
        no bf16 constants); exact either way."""
        base = 128 if dtype == "bfloat16" else 1024
        if dtype == "bfloat16" and self.cpu:
            return f"({half}.to(tl.float32) - {base - lo}.0)"
        return f"({half} - {base - lo}.0).to(tl.float32)"

    def _exact_half(self, x: Expr, text: str, dtype: str) -> str | None:
        """A narrow integer (its range under 128 values for bf16, 1024 for fp16) as a 16-bit float
        without a conversion: the integer, less its lower bound, OR-ed into the significand of 128
        (bf16) or 1024 (fp16) is ``base + x - lo`` exactly, and one exact subtraction gives ``x``. Two
        or three instructions where a conversion chain took six (a dequantised int4 weight: the int4
        GEMM's K step went from 735 to 378 instructions a thread, sm_90a PTX, 2026-12-05)."""
        lo, hi = int_range(x)
        bits, window = (0x4300, 127) if dtype == "bfloat16" else (0x6400, 1023)
        if hi - lo > window or lo < -(1 << 14) or hi >= 1 << 14:  # (x - lo) computed in int16
            return None
        wide = f"{text}.to(tl.int16)"
        shifted = wide if lo == 0 else f"({wide} + {-lo})" if lo < 0 else f"({wide} - {lo})"
        return self._less_base(f"({shifted} | {bits:#06x}).to({TL[dtype]}, bitcast=True)", lo, dtype)

    def _load(self, e: Load, deps: frozenset[str], other: str | None = None) -> str:
        ptr = self.params[e.buffer]
        vector = self._vector(e)
        idx = vector[0] if vector else self.index(e.index)
        addr = ptr if idx == "0" else f"{ptr} + ({idx})"
        mask = (vector[1] if vector else self.mask_for(self.deps(e.index)))
        other = other or ("0.0" if is_float(e.dtype) else "0")
        lo, hi = e.index.bounds()
        kind = "stream" if hi - lo + 1 >= self.numel and e.buffer not in self.reread else "reuse"
        hint = f', eviction_policy="{self.evict[kind]}"' if kind in self.evict and self.deps(e.index) else ""
        text = f"tl.load({addr}, {mask}, other={other}{hint})" if mask else f"tl.load({addr}{hint})"
        text += vector[2] if vector else ""
        if e.dtype in HALVES:
            text += ".to(tl.float32)"
        return text

    def store(self, buffer: str, index: Affine, value: str, dtype: str, mask_deps: frozenset[str]) -> None:
        ptr = self.params[buffer]
        idx = self.index(index)
        addr = ptr if idx == "0" else f"{ptr} + ({idx})"
        if not self.deps(index) and mask_deps:  # one element: a block pointer for the block value
            lead = next(v for k, v in self.var_names.items() if self.var_tags.get(k) in mask_deps)
            addr = f"{addr} + 0 * {lead}"
        if _is_literal(value):
            stored = f"tl.full([], {value}, {TL[dtype]})"
        elif dtype == "bool":
            stored = value
        else:
            stored = f"{value}.to({TL[dtype]})"
        mask = self.mask_for(mask_deps)
        deps = self.deps(index) | mask_deps
        self.emit(f"tl.store({addr}, {stored}, {mask})" if mask else f"tl.store({addr}, {stored})", deps)

    def bind(self, name: str, var: str, dtype: str, deps: frozenset[str]) -> None:
        """Make ``Ref(name)`` render as ``var`` (rounded to ``dtype`` first, as a store would)."""
        if dtype in HALVES:
            var = self.assign(ops.round_to(var, dtype), deps)
        self.refs[name] = (var, deps)


def _is_literal(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return text in ('float("inf")', 'float("-inf")', 'float("nan")')
