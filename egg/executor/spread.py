"""Spreading independent work over an executor's workers from caller threads, results in order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_ordered(fn: Callable[[T], R], items: Sequence[T], width: int) -> list[R]:
    """``[fn(x) for x in items]``, ``width`` at a time; the first exception (in item order) is raised
    after every call has finished, so no evaluation is left running behind the caller's back.

    An interrupt of the caller (Ctrl-C, a sweep's SIGINT) cancels the items not yet started: the
    caller is about to close the executor, and each of them would only fail against the closed
    executor and be recorded as a failure (a suite would write a failed result for every problem
    it never ran). The items already running finish first."""
    if width <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    pool = ThreadPoolExecutor(max_workers=min(width, len(items)), thread_name_prefix="egg-spread")
    try:
        futures = [pool.submit(fn, x) for x in items]
        wait(futures)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return [f.result() for f in futures]
