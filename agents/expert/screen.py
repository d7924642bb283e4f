"""Tuning by measurement: a stage-2 tuner screens its configs on the GPU before the judge sees any.

Two heuristic configs per focus (what the tuners proposed until now) miss where the heuristics were
not tuned: on the H200 the expert's first matmul ran at 0.87x of cuBLAS and its reductions at
0.15-0.76x of torch.compile (BENCHMARKS.md, 2026-12-03) with better configs one or two moves away.
The judge is the wrong instrument for a search: it costs seconds of exclusive GPU time per
candidate and a slot of the run's budget. The screen is Triton's autotuner made bounded and honest
about what it is:

* every config (and the parent, as the baseline) is built the way the judge builds it, in a process
  of its own (:mod:`agents.expert.screen_process`: a config that crashes the CUDA context takes
  only the screen down, and the run's process never holds a CUDA context a fork could inherit);
* one call each checks it for gross errors against the reference (ten times the problem's
  tolerance: rounding differences are the judge's business, a wrong index is not worth a judge);
* a config that fails to build or run, or fails that check, gives its place to a spare (the
  caller's ``quota``): a tile that asks for more shared memory than the device has is a place
  lost, not a result (the hf attention's memory tuner, H100 2026-12-07: 4 of 5 configs over 227 KB);
* :func:`halve` then times the survivors with a few calls, keeps the faster half, times those with
  twice the calls, and so on until ``keep`` remain (successive halving: most of the time goes to
  the configs that might win). The parent is timed in every round, so each survivor is compared
  with it at the same number of calls;
* a deadline bounds all of it; what is not reached by then is reported as not reached.

Timing holds the GPU's exclusive lock (:mod:`egg.evaluate.gpu_lock`) and uses the judge's
protocol (:func:`egg.evaluate.timing.time_calls`: cold L2, spin, events). Its figures rank configs
and are written into the drafts' notes; they are never a result: every proposed config is judged.
"""

from __future__ import annotations

import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

import structlog
from pydantic import BaseModel, Field

log = structlog.get_logger(__name__)

PARENT = "parent"
GROSS_ERROR_SCALE = 10.0  # the screen's correctness gate: this many times the problem's tolerance
SHOWN_FAILURES = 4  # failed configs a summary names (with why); the rest are counted
DETAIL_CHARS = 160  # of each failure's reason in a summary (the report keeps 300)
STARTUP_GRACE_S = 90.0  # the process's imports, CUDA start-up and input drawing, outside the deadline


class ScreenSpec(BaseModel):
    """What the screen process is asked to do (written as JSON beside the configs' files)."""

    problem: str
    shape_set: str = "default"
    candidates: dict[str, str]  # key -> candidate file; PARENT is the baseline
    keep: int = Field(default=2, ge=1)
    reps: int = Field(default=3, ge=1, description="timed calls per config in the first round")
    seconds: float = Field(default=40.0, gt=0, description="the deadline, from the first config's build")
    seed: int = 0
    device: str = "cuda"
    quota: int | None = Field(default=None, ge=1, description=(
        "configs (beyond the parent) to build and check; the candidates after the first `quota` in "
        "order are spares, built only to replace configs before them that fail (None: all)"))


class ScreenEntry(BaseModel):
    key: str
    status: Literal["ok", "error", "gross error", "not reached"]
    medians_ms: list[float] = Field(default_factory=list)  # one per round it was timed in
    detail: str = ""


class ScreenReport(BaseModel):
    entries: list[ScreenEntry] = Field(default_factory=list)
    finalists: list[str] = Field(default_factory=list)  # the keys still in the search when it ended
    rounds: int = 0
    wall_s: float = 0.0
    error: str | None = None  # the whole screen failed (its process died or timed out)
    notes: list[str] = Field(default_factory=list)  # e.g. a re-screen with the device to itself

    def entry(self, key: str) -> ScreenEntry | None:
        return next((e for e in self.entries if e.key == key), None)

    def faster_than_parent(self, margin: float) -> list[ScreenEntry]:
        """Finalists whose last median beats the parent's last median (same round, same number of
        calls) by more than ``margin`` (a fraction), fastest first."""
        parent = self.entry(PARENT)
        if parent is None or not parent.medians_ms:
            return []
        rounds = len(parent.medians_ms)
        base = parent.medians_ms[-1]
        out = [e for k in self.finalists if k != PARENT and (e := self.entry(k)) is not None
               and len(e.medians_ms) == rounds and e.medians_ms[-1] < base * (1.0 - margin)]
        return sorted(out, key=lambda e: e.medians_ms[-1])

    def summary(self, labels: Mapping[str, str] | None = None) -> str:
        """One line: what was screened and timed, and each failed config (by its ``labels`` entry, the
        config's settings, where given) with the first words of why it failed; more than
        ``SHOWN_FAILURES`` are counted."""
        timed = sum(1 for e in self.entries if e.medians_ms and e.key != PARENT)
        bad = [e for e in self.entries if e.status in ("error", "gross error")]
        text = (f"screened {len(self.entries) - 1} configs in {self.wall_s:.0f} s ({timed} timed, {self.rounds} "
                f"round(s) of successive halving)")
        if bad:
            shown = [f"{(labels or {}).get(e.key, e.key)} ({e.status}: {e.detail[:DETAIL_CHARS] or 'no detail'})"
                     for e in bad[:SHOWN_FAILURES]]
            more = f" and {len(bad) - SHOWN_FAILURES} more" if len(bad) > SHOWN_FAILURES else ""
            text += f"; failed: {', '.join(shown)}{more}"
        return text + "".join(f"; {n}" for n in self.notes)


