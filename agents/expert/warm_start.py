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

from dataclasses import dataclass
from typing import Any

from agents.expert.choices import Choices
from agents.expert.design import ExpertConfig, Pick, Variant, rendered_configs
from agents.expert.target import REMEMBERED_CONFIGS
from agents.expert.templates import template_for
from agents.protocol import StrategyScore
from egg.memory.directions import parse_config_strategy

PRINCIPLE = "algorithm-structure/start-from-remembered-configs"


@dataclass
class Remembered:
    """One remembered move applied to one kernel: (param, heuristic value, remembered value)s."""

    kernel: str
    changes: list[tuple[str, Any, Any]]
    strategy: StrategyScore


def remembered_overrides(variant: Variant, choices: Choices, pick: Pick | None, strategies: list[StrategyScore],
                         ) -> tuple[dict[str, dict[str, Any]], list[Remembered]]:
    """(kernel -> {param: value}, the moves applied) for ``variant``'s stage-1 render."""
    limit = int(choices.target.const(REMEMBERED_CONFIGS))
    overrides: dict[str, dict[str, Any]] = {}
    applied: list[Remembered] = []
    if limit <= 0:
        return overrides, applied
    kernels = sorted(variant.program.kernels, key=lambda k: -k.xnumel * k.rnumel)
    rendered: dict[str, dict[str, Any]] | None = None  # the heuristic's values as rendered, once needed
    for s in sorted(strategies, key=lambda s: -s.score):
        if len(applied) >= limit or s.score <= 0:
            break
        changes = parse_config_strategy(s.strategy)
        if changes is None:
            continue
        for k in kernels:
            template = (pick or template_for)(k)
            if any(t != template.name for t, _, _ in changes) or any(p in overrides.get(k.name, {}) for _, p, _ in changes):
                continue
            space, _ = choices.space(template, k)
            if not all(v in space.get(p, []) for _, p, v in changes):
                continue
            # against the rendered values, not default_config's: a TF32 GEMM renders tensor-core tiles
            # (BLOCK_N 128 where the template's precision-blind default is 64), so a remembered 64 is a move
            rendered = rendered if rendered is not None else rendered_configs(variant, choices.target, pick)
            default = {**template.default_config(k, choices.target), **rendered.get(k.name, {})}
            if any(default.get(p) != v for _, p, v in changes):
                overrides.setdefault(k.name, {}).update({p: v for _, p, v in changes})
                applied.append(Remembered(k.name, [(p, default.get(p), v) for _, p, v in changes], s))
                break
    return overrides, applied


def notes_for(applied: list[Remembered], rendered: ExpertConfig) -> list[str]:
    """One note per move that reached the rendered kernels, with the values they were rendered with
    (a template may bound a value: a persistent reduction keeps XBLOCK x RBLOCK within its limit);
    a move that left every value at the heuristic's is not reported (it changed nothing)."""
    configs = {k.kernel: k.config for k in rendered.kernels}
    notes = []
    for move in applied:
        got = configs.get(move.kernel, {})
        if all(got.get(p) == old for p, old, _ in move.changes):
            continue
        moved = ", ".join(f"{p} {old!r} -> {got.get(p)!r}" + ("" if got.get(p) == new else f" (remembered {new!r})")
                          for p, old, new in move.changes)
        s = move.strategy
        notes.append(f"transition memory: {move.kernel} starts at {moved} ({s.strategy}: expected log-gain "
                     f"{s.score:+.2f} over {s.attempts} attempts on problems of this kind)")
    return notes
