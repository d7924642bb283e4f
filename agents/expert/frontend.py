"""The captured graph the codegen reads: ``egg.capture.capture_problem`` (contract section 1).

One capture serves the analysis, the prompts and the codegen; this module only turns its one-line
``CaptureError`` into the expert's decline (the reason users see).
"""

from __future__ import annotations

from pathlib import Path

from agents.expert.decline import ExpertDecline
from egg.capture import CapturedGraph, CaptureError, capture_problem


def capture(path: str | Path, shape_set: str = "default") -> CapturedGraph:
    """The problem's canonical graph at ``shape_set``; ExpertDecline with the reason otherwise."""
    try:
        return capture_problem(Path(path), shape_set=shape_set, device="cpu")
    except CaptureError as exc:
        raise ExpertDecline(str(exc)) from None
