"""The index algebra: simplification must be exact (checked against brute force) and must give
back plain flat indices for contiguous accesses."""

from __future__ import annotations

import itertools
import random

from agents.expert.ir.index import Affine, DivMod, Var, render, row_major, simplify_divmod, strided, unravel


def _eval(a: Affine, env: dict[Var, int]) -> int:
    total = a.const
    for atom, c in a.terms:
        if isinstance(atom, Var):
            total += c * env[atom]
        else:
            assert isinstance(atom, DivMod)
            v = _eval(atom.base, env) // atom.div
            total += c * (v % atom.mod if atom.mod is not None else v)
    return total


def test_split_then_recombine_is_the_flat_index() -> None:
    x = Var("x", 6 * 7 * 5)
    dims = unravel(Affine.of(x), [6, 7, 5])
    assert row_major(dims, [6, 7, 5]) == Affine.of(x)
    # a permuted read is not simplified away, but stays exact
    permuted = strided([dims[1], dims[0], dims[2]], [30, 5, 1])
    for v in range(x.size):
        i0, i1, i2 = v // 35, (v // 5) % 7, v % 5
        assert _eval(permuted, {x: v}) == i1 * 30 + i0 * 5 + i2


def test_broadcast_and_contiguous_inner_dims_render_plainly() -> None:
    x = Var("xindex", 4 * 8 * 16)
    n, c, w = unravel(Affine.of(x), [4, 8, 16])
    assert render(strided([n, c, w], [128, 16, 1]), lambda a: a.name) == "xindex"
    bias = strided([c], [1])
    assert render(bias, lambda a: "t") == "t"  # one atom: (xindex // 16) % 8
    (atom,) = bias.atoms()
    assert isinstance(atom, DivMod) and (atom.div, atom.mod) == (16, 8)


def test_floordiv_and_mod_rules() -> None:
    a, b = Var("a", 10), Var("b", 4)
    e = Affine.of(a) * 4 + b
    assert simplify_divmod(e, 4, None) == Affine.of(a)
    assert simplify_divmod(e, 1, 4) == Affine.of(b)
    assert simplify_divmod(Affine.of(b), 1, 8) == Affine.of(b)
    assert simplify_divmod(e + 3, 2, None) != Affine.of(a)


def test_random_expressions_match_brute_force() -> None:
    rng = random.Random(0)
    for _ in range(300):
        sizes = [rng.randint(1, 5) for _ in range(3)]
        vs = [Var(f"v{i}", s) for i, s in enumerate(sizes)]
        e = Affine.of(rng.randint(0, 3))
        for v in vs:
            e = e + Affine.of(v) * rng.randint(0, 6)
        d, m = rng.randint(1, 7), rng.choice([None, 2, 3, 5])
        s = simplify_divmod(e, d, m)
        d2, m2 = rng.randint(1, 3), rng.choice([None, 4])
        t = simplify_divmod(s, d2, m2)
        for point in itertools.product(*(range(n) for n in sizes)):
            env = dict(zip(vs, point))
            raw = _eval(e, env) // d
            raw = raw % m if m is not None else raw
            assert _eval(s, env) == raw
            raw2 = raw // d2
            assert _eval(t, env) == (raw2 % m2 if m2 is not None else raw2)


def test_scaled_terms_divide_through() -> None:
    """(c*a + r) // (c*d) == a // d and (c*a + r) % (c*m) == c*(a % m) + r when 0 <= r < c: how a
    row index comes back out of a flat index that mixes rows and reduced positions."""
    x, r = Var("x", 48), Var("r", 24)
    flat = Affine.of(x) * 24 + r
    assert simplify_divmod(flat, 576, None) == simplify_divmod(Affine.of(x), 24, None)
    assert simplify_divmod(flat, 1, 576) == simplify_divmod(Affine.of(x), 1, 24) * 24 + r
    for xv in range(48):
        for rv in range(24):
            env = {x: xv, r: rv}
            assert _eval(simplify_divmod(flat, 576, None), env) == (24 * xv + rv) // 576
            assert _eval(simplify_divmod(flat, 1, 576), env) == (24 * xv + rv) % 576
