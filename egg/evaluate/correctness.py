"""Comparing a candidate's outputs with the reference's, and inputs before and after.

Outputs are compared leaf by leaf over nested tuples/lists/dicts: same structure, same shape, same
dtype, no NaN/Inf where the reference has none, then ``allclose`` with the tolerance of the
reference output's dtype (:mod:`egg.tolerance`). Every failure is one line saying which output
and by how much, so the agent that wrote the kernel can act on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import torch

from egg.tolerance import Tolerance, tolerance_for


def map_tensors(tree: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """Apply ``fn`` to every tensor in a nested structure, keeping everything else."""
    if isinstance(tree, torch.Tensor):
        return fn(tree)
    if isinstance(tree, tuple):
        return tuple(map_tensors(t, fn) for t in tree)
    if isinstance(tree, list):
        return [map_tensors(t, fn) for t in tree]
    if isinstance(tree, dict):
        return {k: map_tensors(v, fn) for k, v in tree.items()}
    return tree


def tensors_of(tree: Any) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    map_tensors(tree, found.append)
    return found


def clone_tree(tree: Any) -> Any:
    return map_tensors(tree, lambda t: t.detach().clone())


def to_device(tree: Any, device: torch.device) -> Any:
    return map_tensors(tree, lambda t: t.to(device))


def leaves(tree: Any, prefix: str = "output") -> list[tuple[str, Any]]:
    if isinstance(tree, (tuple, list)):
        out: list[tuple[str, Any]] = [(prefix, ("sequence", len(tree)))]
        for i, item in enumerate(tree):
            out += leaves(item, f"{prefix}[{i}]")
        return out
    if isinstance(tree, dict):
        out = [(prefix, (dict, tuple(sorted(map(str, tree)))))]
        for key in sorted(tree, key=str):
            out += leaves(tree[key], f"{prefix}[{key!r}]")
        return out
    return [(prefix, tree)]


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(a, b) or ((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


def named_tensors(tree: Any, prefix: str) -> list[tuple[str, torch.Tensor]]:
    """Every tensor leaf with its path, in :func:`map_tensors` order (the order buffers are made in)."""
    if isinstance(tree, torch.Tensor):
        return [(prefix, tree)]
    if isinstance(tree, (tuple, list)):
        return [nt for i, item in enumerate(tree) for nt in named_tensors(item, f"{prefix}[{i}]")]
    if isinstance(tree, dict):
        return [nt for k, v in tree.items() for nt in named_tensors(v, f"{prefix}[{k!r}]")]
    return []


def _pieces(a: torch.Tensor, b: torch.Tensor, start: int = 0) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """(flat start, a piece of ``a``, the same piece of ``b``) over two tensors of one shape, each
    piece of at most :data:`COMPARE_CHUNK` elements (or one element row where a row is all that is
    left): flat slices where both are contiguous, else slices along the first dimension, splitting
    a row further when one row is more than a chunk. The flat start is the piece's first element
    in row-major order (what ``reshape(-1)`` would number it). A whole copy of a 6 GB tensor,
    which with the runner's copies ran an 80 GB card out of memory, is never made: not for the
    inputs-unchanged check, not to flatten a non-contiguous (channels-last, transposed) output."""
    if a.dim() == 0 or a.numel() <= COMPARE_CHUNK:
        yield start, a, b
        return
    if a.is_contiguous() and b.is_contiguous():
        fa, fb = a.reshape(-1), b.reshape(-1)
        for s in range(0, fa.numel(), COMPARE_CHUNK):
            yield start + s, fa[s:s + COMPARE_CHUNK], fb[s:s + COMPARE_CHUNK]
        return
    row = a[0].numel()
    if row > COMPARE_CHUNK and a.dim() > 1:
        for i in range(a.shape[0]):
            yield from _pieces(a[i], b[i], start + i * row)
        return
    step = max(1, COMPARE_CHUNK // max(row, 1))
    for s in range(0, a.shape[0], step):
        yield start + s * row, a[s:s + step], b[s:s + step]


def inputs_unchanged(before: Any, now: Callable[[int], torch.Tensor]) -> str | None:
    """None if every input tensor is bit-identical to ``now(i)``, the i-th tensor leaf as it is now
    (the shared buffer, which the runner may still write), else a one-line reason. Each piece of
    the buffer is copied next to ``before`` and compared, so the check holds one piece more, not a
    copy of the input."""
    for i, (name, a) in enumerate(named_tensors(before, "input")):
        current = now(i)
        if current.shape != a.shape or current.dtype != a.dtype:
            return f"candidate modified {name} in place (inputs must be left unchanged)"
        for _, piece, shared in _pieces(a, current):
            if not _same_values(piece, shared.to(piece.device, copy=True)):
                return f"candidate modified {name} in place (inputs must be left unchanged)"
    return None


class Comparison:
    """Result of comparing one output tree: ``ok``, the first failure reason, worst errors."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.max_abs = 0.0
        self.max_rel = 0.0

    @property
    def ok(self) -> bool:
        return self.reason is None

    def fail(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason


# Elements compared per step. Comparing in float64 takes about eight temporaries the size of the
# output in float64; chunking bounds that to ~1 GB, so a 7.5 GB output (KernelBench level 1 has
# such problems) is checked on a GPU that holds it three times, not seventeen times.
COMPARE_CHUNK = 1 << 24


class _Tally:
    """What the chunks of one float tensor found, reduced as the chunks go."""

    def __init__(self) -> None:
        self.bad_nonfinite = 0  # NaN/Inf in the output where the reference is finite
        self.pattern_differs = False  # NaN/Inf of the reference not reproduced
        self.over = 0  # finite elements outside the tolerance
        self.max_abs = 0.0
        self.max_rel = 0.0
        self.worst = (-math.inf, 0, 0.0, 0.0)  # (excess over allowed, flat index, got, expected)

    def add(self, start: int, ref64: torch.Tensor, out64: torch.Tensor, tol: Tolerance) -> None:
        finite = torch.isfinite(ref64)
        self.bad_nonfinite += int(((~torch.isfinite(out64)) & finite).sum())
        same = (out64 == ref64) | (torch.isnan(out64) & torch.isnan(ref64))
        self.pattern_differs |= bool(((~finite) & ~same).any())
        diff = (out64 - ref64).abs().where(finite, torch.zeros_like(ref64))
        if not diff.numel():
            return
        self.max_abs = max(self.max_abs, float(diff.max()))
        rel = diff / ref64.abs().clamp_min(1e-12)
        self.max_rel = max(self.max_rel, float(rel.where(finite, torch.zeros_like(rel)).max()))
        excess = (diff - (tol.atol + tol.rtol * ref64.abs())).where(finite, torch.full_like(diff, -math.inf))
        n_over = int((excess > 0).sum())
        if n_over:
            self.over += n_over
            i = int(torch.argmax(excess))
            if float(excess[i]) > self.worst[0]:
                self.worst = (float(excess[i]), start + i, float(out64[i]), float(ref64[i]))


def _compare_tensor(name: str, ref: torch.Tensor, out: torch.Tensor, tol: Tolerance, cmp: Comparison) -> None:
    if out.shape != ref.shape:
        cmp.fail(f"{name}: shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
        return
    if out.dtype != ref.dtype:
        cmp.fail(f"{name}: dtype {out.dtype}, expected {ref.dtype}")
        return
    if not (ref.is_floating_point() or ref.is_complex()):
        n = sum(int((o.to(r.device) != r).sum()) for _, r, o in _pieces(ref, out))
        if n:
            cmp.fail(f"{name}: {n} of {ref.numel()} integer/bool elements differ (exact match required)")
        return
    tally = _Tally()
    for start, r, o in _pieces(ref, out):  # a piece at a time: no whole copy to flatten or move the output
        tally.add(start, r.reshape(-1).double(), o.to(r.device).reshape(-1).double(), tol)
    cmp.max_abs = max(cmp.max_abs, tally.max_abs)
    cmp.max_rel = max(cmp.max_rel, tally.max_rel)
    if tally.bad_nonfinite:
        cmp.fail(f"{name}: {tally.bad_nonfinite} of {ref.numel()} elements are NaN/Inf where the reference is finite")
    elif tally.pattern_differs:
        cmp.fail(f"{name}: NaN/Inf pattern differs from the reference")
    elif tally.over:
        _, idx, got, expected = tally.worst
        cmp.fail(
            f"{name}: {tally.over} of {ref.numel()} elements outside atol={tol.atol:g} rtol={tol.rtol:g}; "
            f"max abs err {tally.max_abs:.3g} (e.g. flat index {idx}: got {got:.6g}, expected {expected:.6g})"
        )


def compare_outputs(ref: Any, out: Any, tolerances: dict[str, Tolerance]) -> Comparison:
    cmp = Comparison()
    ref_leaves, out_leaves = leaves(ref), leaves(out)
    if len(ref_leaves) != len(out_leaves):
        cmp.fail(f"output structure differs: {len(out_leaves)} leaves, expected {len(ref_leaves)}")
        return cmp
    for (name, r), (_, o) in zip(ref_leaves, out_leaves):
        if isinstance(r, torch.Tensor):
            if not isinstance(o, torch.Tensor):
                cmp.fail(f"{name}: got {type(o).__name__}, expected a tensor")
                continue
            dtype_name = str(r.dtype).removeprefix("torch.")
            _compare_tensor(name, r, o, tolerance_for(dtype_name, tolerances), cmp)
        elif isinstance(r, float) and isinstance(o, (int, float)):
            if not math.isclose(r, float(o), rel_tol=1e-4, abs_tol=1e-4):
                cmp.fail(f"{name}: {o!r}, expected {r!r}")
        elif r != o:
            cmp.fail(f"{name}: {o!r}, expected {r!r}")
    return cmp


def _type_name(value: Any) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


def structure_reason(expected: Any, got: Any, name: str = "output") -> str | None:
    """Why a candidate's reported output structure (a :class:`~egg.evaluate.messages.Node`) is not
    the reference's, or None. Tensor leaves must be exactly the reference's tensor type (plain
    ``torch.Tensor``): a subclass could change what any comparison in its own process sees."""
    kind = got.kind
    if isinstance(expected, torch.Tensor):
        if kind != "tensor":
            return f"{name}: got {got.type or kind}, expected a tensor"
        if got.type != _type_name(expected):
            return (f"{name}: a {got.type} object, expected {_type_name(expected)} (outputs must be plain "
                    "tensors, not subclasses)")
        if list(expected.shape) != list(got.shape or []):
            return f"{name}: shape {tuple(got.shape or [])}, expected {tuple(expected.shape)}"
        if str(expected.dtype).removeprefix("torch.") != got.dtype:
            return f"{name}: dtype torch.{got.dtype}, expected {expected.dtype}"
        return None
    if isinstance(expected, (tuple, list)):
        if kind != "seq" or len(got.items or []) != len(expected):
            return f"output structure differs at {name}: got {got.type or kind}, expected a sequence of {len(expected)}"
        for i, (e, g) in enumerate(zip(expected, got.items or [])):
            if reason := structure_reason(e, g, f"{name}[{i}]"):
                return reason
        return None
    if isinstance(expected, dict):
        if kind != "dict" or list(map(str, expected)) != list(got.keys or []):
            return f"output structure differs at {name}: expected a dict with keys {sorted(map(str, expected))}"
        for k, g in zip(expected, got.items or []):
            if reason := structure_reason(expected[k], g, f"{name}[{k!r}]"):
                return reason
        return None
    if kind != "value":
        return f"{name}: got {got.type or kind}, expected {expected!r}"
    if isinstance(expected, float) and isinstance(got.value, (int, float)) and not isinstance(got.value, bool):
        if not math.isclose(expected, float(got.value), rel_tol=1e-4, abs_tol=1e-4):
            return f"{name}: {got.value!r}, expected {expected!r}"
        return None
    if got.value != expected:
        return f"{name}: {got.value!r}, expected {expected!r}"
    return None


def replace_tensors(tree: Any, tensors: list[torch.Tensor]) -> Any:
    """``tree`` with its tensor leaves replaced, in order, by ``tensors``."""
    it = iter(tensors)
    return map_tensors(tree, lambda _: next(it))
