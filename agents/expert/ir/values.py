"""What lowering knows about each graph value: a *loader* (index -> element expression).

A :class:`TV` (tensor value) is either **lazy** (``view is None``: its elements are computed by
``loader`` wherever a consumer needs them, which is how pointwise work fuses into its consumers)
or a **view** of a stored buffer (``view`` set: the buffer seen through an affine layout, which
an extern torch call can take as a tensor without a copy). View ops build new loaders (and new
layouts where the result is still affine), so they never cut a fusion.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.expert.ir.expr import Expr, Load
from agents.expert.ir.index import Affine
from agents.expert.ir.nodes import Layout, View

Loader = Callable[[list[Affine]], Expr]


@dataclass
class TV:
    shape: tuple[int, ...]
    dtype: str
    loader: Loader
    view: View | None = None
    complex: bool = False  # a complex tensor held as its real view: a trailing (re, im) dim of 2

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def at(self, idx: list[Any]) -> Expr:
        """The element at ``idx`` (affine expressions or vars, one per dim)."""
        if len(idx) != len(self.shape):
            raise ValueError(f"index of rank {len(idx)} for a tensor of shape {self.shape}")
        return self.loader([Affine.of(i) for i in idx])


def from_view(view: View) -> TV:
    layout = view.layout

    def load(idx: list[Affine]) -> Expr:
        return Load(view.buffer, layout.index(idx), layout.dtype)

    return TV(layout.shape, layout.dtype, load, view)


def with_layout(tv: TV, layout: Layout | None, loader: Loader, shape: tuple[int, ...]) -> TV:
    """A view op's result: a new view of the same buffer where ``layout`` exists, else lazy."""
    if tv.view is not None and layout is not None:
        return from_view(View(tv.view.buffer, layout))
    return TV(shape, tv.dtype, loader)


def broadcast_to(tv: TV, shape: tuple[int, ...]) -> Loader:
    """A loader over ``shape`` reading ``tv`` with torch's broadcasting (right-aligned)."""
    lead = len(shape) - tv.ndim
    if lead < 0:
        raise ValueError(f"cannot broadcast {tv.shape} to {shape}")
    for s, o in zip(tv.shape, shape[lead:]):
        if s not in (1, o):
            raise ValueError(f"cannot broadcast {tv.shape} to {shape}")

    def load(idx: list[Any]) -> Expr:
        sub = [Affine.of(0) if s == 1 else Affine.of(i) for s, i in zip(tv.shape, idx[lead:])]
        return tv.loader(sub)

    return load
