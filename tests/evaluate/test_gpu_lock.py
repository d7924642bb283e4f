"""The per-GPU reader-writer lock the judges of one GPU share: trials together, timing alone.

Two GpuLock instances on one file contend as two judge processes do (flock belongs to the open
file, and each instance opens its own)."""

from __future__ import annotations

import threading
import time

from egg.evaluate.gpu_lock import GpuLock


def _after(lock_cm, started: threading.Event, got: list[float]) -> threading.Thread:
    def hold() -> None:
        started.set()
        with lock_cm():
            got.append(time.monotonic())

    return threading.Thread(target=hold)


def test_shared_holders_coexist_and_an_exclusive_one_waits_for_them(tmp_path):
    path = tmp_path / "gpu.lock"
    trials, other_trials, timing = GpuLock(path), GpuLock(path), GpuLock(path)
    with trials.shared():
        with other_trials.shared():  # a second candidate's trials share the GPU: no wait
            pass
        started, got = threading.Event(), []
        waiter = _after(timing.exclusive, started, got)
        waiter.start()
        started.wait()
        time.sleep(0.5)
        assert got == []  # timing waits while trials run
        released = time.monotonic()
    waiter.join(timeout=10)
    assert got and got[0] >= released
    assert timing.waited_s >= 0.4


def test_trials_wait_while_another_candidate_is_timed(tmp_path):
    path = tmp_path / "gpu.lock"
    timing, trials = GpuLock(path), GpuLock(path)
    with timing.exclusive():
        started, got = threading.Event(), []
        waiter = _after(trials.shared, started, got)
        waiter.start()
        started.wait()
        time.sleep(0.3)
        assert got == []
    waiter.join(timeout=10)
    assert got


def test_no_lock_on_cpu():
    lock = GpuLock(None)
    with lock.exclusive(), lock.shared():
        pass
    assert lock.path is None and lock.waited_s == 0.0


def test_a_waiting_timing_goes_before_trials_that_arrive_after_it(tmp_path):
    # Without the gate, flock grants every new shared request while a shared holder remains, so
    # a stream of overlapping trials would keep the timing waiting for as long as it lasts.
    path = tmp_path / "gpu.lock"
    trials, timing, late_trials = GpuLock(path), GpuLock(path), GpuLock(path)
    with trials.shared():
        started = threading.Event()
        timer = _after(timing.exclusive, started, [])
        timer.start()
        started.wait()
        time.sleep(0.3)  # the timing is now waiting for the first trials
        late_started, late_got = threading.Event(), []
        late = _after(late_trials.shared, late_started, late_got)
        late.start()
        late_started.wait()
        time.sleep(0.3)
        assert late_got == []  # the late trials queue behind the waiting timing
    timer.join(timeout=10)
    late.join(timeout=10)
    assert late_got and timing.waited_s >= 0.5 and late_trials.waited_s >= 0.2
