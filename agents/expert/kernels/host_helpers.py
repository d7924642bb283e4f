"""Plain-Python helpers the generated *launchers* call, emitted into a candidate when it uses them.

A launcher runs on every call of the candidate, and for a small kernel its host time is most of
the call (benchmarks/host_bound.py measured 0.07-0.09 ms per single-kernel call on the H200 host,
where the kernel takes 0.04 ms). torch.broadcast_shapes goes through torch's symbolic-shape
machinery (about 26 us a call on torch 2.13); triton.cdiv and triton.next_power_of_2 are
ConstexprFunction wrappers (about 2.6 us each). These do the same arithmetic in a few hundred
nanoseconds, so the launchers call them instead.
"""

from __future__ import annotations

HOST_HELPERS: dict[str, str] = {
    "_egg_broadcast_shapes": '''
def _egg_broadcast_shapes(*shapes):
    """torch.broadcast_shapes's result as a tuple, without its symbolic-shape machinery."""
    first = tuple(shapes[0])
    if all(tuple(s) == first for s in shapes[1:]):
        return first
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s, ndim - len(s)):
            if n != 1:
                if out[i] != 1 and out[i] != n:
                    raise RuntimeError(f"shapes {[tuple(x) for x in shapes]} cannot be broadcast together")
                out[i] = n
    return tuple(out)
''',
    "_egg_cdiv": '''
def _egg_cdiv(a, b):
    """triton.cdiv for host integers."""
    return (a + b - 1) // b
''',
    "_egg_next_pow2": '''
def _egg_next_pow2(n):
    """triton.next_power_of_2 for host integers (0 for 0, as Triton's)."""
    return 1 << (n - 1).bit_length() if n > 0 else 0
''',
}
