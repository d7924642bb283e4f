"""Stage-2 tuning rules: which template parameters a focus owns, and which configs to try next.

A template's ``tuning_space`` does not say which focus a parameter belongs to, so the name
decides: eviction hints, warps and pipeline stages are *memory* (how loads are in flight); block
sizes (XBLOCK, RBLOCK, BLOCK_M/N/K) are *tiling*; everything else (persistent vs looped
reductions, split-K, GROUP_M swizzles) is *parallel mapping*.

Candidates are single-parameter moves away from the parent's config, most promising first: for
numbers the next larger value, then the next smaller, then the rest by distance; for flags the
alternatives in the order the template lists them. Kernels with the most elements are tuned
first (they dominate the runtime).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.expert.templates import template_for
from egg.vocabulary import Focus

if TYPE_CHECKING:
    from agents.expert.design import Variant

_MEMORY_WORDS = ("evict", "cache", "hint", "warps", "stages")
_TILING_WORDS = ("block", "tile")
FOCUS_PRINCIPLES: dict[Focus, list[str]] = {
    Focus.PARALLEL_MAPPING: ["parallel-mapping/fill-the-machine-in-waves"],
    Focus.TILING: ["tiling/power-of-two-blocks-with-masks", "tiling/autotune-narrowly"],
    Focus.MEMORY: ["memory/eviction-hints", "tiling/num-warps-match-work"],
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
    kernel: str
    param: str
    old: Any
    new: Any

    def text(self) -> str:
        return f"{self.kernel} {self.param} {self.old!r} -> {self.new!r}"


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


def moves(variant: Variant, current: dict[str, dict[str, Any]], focus: Focus, device: str) -> list[Move]:
    """Single-parameter changes of ``focus``, best first."""
    out: list[Move] = []
    kernels = sorted(variant.program.kernels, key=lambda k: -k.xnumel * k.rnumel)
    for k in kernels:
        template = template_for(k)
        config = {**template.default_config(k, device), **current.get(k.name, {})}
        for param, values in template.tuning_space(k).items():
            if focus_of(param) is not focus or not values:
                continue
            for value in _ordered_alternatives(config.get(param), list(values)):
                out.append(Move(kernel=k.name, param=param, old=config.get(param), new=value))
    firsts, rest, seen = [], [], set()
    for m in out:  # one move per parameter first (breadth), then the remaining alternatives
        key = (m.kernel, m.param)
        (rest if key in seen else firsts).append(m)
        seen.add(key)
    return firsts + rest