def halve(keys: list[str], measure: Callable[[str, int], float | None], keep: int, reps: int,
          deadline: float | None = None, pinned: tuple[str, ...] = (PARENT,),
          clock: Callable[[], float] = time.monotonic) -> tuple[dict[str, list[float]], list[str], int]:
    """Successive halving over ``keys``: medians per key per round, the finalists, the rounds run.

    Round r times every remaining key with ``reps * 2**r`` calls (``measure(key, calls)``; None
    drops the key); then the faster half stays (at least ``keep``). ``pinned`` keys (the baseline)
    are timed in every round and never count towards ``keep``. The search stops when ``keep``
    remain or at ``deadline``, between two measurements; a round cut short keeps its unmeasured
    keys (they survived the round before), so the finalists are the keys of the last round reached.
    The deadline never cuts the first round before the pinned keys and ``keep`` others (the first
    in ``keys``' order) have been measured once: a screen that timed nothing only delays the run
    (level 1 on the H200, 2026-12-04: 5 of 13 screens "0 timed" beside two other lanes' judges,
    40-56 s each, their deadline spent waiting for builds and for the GPU's lock).
    """
    times: dict[str, list[float]] = {k: [] for k in keys}
    alive = list(keys)
    rounds = 0
    floor = min(len(keys), keep + sum(1 for k in keys if k in pinned))
    while alive:
        cut = False
        for i, key in enumerate(alive):
            if deadline is not None and clock() > deadline and (rounds > 0 or i >= floor):
                cut = True
                break
            t = measure(key, reps)
            if t is None or not math.isfinite(t):
                times.pop(key, None)
            else:
                times[key].append(t)
        alive = [k for k in alive if k in times]
        rounds += 1
        racers = [k for k in alive if k not in pinned]
        if cut or len(racers) <= keep:
            break
        racers.sort(key=lambda k: times[k][-1])
        stay = set(racers[:max(keep, math.ceil(len(racers) / 2))])
        alive = [k for k in alive if k in stay or k in pinned]
        reps *= 2
    return times, alive, rounds


def screen(problem: str | Path, sources: dict[str, str], *, shape_set: str = "default", keep: int = 2,
           seconds: float = 40.0, device: str = "cuda", seed: int = 0, reps: int = 3,
           quota: int | None = None) -> ScreenReport:
    """Screens candidate ``sources`` (key -> file text; include ``PARENT``) in a process of its own.
    With a ``quota``, the configs after the first ``quota`` (in ``sources``' order) are spares: each
    is built only while fewer than ``quota`` configs have passed their check; spares never built are
    left out of the report (they were not screened).

    Never raises for what happens in that process: a crash or a timeout comes back as
    ``ScreenReport.error``, which the caller reports (the tuner then falls back to the packs' order
    and says so in its drafts)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="egg-screen-") as tmp:
        folder = Path(tmp)
        files = {}
        for i, (key, text) in enumerate(sources.items()):
            path = folder / f"config_{i}.py"  # Triton's @jit wants a real file
            path.write_text(text)
            files[key] = str(path)
        spec = ScreenSpec(problem=str(problem), shape_set=shape_set, candidates=files, keep=keep,
                          reps=reps, seconds=seconds, seed=seed, device=device, quota=quota)
        (folder / "spec.json").write_text(spec.model_dump_json())
        out = folder / "report.json"
        cmd = [sys.executable, "-m", "agents.expert.screen_process", str(folder / "spec.json"), str(out)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + STARTUP_GRACE_S)
        except subprocess.TimeoutExpired:
            killed = f"the screen process ran past {seconds + STARTUP_GRACE_S:.0f} s and was killed"
            if not out.exists():
                return ScreenReport(error=killed, wall_s=time.monotonic() - started)
            # it had written a first screen before waiting to screen again alone (screen_process.run)
            report = ScreenReport.model_validate_json(out.read_text())
            report.notes.append(f"{killed} while waiting to screen again: this is its first screen")
            return report
        if done.returncode != 0 or not out.exists():
            tail = " ".join((done.stderr or "").split()[-40:])
            return ScreenReport(error=f"the screen process exited with {done.returncode}: {tail}"[:400],
                                wall_s=time.monotonic() - started)
        report = ScreenReport.model_validate_json(out.read_text())
    log.info("expert.screened", problem=Path(problem).name, configs=len(sources) - 1, rounds=report.rounds,
             wall_s=round(report.wall_s, 1))
    return report
