"""Executors: where the judge runs. One contract, two implementations.

* ``local`` (default): :class:`egg.evaluate.harness.Harness` itself. Its judges are this host's
  GPUs (``workers`` per GPU, default 2, each pinned with ``CUDA_VISIBLE_DEVICES``; no two timings
  ever share a GPU) or ``workers`` CPU judges.
* ``ray``: :class:`egg.executor.ray_executor.RayExecutor`, one Ray actor per GPU of a cluster
  the user started (``ray start``); EGG only connects (``ray.init(address=...)``). Each actor owns
  a ``Harness`` of its own on its GPU, so the verdicts are the harness's whichever executor ran
  them.

Both are thread-safe and block in :meth:`Executor.evaluate` until a worker is free; callers
spread work by calling from ``capacity`` threads (:func:`egg.executor.spread.map_ordered`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from egg.errors import EggInputError
from egg.evaluate.harness import EvalOptions, Harness
from egg.evaluate.verdict import Verdict

ExecutorKind = Literal["local", "ray"]


class ExecutorSpec(BaseModel):
    """How to evaluate (not what): a resumed run may use another executor and gets the same verdicts."""

    kind: ExecutorKind = "local"
    ray_address: str | None = Field(default=None, description="ray.init(address=...): 'auto', HOST:PORT, ray://...")
    workers: int | None = Field(default=None, ge=1, description="judges per GPU (default 2), or CPU judges (default 1)")


class Executor(Protocol):
    kind: str
    device: str  # "cpu" or "cuda": what the judges run on

    @property
    def capacity(self) -> int: ...

    def evaluate(self, problem_path: str | Path, candidate_path: str | Path, options: EvalOptions | None = None,
                 archive_dir: str | Path | None = None) -> Verdict: ...

    def profile_reference(self, problem_path: str | Path, options: EvalOptions | None = None) -> Verdict: ...

    def pin_problems(self, paths: list[str | Path]) -> None: ...

    def workers(self) -> list[dict[str, object]]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


def open_executor(spec: ExecutorSpec | None, device: str) -> Executor:
    """The executor ``spec`` names, on ``device`` (auto, cpu, cuda); one-line errors for bad specs."""
    spec = spec or ExecutorSpec()
    if spec.kind == "local":
        if spec.ray_address is not None:
            raise EggInputError("--ray-address needs --executor ray")
        return Harness(device, workers=spec.workers)
    from egg.executor.ray_executor import RayExecutor

    return RayExecutor(device, address=spec.ray_address, workers=spec.workers)


__all__ = ["Executor", "ExecutorKind", "ExecutorSpec", "open_executor"]
