"""KernelBench's suite metrics, as pure functions, against eager and against torch.compile.

Definitions follow KernelBench's ``src/kernelbench/score.py`` and how
``scripts/benchmark_eval_analysis.py`` calls it:

* ``fast_p``: (# problems that are correct AND have speedup > p) / (# problems attempted). The
  denominator is every problem in the suite, failed ones included (score.py's ``fastp`` divides
  by ``n``). Thresholds p = 0, 0.5, 0.8, 1, 1.5, 2 (benchmark_eval_analysis.py's ``p_values``).
* correctness rate: correct / attempted; compilation rate: compiled / attempted.
* geometric-mean speedup over correct problems only (score.py's
  ``geometric_mean_speed_ratio_correct_only``); 0 when nothing is correct, as there.

Speedup = baseline time / candidate time. One difference KernelBench never meets: a correct
problem may have no speedup against a baseline (on CPU torch.compile is not timed). Such a problem
counts as correct but not fast, is left out of the geometric mean, and is counted in
``BaselineMetrics.untimed_correct`` so the gap is visible rather than silent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

THRESHOLDS: tuple[float, ...] = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)


def _check(is_correct: Sequence[bool], speedups: Sequence[float | None]) -> None:
    if len(is_correct) != len(speedups):
        raise ValueError(f"is_correct has {len(is_correct)} entries but speedups has {len(speedups)}")


def fast_p(is_correct: Sequence[bool], speedups: Sequence[float | None], p: float) -> float:
    """Fraction of all problems that are correct and more than ``p`` times faster (score.py ``fastp``)."""
    _check(is_correct, speedups)
    n = len(is_correct)
    hits = sum(1 for ok, s in zip(is_correct, speedups) if ok and s is not None and s > p)
    return hits / n if n > 0 else 0.0


def geometric_mean_speedup_correct_only(is_correct: Sequence[bool], speedups: Sequence[float | None]) -> float:
    """Geometric mean of the speedups of correct problems (0 when there are none, as in score.py)."""
    _check(is_correct, speedups)
    timed = [s for ok, s in zip(is_correct, speedups) if ok and s is not None]
    if not timed:
        return 0.0
    if any(s <= 0 for s in timed):
        raise ValueError("speedups must be > 0")
    return math.exp(sum(math.log(s) for s in timed) / len(timed))


def rate(flags: Sequence[bool]) -> float:
    """Fraction of true flags over all problems (correctness rate, compilation rate)."""
    return sum(1 for f in flags if f) / len(flags) if flags else 0.0


class BaselineMetrics(BaseModel):
    """fast_p and the geometric mean against one baseline."""

    baseline: Literal["eager", "compile"]
    fast_p: dict[str, float] = Field(description="threshold p (as str(p), e.g. '1.0') -> fast_p")
    geo_mean_speedup: float = Field(description="over correct problems with a timing")
    timed_correct: int = Field(description="correct problems with a speedup against this baseline")
    untimed_correct: int = Field(description="correct problems without one (counted as not fast)")


class SuiteMetrics(BaseModel):
    """Everything KernelBench reports for a suite, against both baselines."""

    total: int = Field(description="problems attempted: the denominator of every rate")
    compiled: int
    correct: int
    compilation_rate: float
    correctness_rate: float
    vs_eager: BaselineMetrics
    vs_compile: BaselineMetrics
    timing_comparable: bool = Field(description="false when any speedup comes from the CPU interpreter")


def baseline_metrics(
    baseline: Literal["eager", "compile"], is_correct: Sequence[bool], speedups: Sequence[float | None]
) -> BaselineMetrics:
    timed = sum(1 for ok, s in zip(is_correct, speedups) if ok and s is not None)
    return BaselineMetrics(
        baseline=baseline,
        fast_p={str(p): fast_p(is_correct, speedups, p) for p in THRESHOLDS},
        geo_mean_speedup=geometric_mean_speedup_correct_only(is_correct, speedups),
        timed_correct=timed,
        untimed_correct=sum(1 for ok in is_correct if ok) - timed,
    )


def suite_metrics(
    *,
    compiled: Sequence[bool],
    correct: Sequence[bool],
    speedup_vs_eager: Sequence[float | None],
    speedup_vs_compile: Sequence[float | None],
    timing_comparable: bool,
) -> SuiteMetrics:
    """All metrics from per-problem columns (one entry per attempted problem)."""
    n = len(correct)
    if not (len(compiled) == len(speedup_vs_eager) == len(speedup_vs_compile) == n):
        raise ValueError("every column needs one entry per problem")
    return SuiteMetrics(
        total=n,
        compiled=sum(1 for c in compiled if c),
        correct=sum(1 for c in correct if c),
        compilation_rate=rate(compiled),
        correctness_rate=rate(correct),
        vs_eager=baseline_metrics("eager", correct, speedup_vs_eager),
        vs_compile=baseline_metrics("compile", correct, speedup_vs_compile),
        timing_comparable=timing_comparable,
    )
