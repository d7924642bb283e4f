"""The context manager: what each agent is told about the run so far, within a token budget.

* :func:`summarize_stage` — per-stage summary: which structure won and why, with numbers, and
  what failed (reasons de-duplicated). Stage 2 agents see stage 1's summary, not its transcripts.
* :func:`compress_history` — an agent's compressed attempt history: best so far, its own
  attempts with their outcomes, errors de-duplicated across candidates.
* :func:`fit_tokens` — trims text to a token budget (about four characters a token).
"""

from egg.context.history import compress_history, feedback_for
from egg.context.summary import StageSummary, summarize_stage
from egg.context.tokens import estimate_tokens, fit_tokens

__all__ = [
    "StageSummary",
    "compress_history",
    "estimate_tokens",
    "feedback_for",
    "fit_tokens",
    "summarize_stage",
]
