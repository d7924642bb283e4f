"""Complex tensors as real views: a complex value is lowered as a real TV with a trailing
``(re, im)`` dim of size 2, exactly ``torch.view_as_real``'s layout, so ``view_as_complex`` and
``view_as_real`` move no data and views of complex tensors are views of the pairs. Products and
sums of complex values are pointwise formulas over the two components (Meta's LLaMA rotary is
``view_as_real(view_as_complex(x) * freqs_cis)``: one pointwise kernel). Other complex ops
decline: no template computes them.
"""

from __future__ import annotations

from typing import Any

from torch import fx

from agents.expert.decline import ExpertDecline
from agents.expert.ir.expr import Const, Expr, IndexValue, Op, cast
from agents.expert.ir.index import Affine
from agents.expert.ir.lower import Lowering
from agents.expert.ir.values import TV, broadcast_to


def _pair(tv: TV, shape: tuple[int, ...]) -> tuple[Any, Any, str]:
    """(re, im) loaders of ``tv`` over the complex ``shape`` (a real operand has im = 0)."""
    if tv.complex:
        load = broadcast_to(tv, (*shape, 2))
        return (lambda idx: load([*idx, Affine.of(0)]), lambda idx: load([*idx, Affine.of(1)]), tv.dtype)
    load = broadcast_to(tv, shape)
    return load, None, tv.dtype


def _binary(lw: Lowering, node: fx.Node, op: str, a: TV, b: TV) -> TV:
    shape = tuple(int(s) for s in node.meta["val"].shape)
    (ar, ai, da), (br, bi, db) = _pair(a, shape), _pair(b, shape)
    dt = "float64" if "float64" in (da, db) else "float32"

    def c(e: Any, idx: list[Affine]) -> Expr:
        return cast(e(idx), dt)

    def component(idx: list[Affine]) -> Expr:
        lead, k = idx[:-1], idx[-1]
        x0, y0 = c(ar, lead), c(br, lead)
        x1 = c(ai, lead) if ai is not None else None
        y1 = c(bi, lead) if bi is not None else None
        if op == "mul":
            re = Op("mul", (x0, y0), dt)
            im = Op("mul", (x0, y1), dt) if y1 is not None else None
            if x1 is not None:
                re = Op("sub", (re, Op("mul", (x1, y1), dt)), dt) if y1 is not None else re
                im2 = Op("mul", (x1, y0), dt)
                im = Op("add", (im, im2), dt) if im is not None else im2
        else:
            re = Op(op, (x0, y0), dt)
            im = Op(op, (x1, y1), dt) if x1 is not None and y1 is not None else (x1 if y1 is None else
                                                                                   Op("neg", (y1,), dt) if op == "sub" else y1)
        first = Op("eq", (IndexValue(k), Const(0, "int64")), "bool")
        return Op("where", (first, re, im if im is not None else Const(0.0, dt)), dt)

    return TV((*shape, 2), dt, component, complex=True)


def lower_complex(lw: Lowering, node: fx.Node, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    from agents.expert.ir import lower_views as views

    short = name.split(".")[1]
    x = args[0] if args else None
    if short == "view_as_complex":
        return TV(x.shape, x.dtype, x.loader, x.view, complex=True)
    if short == "view_as_real":
        return TV(x.shape, x.dtype, x.loader, x.view, complex=False)
    if short in ("clone", "alias", "detach", "_to_copy", "contiguous") and isinstance(x, TV) and \
            str(node.meta["val"].dtype).startswith("torch.complex") and x.complex:
        return x
    if short in ("mul", "add", "sub") and len(args) == 2 and all(isinstance(a, TV) for a in args) and not kwargs:
        return _binary(lw, node, short, args[0], args[1])
    if isinstance(x, TV) and x.complex:
        n = x.ndim - 1  # the complex rank
        rest = list(args[1:])
        out: TV | None = None
        if short in ("view", "_unsafe_view", "reshape"):
            out = views._view(lw, node, x, [*views._resolve_shape(list(rest[0]), x.numel // 2), 2])
        elif short == "slice":
            dim = rest[0] if rest else 0
            out = views._slice(lw, node, x, dim + n if dim < 0 else dim, *rest[1:])
        elif short == "unsqueeze":
            dim = rest[0]
            out = views._unsqueeze(lw, node, x, dim + n + 1 if dim < 0 else dim)
        elif short == "select":
            dim = rest[0]
            out = views._select(lw, node, x, dim + n if dim < 0 else dim, rest[1])
        elif short == "permute":
            out = views._permute(lw, node, x, [d + n if d < 0 else d for d in rest[0]] + [n])
        elif short == "expand":
            out = views._expand(lw, node, x, [*rest[0], 2])
        if out is not None:
            out.complex = True
            return out
    raise ExpertDecline(f"{name} on complex tensors has no expert lowering")
