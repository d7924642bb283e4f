"""Spreading independent work over an executor's workers from caller threads, results in order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_ordered(fn: Callable[[T], R], items: Sequence[T], width: int) -> list[R]:
    """``[fn(x) for x in items]``, ``width`` at a time; the first exception (in item order) is raised
    after every call has finished, so no evaluation is left running behind the caller's back."""
    if width <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(width, len(items)), thread_name_prefix="egg-spread") as pool:
        futures = [pool.submit(fn, x) for x in items]
    return [f.result() for f in futures]
