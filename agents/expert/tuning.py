"""Stage-2 tuning rules: which template parameters a focus owns, and which configs to try next.

A template's ``tuning_space`` does not say which focus a parameter belongs to, so the name
decides: cache/eviction/vectorisation hints are *memory*; block sizes, warps and pipeline stages
are *tiling*; everything else (persistent grids, programs per SM, GROUP_M swizzles, splits, rows
per program) is *parallel mapping*.

Candidates are single-parameter moves away from the parent's config, most promising first: for
numbers the next larger value, then the next smaller, then the rest by distance; for flags and
hints the alternatives in the order the template lists them. Kernels with the most output
elements are tuned first (they dominate the runtime).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.expert.codegen import ExpertProgram, Variant
from egg.vocabulary import Focus

_MEMORY_WORDS = ("evict", "cache", "vec", "hint", "contig", "coalesce")
_TILING_WORDS = ("block", "warps", "stages", "tile")
FOCUS_PRINCIPLES: dict[Focus, list[str]] = {
    Focus.PARALLEL_MAPPING: ["parallel-mapping/fill-the-machine-in-waves"],
    Focus.TILING: ["tiling/power-of-two-blocks-with-masks", "tiling/num-warps-match-work", "tiling/autotune-narrowly"],
    Focus.MEMORY: ["memory/eviction-hints"],
}


def focus_of(param: str) -> Focus:
    low = param.lower()
    if any(w in low for w in _MEMORY_WORDS):
        return Focus.MEMORY
    if any(w in low for w in _TILING_WORDS):
        return Focus.TILING
    return Focus.PARALLEL_MAPPING


@dataclass
class Move:
    launcher: str
    param: str
    old: Any
    new: Any

    def text(self) -> str:
        return f"{self.launcher} {self.param} {self.old!r} -> {self.new!r}"


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


def _size(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def moves(program: ExpertProgram, variant: Variant, current: dict[str, dict[str, Any]], focus: Focus,
          device: str) -> list[Move]:
    """Single-parameter changes of ``focus``, best first."""
    out: list[Move] = []
    groups = sorted(variant.groups, key=lambda g: -_size(g.spec.out.shape))
    for g in groups:
        config = {**g.template.default_config(g.spec, device), **current.get(g.launcher, {})}
        for param, values in g.template.tuning_space(g.spec).items():
            if focus_of(param) is not focus or not values:
                continue
            for value in _ordered_alternatives(config.get(param), list(values)):
                out.append(Move(launcher=g.launcher, param=param, old=config.get(param), new=value))
    # One move per parameter first (breadth), then the remaining alternatives.
    firsts, rest, seen = [], [], set()
    for m in out:
        key = (m.launcher, m.param)
        (rest if key in seen else firsts).append(m)
        seen.add(key)
    return firsts + rest
