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

Which side of the tile is contiguous decides the mapping too: ``column_major`` (the kept rows are
contiguous, a reduction over dim 1 of NCHW) and ``window`` (a pool's few taps over many outputs).
"""

from __future__ import annotations

import dataclasses

from agents.expert.ir.expr import Load, substitute, walk
from agents.expert.ir.index import Affine, DivMod, Var
from agents.expert.kernel import Kernel
from agents.expert.templates import next_pow2

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


# -- which side of the tile is contiguous: the mapping the memory wants --------------------------
def _lowest_digits(kernel: Kernel) -> dict[str, list[tuple[int, int]]]:
    """Per side (``rindex``, ``xindex``): (stride, run) of every lowest digit a load's address uses.

    A lowest digit is the index itself or ``index % m`` (``xindex % C`` when the reduced axis sits
    between the kept ones, as in a reduction over dim 1 of [B, R, C]); its run is how many
    consecutive values it takes (the index's extent, or m), its stride the address's coefficient.
    The digit's own variables decide the side, not the whole index's (which holds both).
    """
    digits: dict[str, list[tuple[int, int]]] = {"rindex": [], "xindex": []}
    for red in kernel.reductions:
        for ld in (x for x in walk(red.body) if isinstance(x, Load)):
            for atom, c in ld.index.terms:
                if isinstance(atom, Var):
                    names, run = {atom.name}, atom.size
                elif isinstance(atom, DivMod) and atom.div == 1:
                    names = {v.name for v in atom.base.vars()}
                    run = min(atom.mod or 1 << 62, atom.base.bounds()[1] + 1)
                else:
                    continue
                side = "rindex" if "rindex" in names else "xindex" if "xindex" in names else None
                if side is not None:
                    digits[side].append((abs(c), run))
    return digits


COLUMN_XBLOCK = 256  # a looped column-major kernel's outputs per program (default_config)


def column_major(kernel: Kernel) -> bool:
    """True when the rows are what is contiguous in memory (a reduction over dim 1 of NCHW)."""
    d = _lowest_digits(kernel)
    return any(c == 1 for c, _ in d["xindex"]) and not any(c == 1 for c, _ in d["rindex"])


WINDOW_MAX = 64  # a reduced extent up to this many elements can be a window (pooling taps)
WINDOW_STRIDE_MAX = 4  # neighbouring outputs at most this many elements apart (a pool's stride)


def window(kernel: Kernel) -> bool:
    """A pooling-like reduction: a few reduced elements (the taps of a window) whose contiguous runs
    (a window row) are shorter than the run of neighbouring outputs reading neighbouring addresses
    (a pool's stride apart; a small reduction over dim 1 of NCHW is one too). Walking the taps one
    at a time over many outputs keeps every load coalesced across the outputs; a tile of XBLOCK
    rows x RBLOCK taps puts the threads along the taps instead (Triton orders threads by the
    contiguity it can prove, and ``xindex % W`` proves none). On the H200 (benchmarks/config_probe.py, 2026-12-03) KernelBench level 1's max pool 2D
    went from 16.5 to 3.8 ms, the (dilated, strided) 3D max pool from 5.8 to 2.1, the strided 3D
    average pool from 14.8 to 3.6 and the 1D average pool from 5.1 to 1.6."""
    if next_pow2(kernel.rnumel) > WINDOW_MAX:
        return False
    if any(s.role == "full" for s in kernel.stores):
        # every reduced element is stored too (a norm over dim 1 of NCHW): walking the taps one at a
        # time would read the rows twice, a persistent column tile reads them once (_column_major)
        return False
    d = _lowest_digits(kernel)
    x_run = max((run for c, run in d["xindex"] if c <= WINDOW_STRIDE_MAX), default=0)
    r_run = max((run for c, run in d["rindex"] if c == 1), default=0)
    return x_run > 1 and r_run < x_run
