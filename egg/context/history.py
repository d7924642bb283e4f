"""Compressed attempt history and per-agent harness feedback."""

from __future__ import annotations

import re
from collections import OrderedDict

from egg.context.tokens import fit_tokens
from egg.graph.records import CandidateRecord, best_of

# Numbers that stand alone (seeds, errors, indices), not digits inside names like bfloat16 or sm_90.
_NUMBERS = re.compile(r"(?<![A-Za-z_0-9.])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![A-Za-z_0-9])")


def normalize_reason(reason: str) -> str:
    """Reasons that differ only in numbers (seeds, errors, indices) count as one."""
    return _NUMBERS.sub("N", reason)


def feedback_for(records: list[CandidateRecord], agent: str, limit: int = 4) -> list[str]:
    """The harness's words on this agent's latest attempts, newest first, one line each."""
    lines: list[str] = []
    for record in reversed([r for r in records if r.agent == agent]):
        if record.accepted:
            lines.append(f"{record.id} was accepted: {record.line()}")
        else:
            reasons = "; ".join(record.reasons[:2]) or "rejected"
            lines.append(f"{record.id} was rejected at {record.stage_failed}: {reasons}")
        if len(lines) >= limit:
            break
    return lines


def compress_history(records: list[CandidateRecord], budget_tokens: int = 600) -> str | None:
    """Best so far, then every distinct failure once (with how often it happened)."""
    if not records:
        return None
    lines: list[str] = []
    best = best_of(records)
    lines.append(f"Best so far: {best.line()}" if best else "Best so far: nothing accepted yet.")
    if best is not None and best.evidence:
        lines.append(f"What limits it: {best.evidence}")
    seen: OrderedDict[str, list[str]] = OrderedDict()
    for record in records:
        if record.accepted:
            continue
        key = f"{record.stage_failed}: {normalize_reason(record.reasons[0] if record.reasons else 'rejected')}"
        seen.setdefault(key, []).append(record.id)
    if seen:
        lines.append("Distinct failures so far:")
        for key, ids in seen.items():
            lines.append(f"- {key} ({len(ids)}x, e.g. {ids[0]})")
    accepted = [r for r in records if r.accepted and r is not best]
    if accepted:
        lines.append("Other accepted attempts:")
        lines += [f"- {r.line()}" for r in accepted]
    return fit_tokens(lines, budget_tokens)
