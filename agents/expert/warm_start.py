"""Stage 1 starts from the configs the transition memory found paying off (issue 14).

Stage 2's moves are recorded with their measured gain under the memory's names for them
(``matmul.BLOCK_M=128``; a screened pair ``matmul.BLOCK_M=128, matmul.num_warps=8``:
:func:`egg.memory.directions.classify`). Where such a move paid off on problems of this kind (the
memory's score: expected log-gain per attempt, non-zero only when clear of the recorded spread,
:mod:`egg.memory.retrieve`), the designer renders its structures with that value from the start,
so the run does not spend stage-2 candidates rediscovering it. The principle
``algorithm-structure/start-from-remembered-configs`` and its constant ``remembered-configs`` (how
many moves; 0: off) decide it; stage 2 still searches around the result, the heuristic's value
among the alternatives.

A move names a template and a parameter, not a kernel: it goes to the largest kernel (elements
times reduction length) rendered by that template whose tuning space holds the value and whose
heuristic config differs from it, one move per kernel parameter, best scored first.
"""

from __future__ import annotations

import json
from typing import Any

from agents.expert.choices import Choices
from agents.expert.design import Pick, Variant
from agents.expert.target import REMEMBERED_CONFIGS
from agents.expert.templates import template_for
from agents.protocol import StrategyScore

PRINCIPLE = "algorithm-structure/start-from-remembered-configs"


def parse_move(strategy: str) -> list[tuple[str, str, Any]] | None:
    """``[(template, param, value)]`` of a tuning strategy, or None for anything else (a variant, an
    LLM's principles, "no config change")."""
    changes: list[tuple[str, str, Any]] = []
    for part in strategy.split(", "):
        name, eq, raw = part.partition("=")
        template, dot, param = name.rpartition(".")
        if not (eq and dot and template and param) or " " in name:
            return None
        try:
            changes.append((template, param, json.loads(raw)))
        except ValueError:
            return None
    return changes or None


def remembered_overrides(variant: Variant, choices: Choices, pick: Pick | None, strategies: list[StrategyScore],
                         ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(kernel -> {param: value}, one note per applied move) for ``variant``'s stage-1 render."""
    limit = int(choices.target.const(REMEMBERED_CONFIGS))
    overrides: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    if limit <= 0:
        return overrides, notes
    kernels = sorted(variant.program.kernels, key=lambda k: -k.xnumel * k.rnumel)
    for s in sorted(strategies, key=lambda s: -s.score):
        if len(notes) >= limit or s.score <= 0:
            break
        changes = parse_move(s.strategy)
        if changes is None:
            continue
        for k in kernels:
            template = (pick or template_for)(k)
            if any(t != template.name for t, _, _ in changes) or any(p in overrides.get(k.name, {}) for _, p, _ in changes):
                continue
            space, _ = choices.space(template, k)
            default = template.default_config(k, choices.target)
            if all(v in space.get(p, []) for _, p, v in changes) and any(default.get(p) != v for _, p, v in changes):
                overrides.setdefault(k.name, {}).update({p: v for _, p, v in changes})
                moved = ", ".join(f"{p} {default.get(p)!r} -> {v!r}" for _, p, v in changes)
                notes.append(f"transition memory: {k.name} starts at {moved} ({s.strategy}: expected log-gain "
                             f"{s.score:+.2f} over {s.attempts} attempts on problems of this kind)")
                break
    return overrides, notes
