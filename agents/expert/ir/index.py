"""Index arithmetic: integer affine combinations of index atoms, with floor-division/modulo.

Views are index maps, so every address a kernel computes is an :class:`Affine`: ``sum(c * atom)
+ const`` over *atoms*:

* :class:`Var` - an iteration variable with a known range ``[0, size)`` (an output dim of a node,
  or a kernel's ``xindex``/``rindex``);
* :class:`DivMod` - ``(base // div) % mod`` of an affine ``base`` (``mod=None``: no modulo). A
  reshape that merges dims produces them; the digit rule below folds them back;
* :class:`Indirect` - an integer value computed in the kernel (an index tensor's element, already
  wrapped to ``[0, size)``): gathers and embeddings.

Simplification (what makes a contiguous access render as plain ``xindex``) uses the atoms'
ranges, as Inductor's ``ModularIndexing``/``FloorDiv`` do with sympy:

* ``(q*d + r) // d == q`` when ``0 <= r < d``; ``(q*m + r) % m == r % m``; ``r % m == r`` when
  ``0 <= r < m``;
* the *digit rule*: ``DivMod(b, d, m)`` is the digits of ``b`` from place ``d`` to ``d*m``, so
  ``c*DivMod(b, d, m) + c*m*DivMod(b, d*m, m2) == c*DivMod(b, d, m*m2)``, and ``DivMod(b, 1,
  None) == b``. Splitting a flat index into dims and recombining them with contiguous strides
  therefore gives the flat index back.

Floor semantics are assumed only where the base is provably non-negative; a DivMod whose base
may be negative is kept as written (it only ever addresses masked-off lanes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

Atom = Union["Var", "DivMod", "Indirect"]


@dataclass(frozen=True)
class Var:
    name: str
    size: int  # the range is [0, size)

    def bounds(self) -> tuple[int, int]:
        return 0, max(0, self.size - 1)


@dataclass(frozen=True)
class DivMod:
    base: Affine
    div: int
    mod: int | None

    def bounds(self) -> tuple[int, int]:
        lo, hi = self.base.bounds()
        if lo < 0:
            lo, hi = -(1 << 62), 1 << 62
            return (lo, hi) if self.mod is None else (-(self.mod - 1), self.mod - 1)
        lo, hi = lo // self.div, hi // self.div
        if self.mod is not None and (hi - lo >= self.mod or lo // self.mod != hi // self.mod):
            return 0, self.mod - 1
        if self.mod is not None:
            return lo % self.mod, hi % self.mod
        return lo, hi


@dataclass(frozen=True)
class Indirect:
    """An integer the kernel computes (``value`` is an ``ir.expr`` node), in ``[0, size)``."""

    value: Any
    size: int

    def bounds(self) -> tuple[int, int]:
        return 0, max(0, self.size - 1)


@dataclass(frozen=True)
class Affine:
    terms: tuple[tuple[Atom, int], ...] = ()  # canonical: sorted by repr, no zero coefficients
    const: int = 0

    # -- construction --------------------------------------------------------------------------
    @staticmethod
    def of(x: int | Atom | Affine) -> Affine:
        if isinstance(x, Affine):
            return x
        if isinstance(x, int):
            return Affine((), int(x))
        return Affine(((x, 1),), 0)

    @staticmethod
    def _make(coeffs: dict[Atom, int], const: int) -> Affine:
        items = sorted(((a, c) for a, c in coeffs.items() if c != 0), key=lambda ac: _key(ac[0]))
        return Affine(tuple(items), const)

    def __add__(self, other: int | Atom | Affine) -> Affine:
        o = Affine.of(other)
        coeffs = dict(self.terms)
        for a, c in o.terms:
            coeffs[a] = coeffs.get(a, 0) + c
        out = Affine._make(coeffs, self.const + o.const)
        digits = [a for a, _ in out.terms if isinstance(a, DivMod)]
        if len(digits) >= 2 or any(d.div == 1 and d.mod is None for d in digits):
            return merge_digits(out)
        return out

    __radd__ = __add__

    def __sub__(self, other: int | Atom | Affine) -> Affine:
        return self + Affine.of(other) * -1

    def __rsub__(self, other: int | Atom | Affine) -> Affine:
        return Affine.of(other) - self

    def __mul__(self, k: int) -> Affine:
        if not isinstance(k, int):
            raise TypeError(f"index scaled by a non-integer {k!r}")
        return Affine._make({a: c * k for a, c in self.terms}, self.const * k)

    __rmul__ = __mul__

    def floordiv(self, d: int) -> Affine:
        return simplify_divmod(self, d, None)

    def mod(self, m: int) -> Affine:
        return simplify_divmod(self, 1, m)

    # -- queries -------------------------------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return not self.terms

    def atoms(self) -> list[Atom]:
        return [a for a, _ in self.terms]

    def vars(self) -> set[Var]:
        out: set[Var] = set()
        for a, _ in self.terms:
            if isinstance(a, Var):
                out.add(a)
            elif isinstance(a, DivMod):
                out |= a.base.vars()
        return out

    def indirects(self) -> list[Indirect]:
        out: list[Indirect] = []
        for a, _ in self.terms:
            if isinstance(a, Indirect):
                out.append(a)
            elif isinstance(a, DivMod):
                out += a.base.indirects()
        return out

    def bounds(self) -> tuple[int, int]:
        lo = hi = self.const
        for a, c in self.terms:
            alo, ahi = a.bounds()
            lo += min(c * alo, c * ahi)
            hi += max(c * alo, c * ahi)
        return lo, hi

    # -- substitution --------------------------------------------------------------------------
    def subs(self, env: dict[Var, Affine], value_map: Any = None) -> Affine:
        """Replace vars by affine expressions (and indirect values by ``value_map(value)``)."""
        out = Affine.of(self.const)
        for a, c in self.terms:
            if isinstance(a, Var):
                out = out + env.get(a, Affine.of(a)) * c
            elif isinstance(a, DivMod):
                out = out + simplify_divmod(a.base.subs(env, value_map), a.div, a.mod) * c
            else:
                value = value_map(a.value) if value_map is not None else a.value
                out = out + Affine.of(Indirect(value, a.size)) * c
        return out


def _key(atom: Atom) -> tuple[int, str]:
    order = {Var: 0, DivMod: 1, Indirect: 2}[type(atom)]
    return order, repr(atom) if not isinstance(atom, Indirect) else f"indirect{atom.value!r}"


def simplify_divmod(base: Affine, div: int, mod: int | None) -> Affine:
    """``(base // div) % mod`` as an Affine, simplified (see the module docstring)."""
    if div <= 0 or (mod is not None and mod <= 0):
        raise ValueError(f"DivMod with div={div}, mod={mod}")
    if mod == 1:
        return Affine.of(0)
    if base.bounds()[0] < 0:  # C and floor semantics differ: keep it as written
        return Affine.of(DivMod(base, div, mod)) if (div, mod) != (1, None) else base
    value = base if div == 1 else _floordiv(base, div)
    if value is None:
        return Affine.of(DivMod(base, div, mod))
    if mod is None:
        return value
    return _mod(value, mod)


def _floordiv(base: Affine, div: int) -> Affine | None:
    """``base // div`` for ``base >= 0`` without a new atom where possible (None: not at all)."""
    if base.is_const:
        return Affine.of(base.const // div)
    single = _single_digit(base)
    if single is not None:  # (DivMod(b, d1, m1)) // div: a narrower digit range of b
        if single.mod is None:
            return Affine.of(DivMod(single.base, single.div * div, None))
        if single.mod % div == 0:
            return simplify_divmod(single.base, single.div * div, single.mod // div)
    split = _scaled_split(base, div)
    if split is not None:  # (c*a + r) // (c*d) == a // d for 0 <= r < c
        scaled, c = split
        return simplify_divmod(scaled, div // c, None)
    q: dict[Atom, int] = {}
    r: dict[Atom, int] = {}
    for a, c in base.terms:
        (q if c % div == 0 else r)[a] = c // div if c % div == 0 else c
    rest = Affine._make(r, base.const % div)
    quotient = Affine._make(q, base.const // div)
    rlo, rhi = rest.bounds()
    if rlo >= 0 and rhi < div:
        return quotient
    if q and rlo >= 0:  # (div*q + rest) // div == q + rest // div
        return quotient + simplify_divmod(rest, div, None)
    return merge_digits(Affine.of(DivMod(base, div, None)))


def _mod(value: Affine, mod: int) -> Affine:
    """``value % mod`` for ``value >= 0``."""
    lo, hi = value.bounds()
    if lo >= 0 and hi < mod:
        return value
    single = _single_digit(value)
    if single is not None and single.mod is not None:
        if single.mod % mod == 0:
            return Affine.of(DivMod(single.base, single.div, mod))
        if mod % single.mod == 0:
            return value
    if single is not None and single.mod is None:
        return Affine.of(DivMod(single.base, single.div, mod))
    split = _scaled_split(value, mod)
    if split is not None:  # (c*a + r) % (c*m) == c*(a % m) + r for 0 <= r < c
        scaled, c = split
        rest_terms = {a: k for a, k in value.terms if k % c != 0}
        r = Affine._make(rest_terms, value.const % c)
        return simplify_divmod(scaled, 1, mod // c) * c + r
    kept = {a: c for a, c in value.terms if c % mod != 0}
    rest = Affine._make(kept, value.const % mod)
    rlo, rhi = rest.bounds()
    if rlo >= 0 and rhi < mod:
        return rest
    if rlo >= 0 and rest != value:  # fewer terms now: (q*m + r) % m == r % m, simplified again
        return simplify_divmod(rest, 1, mod)
    return merge_digits(Affine.of(DivMod(rest if rlo >= 0 else value, 1, mod)))


def _scaled_split(base: Affine, div: int) -> tuple[Affine, int] | None:
    """``(a, c)`` with ``base == c*a + r``, ``1 < c < div``, ``c | div`` and ``0 <= r < c``."""
    for c in sorted({abs(k) for _, k in base.terms}, reverse=True):
        if c <= 1 or c >= div or div % c:
            continue
        big = {a: k // c for a, k in base.terms if k % c == 0}
        rest = Affine._make({a: k for a, k in base.terms if k % c != 0}, base.const % c)
        lo, hi = rest.bounds()
        if big and lo >= 0 and hi < c:
            return Affine._make(big, base.const // c), c
    return None


def _single_digit(a: Affine) -> DivMod | None:
    if len(a.terms) == 1 and a.const == 0 and a.terms[0][1] == 1 and isinstance(a.terms[0][0], DivMod):
        return a.terms[0][0]
    return None


def merge_digits(a: Affine) -> Affine:
    """Apply the digit rule until nothing merges: adjacent digit ranges of one base with
    coefficients in the ratio of their place values become one range."""
    changed = True
    while changed:
        changed = False
        coeffs = dict(a.terms)
        digits = [(atom, c) for atom, c in coeffs.items() if isinstance(atom, DivMod)]
        for lo_atom, c_lo in digits:
            if lo_atom.mod is None:
                continue
            place = lo_atom.div * lo_atom.mod
            for hi_atom, c_hi in digits:
                if hi_atom is lo_atom or hi_atom.base != lo_atom.base or hi_atom.div != place:
                    continue
                if c_hi != c_lo * lo_atom.mod:
                    continue
                del coeffs[lo_atom], coeffs[hi_atom]
                mod = None if hi_atom.mod is None else lo_atom.mod * hi_atom.mod
                merged = simplify_divmod(lo_atom.base, lo_atom.div, mod)
                a = _sum(Affine._make(coeffs, a.const), merged * c_lo)
                changed = True
                break
            if changed:
                break
        if not changed:
            # a top digit range starting at place 1 with no modulo is the base itself
            for atom, c in coeffs.items():
                if isinstance(atom, DivMod) and atom.div == 1 and atom.mod is None:
                    del coeffs[atom]
                    a = _sum(Affine._make(coeffs, a.const), atom.base * c)
                    changed = True
                    break
    return a


def _sum(a: Affine, b: Affine) -> Affine:
    """``a + b`` without the digit rule (merge_digits's own loop applies it)."""
    coeffs = dict(a.terms)
    for atom, c in b.terms:
        coeffs[atom] = coeffs.get(atom, 0) + c
    return Affine._make(coeffs, a.const + b.const)


def row_major(index: list[Affine], sizes: list[int]) -> Affine:
    """The flat row-major offset of a multi-index over ``sizes``."""
    out = Affine.of(0)
    step = 1
    for i, s in zip(reversed(index), reversed(sizes)):
        out = out + Affine.of(i) * step
        step *= s
    return out


def unravel(flat: Affine, sizes: list[int]) -> list[Affine]:
    """The multi-index over ``sizes`` (row-major) of a flat offset."""
    out: list[Affine] = []
    place = 1
    for s in reversed(sizes):
        out.append(simplify_divmod(flat, place, s) if s != 1 else Affine.of(0))
        place *= s
    return out[::-1]


def strided(index: list[Affine], strides: list[int], offset: int = 0) -> Affine:
    out = Affine.of(offset)
    for i, st in zip(index, strides):
        out = out + Affine.of(i) * st
    return out


def render(a: Affine, atom_name: Any) -> str:
    """Python/Triton integer arithmetic for ``a``; ``atom_name(atom)`` names each atom."""
    parts: list[str] = []
    for atom, c in a.terms:
        name = atom_name(atom)
        if c == 1:
            parts.append(name)
        elif c == -1:
            parts.append(f"-{name}")
        else:
            parts.append(f"{c}*{name}")
    if a.const or not parts:
        parts.append(str(a.const))
    text = " + ".join(parts).replace("+ -", "- ")
    return text


def divmod_text(atom: DivMod, base_text: str) -> str:
    text = base_text if atom.div == 1 else f"({base_text}) // {atom.div}"
    return text if atom.mod is None else f"({text}) % {atom.mod}"
