"""Shared by the executor tests: the fixture problem, candidates and the verdict comparison."""

from __future__ import annotations

from pathlib import Path

from egg.evaluate import EvalOptions, Verdict

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
HONEST = FIXTURES / "candidates" / "add_relu_triton.py"
WRONG = FIXTURES / "candidates" / "harness" / "wrong_values.py"
SLOW = Path(__file__).parent / "fixtures" / "slow_add_relu.py"
OPTIONS = EvalOptions(device="cpu", shapes="default", trials=2, timeout_s=120, seed=7)


def same_verdict(a: Verdict, b: Verdict) -> None:
    """What the judge decided, field by field (timings aside: they are measurements)."""
    for field in ("accepted", "stage_failed", "backend", "kernels_launched", "shape_sets", "seed",
                  "launches_per_call", "problem_sha256", "backend_flags", "ablation"):
        assert getattr(a, field) == getattr(b, field), field
    assert [(t.shape_set, t.seed, t.passed) for t in a.trials] == [(t.shape_set, t.seed, t.passed) for t in b.trials]
