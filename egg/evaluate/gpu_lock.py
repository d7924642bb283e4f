"""Who may use a GPU while a candidate is timed: a reader-writer lock per physical GPU, across processes.

Several judges may share one GPU (``Harness(workers=2)`` starts two per GPU, a Ray actor's harness
too, and two ``egg`` processes on one host may both use it), so that one candidate's CPU work
(the runner's fork, imports, CUDA extension builds) overlaps another's GPU work. Correctness
trials and the kernel ablation take the lock *shared*: they measure nothing, and sharing the GPU
only slows them. Timing, the baselines and the GPU-time profile take it *exclusive*: while a
candidate is timed nothing else that EGG starts runs on that GPU, so no timing is ever perturbed
by another candidate (a co-tenant EGG does not know about still can: the judge's clock check
is the guard there).

The lock is an ``flock`` on a file named by the GPU's UUID (not its index, which depends on
``CUDA_VISIBLE_DEVICES``) under the temp directory, per user. ``flock`` locks belong to the open
file, so they are released when a judge dies, however it dies. On CPU there is no lock: the
interpreter's timings are not comparable anyway.

``flock`` has no writer preference: while any shared holder remains, a new shared request is
granted at once, so with many judges on one GPU (a sweep runs several suites side by side) their
overlapping trials could keep a timing waiting indefinitely. A second lock file, the *gate*, is
taken exclusively by every request while it waits for the main lock and released once that lock
is held: a timing that waits holds the gate, so trials that arrive after it queue behind it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import torch


def lock_dir() -> Path:
    """Where EGG's per-device lock files live: ``EGG_LOCK_DIR``, default a per-user folder under the
    temp directory. Every EGG process that should see the others must use the same folder."""
    folder = Path(os.environ.get("EGG_LOCK_DIR") or Path(tempfile.gettempdir()) / f"egg-gpu-locks-{os.getuid()}")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def device_key(device: torch.device) -> str:
    """A name for the physical device that every process agrees on: a GPU's UUID (its index depends
    on ``CUDA_VISIBLE_DEVICES``), or ``cpu``."""
    if device.type != "cuda":
        return "cpu"
    props = torch.cuda.get_device_properties(device)
    key = str(getattr(props, "uuid", "")) or f"index-{os.environ.get('CUDA_VISIBLE_DEVICES', '')}-{device.index}"
    return key.replace("/", "_")


def lock_path(device: torch.device) -> Path | None:
    """The timing lock file for ``device`` (None on CPU)."""
    if device.type != "cuda":
        return None
    return lock_dir() / f"{device_key(device)}.lock"


class GpuLock:
    """``shared()`` for work that measures nothing, ``exclusive()`` for timing; both report the wait."""

    def __init__(self, path: Path | None) -> None:
        """``path``: the lock file (None: no lock, on CPU). Each instance opens its own descriptor,
        so two instances contend like two judges do."""
        self.path = str(path) if path else None
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600) if path else None
        self._gate = os.open(f"{path}.gate", os.O_RDWR | os.O_CREAT, 0o600) if path else None
        self.waited_s = 0.0  # seconds spent waiting for the lock in the current evaluation

    @classmethod
    def for_device(cls, device: torch.device) -> GpuLock:
        return cls(lock_path(device))

    @contextlib.contextmanager
    def _hold(self, mode: int) -> Iterator[None]:
        if self._fd is None or self._gate is None:
            yield
            return
        started = time.perf_counter()
        fcntl.flock(self._gate, fcntl.LOCK_EX)  # queue in arrival order (see the module docstring)
        try:
            fcntl.flock(self._fd, mode)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)
        self.waited_s += time.perf_counter() - started
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def shared(self) -> contextlib.AbstractContextManager[None]:
        return self._hold(fcntl.LOCK_SH)

    def exclusive(self) -> contextlib.AbstractContextManager[None]:
        return self._hold(fcntl.LOCK_EX)

    def close(self) -> None:
        for fd in (self._fd, self._gate):
            if fd is not None:
                os.close(fd)
        self._fd = self._gate = None
