"""The problem files a harness judges against: copied once, read-only, pinned by hash.

The first use of a problem copies it into a private store (mode 0444 in a 0700 folder); every
later evaluation is judged against that copy, whatever happens to the user's file. A file that
changed on disk after it was copied yields a note for the verdict (and a log warning). The Ray
executor pins on the caller's side too, and ships the pinned bytes to its actors.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from pathlib import Path

import structlog
from pydantic import BaseModel

from egg.problem import ProblemInfo, inspect_problem

log = structlog.get_logger(__name__)


class Pinned(BaseModel):
    info: ProblemInfo
    store_path: str
    sha256: str


class ProblemStore:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="egg-problems-"))
        os.chmod(self.root, 0o700)
        self._pinned: dict[Path, Pinned] = {}
        self._lock = threading.Lock()

    def pin(self, problem_path: str | Path) -> tuple[Pinned, str | None]:
        """The read-only copy of ``problem_path`` (made on first use), and a note if the file changed since."""
        path = Path(problem_path).resolve()
        info = inspect_problem(problem_path)  # one-line errors naming the user's file
        data = path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        with self._lock:
            pinned = self._pinned.get(path)
            if pinned is None:
                store = self.root / f"{sha[:16]}-{path.name}"
                store.write_bytes(data)
                store.chmod(0o444)
                pinned = Pinned(info=inspect_problem(store).model_copy(update={"path": path, "name": path.stem}),
                                store_path=str(store), sha256=sha)
                self._pinned[path] = pinned
        if pinned.sha256 == sha:
            return pinned, None
        note = (f"{path.name} changed on disk after this harness copied it: judged against the copy taken "
                f"before any candidate ran (sha256 {pinned.sha256[:12]})")
        log.warning("harness.problem_changed", problem=str(path), pinned=pinned.sha256, now=sha)
        return pinned, note

    def close(self) -> None:
        for path in self.root.glob("*"):
            path.chmod(0o600)
        shutil.rmtree(self.root, ignore_errors=True)
