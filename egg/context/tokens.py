"""Token budgets, approximated as four characters a token (close enough for English and code)."""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def fit_tokens(lines: list[str], budget_tokens: int, marker: str = "... ({n} more lines omitted)") -> str:
    """Join whole lines, in order, until the budget is reached; say how many were left out."""
    kept: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            kept.append(marker.format(n=len(lines) - i))
            break
        kept.append(line)
        used += cost
    return "\n".join(kept)
