"""KernelBench's metrics (src/kernelbench/score.py definitions) against hand-computed values."""

from __future__ import annotations

import math

import pytest

from kernelbench_adapter.metrics import (
    THRESHOLDS,
    baseline_metrics,
    fast_p,
    geometric_mean_speedup_correct_only,
    rate,
    suite_metrics,
)

# Five problems: the third is wrong (its 3.0x must not count), the fifth correct but untimed.
CORRECT = [True, True, False, True, True]
SPEEDUPS = [0.5, 1.2, 3.0, 2.0, None]


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        (0.0, 3 / 5),  # 0.5, 1.2, 2.0
        (0.5, 2 / 5),  # strictly greater: 0.5 is not > 0.5
        (0.8, 2 / 5),
        (1.0, 2 / 5),  # 1.2, 2.0
        (1.5, 1 / 5),  # 2.0
        (2.0, 0 / 5),  # 2.0 is not > 2.0
    ],
)
def test_fast_p_divides_by_every_problem_and_counts_only_correct_ones(p, expected):
    assert fast_p(CORRECT, SPEEDUPS, p) == pytest.approx(expected)


def test_geometric_mean_over_correct_timed_problems_only():
    assert geometric_mean_speedup_correct_only(CORRECT, SPEEDUPS) == pytest.approx((0.5 * 1.2 * 2.0) ** (1 / 3))
    assert geometric_mean_speedup_correct_only([True, True], [4.0, 0.25]) == pytest.approx(1.0)
    assert geometric_mean_speedup_correct_only([True, False, True], [2.0, 100.0, 8.0]) == pytest.approx(4.0)


def test_edge_cases_follow_kernelbench():
    assert fast_p([], [], 1.0) == 0.0  # score.py: 0 when n == 0
    assert geometric_mean_speedup_correct_only([False, False], [2.0, 3.0]) == 0.0  # no correct sample -> 0
    assert rate([]) == 0.0 and rate([True, False, False, True]) == 0.5
    with pytest.raises(ValueError):
        fast_p([True], [1.0, 2.0], 1.0)


def test_baseline_and_suite_metrics():
    b = baseline_metrics("eager", CORRECT, SPEEDUPS)
    assert list(b.fast_p) == [str(p) for p in THRESHOLDS] == ["0.0", "0.5", "0.8", "1.0", "1.5", "2.0"]
    assert b.fast_p["1.0"] == pytest.approx(0.4) and b.fast_p["0.0"] == pytest.approx(0.6)
    assert b.timed_correct == 3 and b.untimed_correct == 1
    m = suite_metrics(
        compiled=[True, True, True, True, False],
        correct=CORRECT,
        speedup_vs_eager=SPEEDUPS,
        speedup_vs_compile=[0.9, None, None, 1.6, 1.1],
        timing_comparable=True,
    )
    assert (m.total, m.compiled, m.correct) == (5, 4, 4)
    assert m.compilation_rate == pytest.approx(0.8) and m.correctness_rate == pytest.approx(0.8)
    # vs compile: correct and timed are 0.9, 1.6, 1.1
    assert m.vs_compile.fast_p == pytest.approx({"0.0": 0.6, "0.5": 0.6, "0.8": 0.6, "1.0": 0.4, "1.5": 0.2, "2.0": 0.0})
    assert m.vs_compile.geo_mean_speedup == pytest.approx(math.exp((math.log(0.9) + math.log(1.6) + math.log(1.1)) / 3))
    assert m.vs_compile.untimed_correct == 1
