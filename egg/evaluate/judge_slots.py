"""The harness's judges, and when a job may take one: beside other jobs, or alone on its device.

Two judges per GPU let one candidate's CPU work (runner start, load, Triton and CUDA builds) overlap
another's GPU work (:mod:`egg.evaluate.harness`). But each judge also holds its problem's reference
inputs, private copies, expected outputs and the shared buffers in device memory for the whole
evaluation. On KernelBench's level-1 problems that is up to 50 GiB per judge on the H200 (six-GB
tensors; the sweep at 0d6d5bc, 2026-12-02), and the runner beside it holds the candidate's outputs
and temporaries: two such evaluations leave a runner no room, and the out-of-memory error would be
counted as the candidate's. 31 candidates of 23 problems were rejected that way in an earlier sweep
(judges then also leaked a buffer set per evaluation: :class:`egg.evaluate.buffers.Arena`).

So :meth:`JudgeSlots.take` can take a judge *alone*: it waits until every judge of some device is
free and holds them all, so nothing else runs on that device meanwhile. Jobs asking for a shared
judge wait while an alone job waits (no starvation). :meth:`JudgeSlots.take` also reports whether
another job overlapped the one it served on the same device. The harness uses that to tell an
out-of-memory caused by a neighbour (re-run alone) from one the candidate caused by itself
(rejected as before; see :mod:`egg.evaluate.harness`).

One process's view only: other processes on the same GPU (a second ``egg`` run) are the business of
:mod:`egg.evaluate.device_lease`, which the harness holds around every job (shared, or exclusive
for a job taken alone) and which reports their overlap too.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from egg.evaluate.pool import JudgeProcess


@dataclass
class Taken:
    """What :meth:`JudgeSlots.take` hands out; ``overlapped`` is final once the block ends."""

    judge: JudgeProcess
    alone: bool
    overlapped: bool = False


class JudgeSlots:
    """Free judges (last in, first out: a caller evaluating one candidate at a time keeps its warm judge)."""

    def __init__(self, judges: list[JudgeProcess]) -> None:
        self._free = list(judges)
        self._per_device = Counter(j.label for j in judges)
        self._busy: Counter[str] = Counter()  # jobs in flight per device
        self._starts: Counter[str] = Counter()  # jobs ever started per device
        self._alone_waiting = 0
        self._alone_problems: dict[str, str] = {}  # problem hash -> why its evaluations run alone
        self._device_wide: set[str] = set()  # of those, the ones alone among every EGG process's too
        self._cond = threading.Condition()

    def alone_reason(self, problem: str) -> str | None:
        """Why evaluations of ``problem`` (its hash) take a judge alone, or None: they share."""
        return self._alone_problems.get(problem)

    def send_alone(self, problem: str, why: str, device_wide: bool = False) -> None:
        """Later evaluations of ``problem`` take a judge alone, for ``why``; ``device_wide``: alone
        among other EGG processes' evaluations too (the device lease, exclusive)."""
        self._alone_problems.setdefault(problem, why)
        if device_wide:
            self._device_wide.add(problem)

    def device_wide(self, problem: str) -> bool:
        """Whether ``problem``'s evaluations hold the device's lease exclusive (egg.evaluate.device_lease):
        one ran out of memory beside another evaluation. A heavy problem (:meth:`note_peak`) is kept
        from this harness's other judges only; another process's overlap is seen and re-run."""
        return problem in self._device_wide

    def note_peak(self, problem: str, label: str, peak: int | None, total: int | None) -> str | None:
        """After an evaluation on device ``label``: a problem whose judge peaked above its share of
        the device (:func:`heavy_reason`) runs alone from now on; returns why, the first time only."""
        if problem in self._alone_problems:
            return None
        why = heavy_reason(peak, total, self._per_device[label])
        if why:
            self.send_alone(problem, f"an earlier evaluation of this problem: {why}")
        return why

    def shares_devices(self) -> bool:
        """Whether any device has more than one judge (only then can jobs overlap on one)."""
        return any(n > 1 for n in self._per_device.values())

    @contextlib.contextmanager
    def take(self, alone: bool = False) -> Iterator[Taken]:
        with self._cond:
            if alone:
                self._alone_waiting += 1
                try:
                    device = self._cond.wait_for(self._device_all_free)
                finally:
                    self._alone_waiting -= 1
                held = [j for j in self._free if j.label == device]
                self._free = [j for j in self._free if j.label != device]
                judge = held[-1]
            else:
                self._cond.wait_for(lambda: self._free and not self._alone_waiting)
                judge = self._free.pop()
                held = [judge]
            device = judge.label
            others_at_start = self._busy[device]
            self._busy[device] += 1
            self._starts[device] += 1
            started_before = self._starts[device]
        taken = Taken(judge, alone)
        try:
            yield taken
        finally:
            with self._cond:
                # another job was in flight when this one started, or one started while it ran
                taken.overlapped = others_at_start > 0 or self._starts[device] > started_before
                self._busy[device] -= 1
                self._free.extend(held)
                self._cond.notify_all()

    def _device_all_free(self) -> str | None:
        free = Counter(j.label for j in self._free)
        return next((d for d, n in self._per_device.items() if free[d] == n), None)


def heavy_reason(peak: int | None, total: int | None, sharing: int) -> str | None:
    """Why a problem should run alone from now on, or None: its judge alone peaked above its share
    of the device, the device's memory over twice its ``sharing`` judges (the runner beside each
    judge holds about as much again: the candidate's outputs and temporaries). Above that, two of
    its evaluations side by side can run each other out of memory; waiting for it to happen costs an
    evaluation and a re-run, and the verdict hurt may be the neighbour's."""
    if peak is None or not total or sharing < 2 or peak <= total / (2 * sharing):
        return None
    return (f"its judge peaked at {peak / 2**30:.1f} GiB of the device's {total / 2**30:.0f} GiB, over the "
            f"{total / 2**30 / (2 * sharing):.0f} GiB share of one of its {sharing} judges")
