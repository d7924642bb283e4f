"""The fp32 route (egg.evaluate.anchor): an fp16/bf16 output that misses eager's but is as accurate
as eager against an fp32 run of the reference passes; one that is less accurate does not."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from egg.evaluate import EvalOptions, Harness
from egg.evaluate.anchor import SLACK, judge_against_fp32
from egg.tolerance import resolve_tolerances

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "fp16_lost_increments.py"
ROUTE = FIXTURES / "candidates" / "fp32_route"
TOL = resolve_tolerances(None)


@pytest.fixture(scope="module")
def harness():
    with Harness(device="cpu") as h:
        yield h


def _eval(harness: Harness, name: str, tmp_path: Path, **opts):
    options = EvalOptions(device="cpu", timeout_s=90, seed=77, trials=2, timing_runs=3, **opts)
    return harness.evaluate(PROBLEM, ROUTE / f"{name}.py", options, tmp_path / name)


def test_a_more_accurate_fp16_candidate_passes_against_the_fp32_run_and_says_so(harness, tmp_path):
    v = _eval(harness, "exact", tmp_path)
    assert v.accepted, v.reasons
    assert all(t.passed for t in v.trials)
    assert all("accepted as accurate as eager" in (t.detail or "") for t in v.trials)
    note = next(n for n in v.notes if n.startswith("fp32 route:"))
    assert "differs from eager beyond tolerance" in note and "mean abs err" in note


def test_match_eager_turns_the_route_off(harness, tmp_path):
    v = _eval(harness, "exact", tmp_path, match_eager=True)
    assert not v.accepted and v.stage_failed == "correctness"
    assert "outside atol=0.01" in v.reasons[0] and "fp32 route" not in v.reasons[0]


def test_a_candidate_inside_the_band_but_sloppier_than_eager_is_rejected(harness, tmp_path):
    v = _eval(harness, "biased", tmp_path)
    assert not v.accepted and v.stage_failed == "correctness"
    assert "fp32 route" in v.reasons[0] and "less accurate than eager" in v.reasons[0], v.reasons


# -- the rule itself, on tensors ----------------------------------------------------------------

def _case(n: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
    exact = 1.0 + torch.rand(n)
    eager = exact.half()
    eager[::10] += 0.04  # eager wrong on a tenth: out of tolerance of a correctly rounded result
    return exact, eager


def test_as_accurate_as_eager_passes_and_sloppier_does_not():
    exact, eager = _case()
    assert judge_against_fp32(eager, exact.half(), exact, TOL).ok
    worse = (exact * (1 + 0.009)).half()  # in the band everywhere, mean error far above eager's
    result = judge_against_fp32(eager, worse, exact, TOL)
    assert not result.ok and f"more than {SLACK:g}x its mean error" in result.reason


def test_out_of_band_against_fp32_is_rejected_even_when_eager_is_worse():
    exact, eager = _case()
    got = exact.half()
    got[5] += 0.1
    result = judge_against_fp32(eager, got, exact, TOL)
    assert not result.ok and "1 of 1000 elements outside" in result.reason


def test_other_leaves_still_match_eager_and_non_finite_values_get_no_route():
    exact, eager = _case()
    fp32_leaf = torch.ones(4)
    bad = (exact.half(), fp32_leaf + 1e-2)  # the fp16 leaf passes the route; the fp32 one misses eager
    result = judge_against_fp32((eager, fp32_leaf), bad, (exact, fp32_leaf), TOL)
    assert not result.ok and "only fp16/bf16 outputs have an fp32 route" in result.reason
    nan = exact.half()
    nan[0] = float("nan")
    assert "non-finite" in judge_against_fp32(eager, nan, exact, TOL).reason


def test_a_reference_whose_fp32_run_is_its_bf16_run_lets_nothing_through():
    """A model that casts back to bf16 internally: its 'fp32' run equals eager, eager's error is 0."""
    x = (1.0 + torch.rand(256)).bfloat16()
    got = x.clone()
    got[3] = got[3] + 0.0078125  # one bf16 ulp: inside the band, but eager is exact against this run
    result = judge_against_fp32(x, got, x.float(), TOL)
    assert not result.ok and "less accurate than eager" in result.reason
