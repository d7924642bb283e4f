"""``RUN_DIR/invocations.jsonl``: every process that worked on a run, so a resumed run's report
counts the whole run, not its last part.

Each process appends a ``start`` line (wall-clock time, what its LLM preflight spent), a ``step``
line whenever the graph reports progress (a stage begins, an agent starts, a candidate is
judged) and an ``end`` line when it finishes. A process that was killed has no ``end``: it counts
until its last step, so the work that was in flight when it died is the only time not counted.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agents.protocol import TokenUsage

INVOCATIONS_NAME = "invocations.jsonl"


class Invocation(BaseModel):
    started: float  # time.time()
    wall_s: float = 0.0
    finished: bool = False
    preflight: TokenUsage = Field(default_factory=TokenUsage)


class InvocationLog:
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / INVOCATIONS_NAME
        self._lock = threading.Lock()

    def _append(self, event: str, **fields: Any) -> None:
        line = json.dumps({"event": event, "t": round(time.time(), 3), **fields})
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def start(self, preflight: TokenUsage | None) -> None:
        self._append("start", preflight=(preflight or TokenUsage()).model_dump())

    def step(self) -> None:
        self._append("step")

    def end(self) -> None:
        self._append("end")

    def read(self) -> list[Invocation]:
        if not self.path.is_file():
            return []
        runs: list[Invocation] = []
        for raw in self.path.read_text(encoding="utf-8").splitlines():
            if not raw.strip():
                continue
            entry = json.loads(raw)
            if entry["event"] == "start":
                runs.append(Invocation(started=entry["t"],
                                       preflight=TokenUsage.model_validate(entry.get("preflight") or {})))
            elif runs:
                runs[-1].wall_s = round(entry["t"] - runs[-1].started, 3)
                runs[-1].finished = entry["event"] == "end"
        return runs
