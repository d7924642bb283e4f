"""One device's memory across EGG processes: every evaluation holds the device's *lease*.

:class:`egg.evaluate.judge_slots.JudgeSlots` keeps one harness's evaluations of a big problem apart,
but two ``egg`` processes on one GPU (a sweep's lanes, two users' runs) did not see each other: on
2026-12-04 (the sweep at ``50ff989``, two KernelBench level-1 processes on one H200) 7 of 20
problems lost every candidate to out-of-memory errors their neighbours caused, and the verdicts
blamed the candidates. The lease is the cross-process half:

* a reader-writer ``flock`` per device (:class:`egg.evaluate.gpu_lock.GpuLock`'s lock and gate, on
  a file of its own), held *shared* by every evaluation and *exclusive* by one that must have the
  device to itself, which waits for every other EGG evaluation on the device, in any process, and
  holds off new ones (the gate queues them behind it);
* a register of holders, so an evaluation learns whether another one held the device while it ran.
  Holders register under the register's own lock: of two overlapping holders the later sees the
  earlier's entry, and the earlier sees the ticket count move. Entries name their process; one whose
  process is gone (killed mid-evaluation) is dropped when next read.

The other EGG work that holds a problem's tensors on the device holds the lease shared too: the
expert's config screens (:mod:`agents.expert.screen_process`) and the profile of a stage's winner
(:func:`egg.graph.experience.profile_winner`). The harness takes the lease in its own process around each judge's job (``flock`` locks die with
their process, so a killed harness frees the device). The judge names the lease file in its
``ready`` message, keyed by the GPU's UUID (:func:`egg.evaluate.gpu_lock.device_key`), so processes
with different ``CUDA_VISIBLE_DEVICES`` agree. CPU judges have a lease too (the host's memory): it
costs nothing there and is how the tests exercise the cross-process rule without a GPU.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from egg.evaluate.gpu_lock import GpuLock, device_key, lock_dir


@dataclass
class Held:
    """What :func:`hold` hands out; ``overlapped`` is final once the block ends."""

    alone: bool
    waited_s: float = 0.0
    overlapped: bool = False


def lease_path(device: torch.device) -> Path:
    """The lease file of ``device`` (every process computes the same path for the same device)."""
    return lock_dir() / f"{device_key(device)}.lease"


@contextlib.contextmanager
def hold(path: Path | None, alone: bool) -> Iterator[Held]:
    """Hold the lease at ``path`` (None: no lease, nothing to share) for one evaluation: exclusive
    when ``alone``, shared otherwise."""
    if path is None:
        yield Held(alone)
        return
    lock = GpuLock(path)
    try:
        with lock.exclusive() if alone else lock.shared():
            held = Held(alone, waited_s=lock.waited_s)
            register = _Register(path)
            ticket, others = register.enter()
            held.overlapped = others > 0
            try:
                yield held
            finally:
                if register.leave() != ticket:  # someone registered after this holder, while it held
                    held.overlapped = True
    finally:
        lock.close()


class _Register:
    """The holders of one lease: a folder of entries and a ticket counter, both changed under a lock."""

    def __init__(self, path: Path) -> None:
        self.folder = Path(f"{path}.holders")
        self.folder.mkdir(mode=0o700, exist_ok=True)
        self.counter = Path(f"{path}.ticket")
        self.entry = self.folder / f"{os.getpid()}-{threading.get_ident()}-{secrets.token_hex(4)}"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[int]:
        fd = os.open(self.counter, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)  # releases the flock

    def enter(self) -> tuple[int, int]:
        """Register; returns this holder's ticket and how many live holders were there before it."""
        with self._locked() as fd:
            others = len(self._live())
            ticket = _read(fd) + 1
            os.pwrite(fd, str(ticket).encode().ljust(20), 0)
            self.entry.touch()
            return ticket, others

    def leave(self) -> int:
        """Unregister; returns the last ticket handed out."""
        with self._locked() as fd:
            self.entry.unlink(missing_ok=True)
            return _read(fd)

    def _live(self) -> list[Path]:
        live = []
        for entry in self.folder.iterdir():
            pid = int(entry.name.split("-", 1)[0]) if entry.name.split("-", 1)[0].isdigit() else -1
            if _alive(pid):
                live.append(entry)
            else:
                entry.unlink(missing_ok=True)  # its process died holding the lease
        return live


def _read(fd: int) -> int:
    raw = os.pread(fd, 20, 0).strip()
    return int(raw) if raw.isdigit() else 0


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process (a shared lock folder): alive
        return True
    return True


def wait_note(held: Held) -> str | None:
    """A verdict note when taking the device alone meant waiting for other EGG evaluations."""
    if not held.alone or held.waited_s < 1.0:
        return None
    return f"waited {held.waited_s:.0f} s for other EGG evaluations on its device to finish (run alone)"
