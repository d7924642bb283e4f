"""map_ordered: results in order, and an interrupt of the caller starts nothing new."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from egg.executor.spread import map_ordered


def test_results_come_back_in_item_order():
    assert map_ordered(lambda x: (time.sleep(0.05 * (3 - x)), x * x)[1], [0, 1, 2, 3], 2) == [0, 1, 4, 9]


def test_the_first_exception_in_item_order_is_raised_after_all_calls_finish():
    finished: list[int] = []

    def fn(x: int) -> int:
        time.sleep(0.05 * x)
        finished.append(x)
        if x in (1, 2):
            raise ValueError(f"item {x}")
        return x

    with pytest.raises(ValueError, match="item 1"):
        map_ordered(fn, [0, 1, 2, 3], 2)
    assert sorted(finished) == [0, 1, 2, 3]


def test_an_interrupt_cancels_the_items_not_yet_started():
    started: list[int] = []
    lock = threading.Lock()

    def fn(x: int) -> int:
        with lock:
            started.append(x)
        if x == 0:
            time.sleep(0.1)  # every item is submitted by now: the caller waits for them
            os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C or a sweep's SIGINT does to the caller
        time.sleep(0.3)
        return x

    # Python's own SIGINT handler, whatever an earlier test of this worker process left installed
    # (in CI's run of 997252f the signal raised nothing here while the test passed alone)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            map_ordered(fn, list(range(8)), 2)
    finally:
        signal.signal(signal.SIGINT, previous)
    time.sleep(1.5)  # long enough for the six queued items to start, were they still queued
    assert 0 in started and len(started) <= 2  # at most the two running calls; the queued six never started
