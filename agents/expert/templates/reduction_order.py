"""The order a reduction kernel walks its reduced elements: memory order, not the graph's.

``rindex`` runs over the reduced dims in the order the graph names them. For a GroupNorm over a
channels-last tensor (the ``conv-channels-last`` variant's output) that order is (channel in group,
h, w): consecutive lanes read addresses ``C`` elements apart, and the other channels of each
32-byte sector are read a whole pass later, so DRAM moves up to 8x the bytes. A sum, max, Welford
or online-softmax reduction does not care in which order its elements come, so the kernel may walk
them in memory order instead (Inductor reorders its reduction loops the same way): when a load of
the kernel walks the *top* digit of ``rindex`` (place ``d``, ``m`` values, ``d * m = rnumel``) with
stride 1, the kernel iterates ``rp`` with ``rindex = (rp % m) * d + rp // m``, so that digit is the
fastest one. Every load, mask and store is rewritten through that map, so each element is still
read and written once, only in another order; floating-point sums come out in another order too,
as any reordered reduction does. Reductions whose result depends on positions (argmax/argmin) are
left alone.
"""

from __future__ import annotations

import dataclasses

from agents.expert.ir.expr import Load, substitute, walk
from agents.expert.ir.index import Affine, DivMod, Var
from agents.expert.kernel import Kernel

PERMUTED = "rindex_p"  # the walked index's name in the IR; the template still calls it rindex


def _top_digit(kernel: Kernel, flat: Var) -> tuple[int, int] | None:
    """(place, values) of the top digit of ``rindex`` that some reduction's load walks with stride 1."""
    for red in kernel.reductions:
        for ld in (x for x in walk(red.body) if isinstance(x, Load)):
            for atom, coeff in ld.index.terms:
                if abs(coeff) != 1 or not isinstance(atom, DivMod) or atom.div <= 1:
                    continue
                if atom.base != Affine.of(flat):
                    continue
                values = atom.mod if atom.mod is not None else kernel.rnumel // atom.div
                if atom.div * values == kernel.rnumel and values >= 2:
                    return atom.div, values
    return None


def memory_order(kernel: Kernel) -> tuple[Kernel, bool]:
    """``kernel`` walking its reduced elements in memory order (module docstring), and whether it changed."""
    if kernel.kind != "reduction" or any(r.rtype in ("argmax", "argmin") for r in kernel.reductions):
        return kernel, False
    flat = next((v for r in kernel.reductions for ld in walk(r.body) if isinstance(ld, Load)
                 for v in ld.index.vars() if v.name == "rindex"), None)
    if flat is None:
        return kernel, False
    found = _top_digit(kernel, flat)
    if found is None:
        return kernel, False
    place, values = found
    rp = Affine.of(Var(PERMUTED, kernel.rnumel))
    env = {flat: rp.mod(values) * place + rp.floordiv(values)}
    reductions = [dataclasses.replace(r, body=substitute(r.body, env),
                                      mask=substitute(r.mask, env) if r.mask is not None else None)
                  for r in kernel.reductions]
    stores = [dataclasses.replace(s, index=s.index.subs(env), value=substitute(s.value, env)) for s in kernel.stores]
    return dataclasses.replace(kernel, reductions=reductions, stores=stores), True
