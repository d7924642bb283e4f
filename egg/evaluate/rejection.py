"""How an evaluation ends early: :class:`Rejected` carries the stage and a one-line reason.

Reasons go to LLM agents as feedback, so each is one line that names what was wrong and, where the
candidate's code is at fault, the candidate's file line.
"""

from __future__ import annotations

import traceback
from pathlib import Path

from egg.evaluate.verdict import StageFailed

_FATAL_CUDA = (
    "illegal memory access",
    "CUDA error",
    "device-side assert",
    "Triton Error [CUDA]",
    "misaligned address",
    "unspecified launch failure",
    "an illegal instruction",
    "CUDA_ERROR",
)


class Rejected(Exception):
    def __init__(self, stage: StageFailed, reason: str) -> None:
        reason = " ".join(reason.split())
        super().__init__(reason)
        self.stage: StageFailed = stage
        self.reason = reason


def is_fatal_cuda(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}"
    return type(exc).__name__ == "AcceleratorError" or any(s in text for s in _FATAL_CUDA)


def is_out_of_memory(reason: str) -> bool:
    """Whether a verdict's reason is PyTorch's device out-of-memory error (raised in the runner or
    the judge). A candidate can fake the text; all it gets is a second evaluation, run alone."""
    return "OutOfMemoryError" in reason or "CUDA out of memory" in reason


# The verdict note that makes an out-of-memory rejection the candidate's own: no other EGG evaluation,
# in this process or another (egg/evaluate/device_lease.py), held the device while it ran.
OWN_OUT_OF_MEMORY = "ran out of device memory with the device to itself"


def is_build_error(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}"
    return any(s in text for s in ("Error building extension", "ninja", "nvcc", "CompilationError", "compile"))


def describe_exception(exc: BaseException, candidate_path: str) -> str:
    """One line: exception type, message, and the candidate's file line where it was raised."""
    message = " ".join(str(exc).split())[:300]
    name = Path(candidate_path).name
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).name == name:
        return f"SyntaxError: {exc.msg} ({name} line {exc.lineno})"
    where = ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).name == name and Path(frame.filename).resolve() == Path(candidate_path).resolve():
            code = f": `{frame.line.strip()}`" if frame.line else ""
            where = f" ({name} line {frame.lineno}{code})"
            break
    return f"{type(exc).__name__}: {message}{where}"
