"""Retrieval: the principles one agent should read, most specific first, within a token budget.

Filtering: a principle is a candidate when its stage equals the agent's stage, its focus equals
the agent's focus (``focus=None``: any focus of the stage), it applies to at least one of the
problem's operator classes (no classes given: no filter), and its pack's ``targets`` include the
target GPU (a pack without targets fits every GPU; no target given: no filter).

Score (higher first), so that advice written for exactly this kind of problem comes first:

* op-class specificity ``|applies_to ∩ op_classes| / |applies_to|`` (0..1): a principle about
  ``[softmax]`` beats one about eight classes on a softmax problem;
* bottleneck: +0.5 when the principle's bottleneck matches the problem's, -0.25 when it differs
  (a mismatch is weaker evidence than a match: fusing an elementwise chain still helps a
  latency-bound problem), 0 when either is unknown;
* target: +0.25 when the pack names the target GPU.

Ties: the later-loaded pack first (user packs before built-ins), then the order in the pack.
Tokens are estimated as ``ceil(len(rendered bullet) / 4)``; retrieval walks the ranking and stops
at the first principle that would exceed the budget, so the result is always a prefix of the
ranking (deterministic, and never a less specific principle in place of a more specific one).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

from egg.errors import EggInputError
from egg.vocabulary import STAGE_FOCUSES, Bottleneck, Focus, OpClass, Stage
from principles.packset import Entry, PackSet
from principles.render import render_principle
from principles.schema import Principle

DEFAULT_TOKEN_BUDGET = 1500


class Ranked(NamedTuple):
    principle: Principle
    score: float
    tokens: int
    pack: str


def estimate_tokens(text: str) -> int:
    """About four characters per token: good enough to budget English prose and code ids."""
    return math.ceil(len(text) / 4)


def principle_tokens(principle: Principle) -> int:
    return estimate_tokens(render_principle(principle))


def _enum(enum: type, value: object, what: str):  # type: ignore[no-untyped-def]
    try:
        return enum(value.value if isinstance(value, enum) else value)
    except ValueError:
        allowed = " | ".join(m.value for m in enum)
        raise EggInputError(f"unknown {what} {value!r} (expected {allowed})") from None


def specificity(
    entry: Entry,
    *,
    op_classes: frozenset[OpClass],
    bottleneck: Bottleneck | None,
    target: str | None,
) -> float | None:
    """The score above, or None when the principle does not apply at all."""
    principle = entry.principle
    score = 0.0
    if op_classes:
        overlap = len(op_classes.intersection(principle.applies_to))
        if overlap == 0:
            return None
        score += overlap / len(principle.applies_to)
    targets = entry.pack.pack.targets
    if target is not None and targets:
        if target not in targets:
            return None
        score += 0.25
    if bottleneck is not None and principle.bottleneck is not None:
        score += 0.5 if principle.bottleneck == bottleneck else -0.25
    return score


def rank(
    packs: PackSet,
    *,
    stage: Stage | str,
    focus: Focus | str | None = None,
    op_classes: Iterable[OpClass | str] = (),
    bottleneck: Bottleneck | str | None = None,
    target: str | None = None,
) -> list[Ranked]:
    """Every applicable principle with its score and token cost, best first (no budget)."""
    stage = _enum(Stage, stage, "stage")
    focuses = STAGE_FOCUSES[stage] if focus is None else (_enum(Focus, focus, "focus"),)
    if not set(focuses) <= set(STAGE_FOCUSES[stage]):
        allowed = " | ".join(f.value for f in STAGE_FOCUSES[stage])
        raise EggInputError(f"focus {focuses[0].value!r} is not a focus of stage {stage.value!r} (allowed: {allowed})")
    classes = frozenset(_enum(OpClass, c, "operator class") for c in op_classes)
    bn = _enum(Bottleneck, bottleneck, "bottleneck") if bottleneck is not None else None
    scored: list[tuple[tuple[float, int, int], Ranked]] = []
    for entry in packs.entries():
        p = entry.principle
        if p.stage != stage or p.focus not in focuses:
            continue
        score = specificity(entry, op_classes=classes, bottleneck=bn, target=target)
        if score is None:
            continue
        key = (-round(score, 9), -entry.rank, entry.position)
        scored.append((key, Ranked(p, score, principle_tokens(p), entry.pack.name)))
    scored.sort(key=lambda item: item[0])
    return [r for _, r in scored]


def retrieve(
    packs: PackSet,
    *,
    stage: Stage | str,
    focus: Focus | str | None = None,
    op_classes: Iterable[OpClass | str] = (),
    bottleneck: Bottleneck | str | None = None,
    token_budget: int | None = DEFAULT_TOKEN_BUDGET,
    target: str | None = None,
) -> list[Principle]:
    """The principles an agent at (stage, focus) should read for this problem, within the budget.

    ``token_budget=None`` means no limit. The total of :func:`principle_tokens` over the result is
    at most ``token_budget``; ``render_principles(result)`` is what to put in the prompt.
    """
    chosen: list[Principle] = []
    used = 0
    for ranked in rank(packs, stage=stage, focus=focus, op_classes=op_classes, bottleneck=bottleneck,
                       target=target):
        if token_budget is not None and used + ranked.tokens > token_budget:
            break
        chosen.append(ranked.principle)
        used += ranked.tokens
    return chosen
