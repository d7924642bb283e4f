"""Stage-2 tuning rules: which template parameters a focus owns, and which configs to try next.

A template's ``tuning_space`` does not say which focus a parameter belongs to, so the name
decides: eviction hints, warps and pipeline stages are *memory* (how loads are in flight); block
sizes (XBLOCK, RBLOCK, BLOCK_M/N/K) are *tiling*; everything else (persistent vs looped
reductions, split-K, GROUP_M swizzles) is *parallel mapping*. The values tried per parameter are
the template's own, edited by the principle packs (:class:`agents.expert.choices.Choices`).

Candidates are single-parameter moves away from the parent's config. The pack order, most
promising first: for numbers the next larger value, then the next smaller, then the rest by
distance; for flags the alternatives in the order the space lists them; kernels with the most
elements first (they dominate the runtime); one move per parameter before the remaining
alternatives. Where the transition memory knows a move's strategy (``<template>.<param>=<value>``,
as :mod:`egg.memory.directions` names it) on problems like this one, moves are ordered by its
expected gain per attempt (unknown moves count as 0, ties keep the pack order).

On a GPU the tuner measures before it proposes (:mod:`agents.expert.screen`), so it can afford
more than single moves: :func:`configs` adds pairs of moves on one kernel (BLOCK_M with BLOCK_N,
warps with stages), whose gains rarely add up (a larger tile wants more warps), to the single
moves, half the screen's configs each where both are plentiful.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from egg.memory.directions import config_strategy
from egg.vocabulary import Focus

if TYPE_CHECKING:
    from agents.expert.choices import Choices
    from agents.expert.design import Pick, Variant

_MEMORY_WORDS = ("evict", "cache", "hint", "warps", "stages")
_TILING_WORDS = ("block", "tile")


def focus_of(param: str) -> Focus:
    low = param.lower()
    if any(w in low for w in _MEMORY_WORDS):
        return Focus.MEMORY
    if any(w in low for w in _TILING_WORDS):
        return Focus.TILING
    return Focus.PARALLEL_MAPPING


@dataclass
class Move:
    kernel: str
    param: str
    old: Any
    new: Any
    template: str = ""
    principle_ids: list[str] = field(default_factory=list)  # the packs' principles that shaped this value list

    def text(self) -> str:
        return f"{self.kernel} {self.param} {self.old!r} -> {self.new!r}"

    def strategy(self) -> str:
        """The memory's name for this move (egg.memory.directions.classify)."""
        return config_strategy([(self.template, self.param, self.new)])


def _ordered_alternatives(current: Any, values: list[Any]) -> list[Any]:
    others = [v for v in values if v != current]
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    if not numeric or not isinstance(current, (int, float)) or isinstance(current, bool):
        return others
    larger = sorted(v for v in others if v > current)
    smaller = sorted((v for v in others if v < current), reverse=True)
    first = larger[:1] + smaller[:1]
    rest = sorted((v for v in others if v not in first), key=lambda v: abs(v - current))
    return first + rest


def moves(variant: Variant, current: dict[str, dict[str, Any]], focus: Focus, choices: Choices,
          pick: Pick | None = None, scores: Mapping[str, float] | None = None) -> list[Move]:
    """Single-parameter changes of ``focus``, best first (see the module docstring)."""
    from agents.expert.templates import template_for

    out: list[Move] = []
    kernels = sorted(variant.program.kernels, key=lambda k: -k.xnumel * k.rnumel)
    for k in kernels:
        template = (pick or template_for)(k)
        config = {**template.default_config(k, choices.target), **current.get(k.name, {})}
        space, by = choices.space(template, k)
        for param, values in space.items():
            if focus_of(param) is not focus or not values:
                continue
            for value in _ordered_alternatives(config.get(param), list(values)):
                out.append(Move(kernel=k.name, param=param, old=config.get(param), new=value, template=template.name,
                                principle_ids=list(by.get(param, []))))
    firsts, rest, seen = [], [], set()
    for m in out:  # one move per parameter first (breadth), then the remaining alternatives
        key = (m.kernel, m.param)
        (rest if key in seen else firsts).append(m)
        seen.add(key)
    ordered = firsts + rest
    if scores:  # stable: moves the memory does not know keep the pack order among themselves
        ordered.sort(key=lambda m: -scores.get(m.strategy(), 0.0))
    return ordered


def configs(ordered: list[Move], limit: int) -> list[list[Move]]:
    """Up to ``limit`` configs, each one move or two moves of different parameters of one kernel.

    Single moves first, in ``ordered``'s order (best first); then pairs of the best single moves by
    the sum of their ranks; the pairs get at least half of ``limit`` when there are enough (a joint
    change such as a larger tile with more warps is where a measured search finds what
    single-parameter heuristics miss)."""
    if limit <= 0:
        return []
    pairs: list[tuple[int, list[Move]]] = []
    for i, a in enumerate(ordered):
        for j in range(i + 1, len(ordered)):
            b = ordered[j]
            if a.kernel == b.kernel and a.param != b.param:
                pairs.append((i + j, [a, b]))
    pairs.sort(key=lambda p: p[0])  # stable: equal rank sums keep the earlier first move first
    singles = ordered[:max(limit - min(len(pairs), limit // 2), 0)]
    out = [[m] for m in singles] + [p for _, p in pairs]
    return out[:limit]


def with_spares(ordered: list[Move], limit: int, spares: int) -> tuple[list[list[Move]], int]:
    """:func:`configs`' ``limit`` configs, then up to ``spares`` more (the next ones a larger
    screen would take), and how many of them are the screen's own (the rest replace configs that
    fail to build, run or pass the screen's check). The first ``limit`` are exactly
    ``configs(ordered, limit)``: spares change which configs are timed only where some fail."""
    primary = configs(ordered, limit)
    extra = [c for c in configs(ordered, limit + max(spares, 0)) if c not in primary][:max(spares, 0)]
    return primary + extra, len(primary)
