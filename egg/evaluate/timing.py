"""Timing with functions captured before any candidate is imported.

This module is imported by the worker before it loads a candidate, so the references below are
the real ``torch.cuda.Event`` methods, ``torch.cuda.synchronize`` and ``time.perf_counter`` even
if a candidate later patches them (the static checks reject that too; this is the second lock).

GPU protocol per measured function: warm-up calls until ``warmup`` calls and at least 25 ms have
passed, then ``runs`` timed calls, each preceded by zeroing a 256 MB buffer so every call starts
with a cold L2 (the H200's L2 is 60 MB), timed with CUDA events on the caller's stream.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from egg.evaluate.verdict import TimingStats

_perf_counter = time.perf_counter
_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed = torch.cuda.Event.elapsed_time
_cuda_synchronize = torch.cuda.synchronize

L2_FLUSH_BYTES = 256 * 1024 * 1024


def timer_identity() -> dict[str, Any]:
    """The objects a candidate must not replace; compared before and after it runs."""
    import triton

    return {
        "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.Event.record": torch.cuda.Event.record,
        "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "torch.cuda.current_stream": torch.cuda.current_stream,
        "time.perf_counter": time.perf_counter,
        "time.time": time.time,
        "torch.allclose": torch.allclose,
        "torch.equal": torch.equal,
        "torch.Tensor.clone": torch.Tensor.clone,
        "triton.testing.do_bench": getattr(getattr(triton, "testing", None), "do_bench", None),
        "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
    }


def now() -> float:
    return _perf_counter()


def stats(times_ms: list[float]) -> TimingStats:
    ordered = sorted(times_ms)
    n = len(ordered)

    def pct(p: float) -> float:
        return ordered[min(n - 1, max(0, round(p * (n - 1))))]

    return TimingStats(
        median_ms=statistics.median(ordered),
        mean_ms=statistics.fmean(ordered),
        min_ms=ordered[0],
        p20_ms=pct(0.2),
        p80_ms=pct(0.8),
        runs=n,
    )


def time_cuda(
    fn: Callable[[], Any],
    runs: int,
    warmup: int,
    keep: Callable[[int, Any], None] | None = None,
) -> list[float]:
    """Milliseconds of ``runs`` calls of ``fn`` on the current stream, L2 flushed before each."""
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    start_warm = _perf_counter()
    done = 0
    while done < warmup or (_perf_counter() - start_warm) < 0.025:
        fn()
        done += 1
        if done >= 10 * max(warmup, 1):
            break
    _cuda_synchronize()
    starts = [_Event(enable_timing=True) for _ in range(runs)]
    ends = [_Event(enable_timing=True) for _ in range(runs)]
    for i in range(runs):
        flush.zero_()
        _event_record(starts[i])
        out = fn()
        _event_record(ends[i])
        if keep is not None:
            keep(i, out)
        del out
    _cuda_synchronize()
    return [_event_elapsed(s, e) for s, e in zip(starts, ends)]


def time_cpu(fn: Callable[[], Any], runs: int, warmup: int, keep: Callable[[int, Any], None] | None = None) -> list[float]:
    """Wall-clock milliseconds per call on the CPU (interpreter timings are not comparable)."""
    for _ in range(warmup):
        fn()
    times = []
    for i in range(runs):
        t0 = _perf_counter()
        out = fn()
        times.append((_perf_counter() - t0) * 1e3)
        if keep is not None:
            keep(i, out)
    return times
