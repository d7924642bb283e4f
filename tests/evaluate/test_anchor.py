"""The exact route (egg.evaluate.anchor): an fp16/bf16 output that misses eager's but is as accurate
as eager against an fp32 run of the reference passes, and an fp32 output likewise against an fp64
run; one that is less accurate does not."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from egg.evaluate import EvalOptions, Harness
from egg.evaluate.anchor import SLACK, SLACK_FP32, exact_dtype, judge_against_exact, tail_allowance, tf32_round
from egg.tolerance import resolve_tolerances

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "fp16_lost_increments.py"
ROUTE = FIXTURES / "candidates" / "fp32_route"
CANCELLING = FIXTURES / "problems" / "fp32_cancelling_dot.py"
TOL = resolve_tolerances(None)


@pytest.fixture(scope="module")
def harness():
    with Harness(device="cpu") as h:
        yield h


def _eval(harness: Harness, name: str, tmp_path: Path, problem: Path = PROBLEM, **opts):
    options = EvalOptions(device="cpu", timeout_s=90, seed=77, trials=2, timing_runs=3, **opts)
    return harness.evaluate(problem, ROUTE / f"{name}.py", options, tmp_path / name)


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


def test_an_fp32_sum_in_another_order_passes_against_the_fp64_run(harness, tmp_path):
    """KernelBench level 1 #4's failure on the H200: an honest blocked sum missed eager where the
    terms cancel. Against an fp64 run it is at least as accurate as eager, and says so."""
    v = _eval(harness, "blocked_dot", tmp_path, problem=CANCELLING)
    assert v.accepted, v.reasons
    note = next(n for n in v.notes if n.startswith("fp32 route:"))
    assert "differs from eager beyond tolerance" in note and "against an fp64 run" in note, note


def test_an_fp32_sum_of_bf16_operands_is_rejected_by_the_fp64_run(harness, tmp_path):
    v = _eval(harness, "bf16_dot", tmp_path, problem=CANCELLING)
    assert not v.accepted and v.stage_failed == "correctness"
    assert "fp32 route: output against an fp64 run" in v.reasons[0] and "elements outside" in v.reasons[0], v.reasons


def test_a_reference_with_no_fp64_form_is_judged_against_its_fp32_run_and_says_so(harness, tmp_path):
    """Its fp32 run is eager's own order (error 0), so the honest other order fails, as it did
    before fp32 outputs had an fp64 run; the reason names the fp64 run's failure."""
    v = _eval(harness, "blocked_dot", tmp_path, problem=FIXTURES / "problems" / "fp32_dot_without_fp64.py")
    assert not v.accepted and v.stage_failed == "correctness"
    assert "against an fp32 run" in v.reasons[0] and "no fp64 run of the reference: RuntimeError" in v.reasons[0], v.reasons


def test_match_eager_turns_the_fp32_outputs_route_off_too(harness, tmp_path):
    v = _eval(harness, "blocked_dot", tmp_path, problem=CANCELLING, match_eager=True)
    assert not v.accepted and "outside atol=0.0001" in v.reasons[0] and "fp32 route" not in v.reasons[0]


# -- the rule itself, on tensors ----------------------------------------------------------------

def _case(n: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
    exact = 1.0 + torch.rand(n)
    eager = exact.half()
    eager[::10] += 0.04  # eager wrong on a tenth: out of tolerance of a correctly rounded result
    return exact, eager


def test_as_accurate_as_eager_passes_and_sloppier_does_not():
    exact, eager = _case()
    assert judge_against_exact(eager, exact.half(), exact, TOL).ok
    worse = (exact * (1 + 0.009)).half()  # in the band everywhere, mean error far above eager's
    result = judge_against_exact(eager, worse, exact, TOL)
    assert not result.ok and "less accurate than eager" in result.reason and f"x {SLACK:g}" in result.reason


def test_out_of_band_against_fp32_is_rejected_even_when_eager_is_worse():
    exact, eager = _case()
    got = exact.half()
    got[5] += 0.1
    result = judge_against_exact(eager, got, exact, TOL)
    assert not result.ok and "1 of 1000 elements outside" in result.reason


def test_a_rounding_flip_off_eagers_tolerance_passes_where_eager_misses_the_truth_as_often():
    """A rounding flip inside the computation (a bf16 probability rounded the other way, times a
    value) moves one output past eager's tolerance; eager misses the exact result on a tenth of its
    elements, so one miss of the candidate's, no worse than eager's worst, is within eager's."""
    exact, eager = _case()
    got = exact.half()
    got[3] = exact[3] - 0.035  # eager is exact there: the plain comparison fails it
    assert (got[3].float() - eager[3].float()).abs() > 0.03
    result = judge_against_exact(eager, got, exact, TOL)
    assert result.ok, result.reason
    assert "100 elements outside atol=0.01 rtol=0.01" in result.note  # eager's misses, the yardstick


def test_no_element_may_miss_the_truth_by_more_than_the_tolerance_and_eagers_worst():
    exact, eager = _case()
    got = exact.half()
    got[3] = exact[3] - 0.04 - 0.04  # eager's worst (0.04) plus more than the tolerance (<= 0.03)
    result = judge_against_exact(eager, got, exact, TOL)
    assert not result.ok and "1 of 1000 elements outside atol=0.05" in result.reason


def test_a_candidate_spending_eagers_worst_wherever_eager_errs_is_rejected():
    """Red team: wrong by eager's error plus most of the tolerance on every element where eager is
    wrong, exact elsewhere (as many misses as eager, none past the band): the mean rejects it."""
    exact, eager = _case()
    got = exact.half()
    got[::10] = (exact[::10] - 0.04 - 0.015).half()
    result = judge_against_exact(eager, got, exact, TOL)
    assert not result.ok and "less accurate than eager" in result.reason


def test_a_candidate_missing_the_truth_on_more_elements_than_eager_is_rejected():
    """Red team: small misses spread over twice eager's count of elements, each well inside eager's
    worst and the whole below eager's mean error: the count of misses rejects it."""
    exact = 1.0 + torch.rand(1000)
    eager = exact.half()
    eager[::10] += 0.2  # 100 large misses
    got = exact.half()
    got[::5] = (exact[::5] + 0.035).half()  # 200 small ones
    result = judge_against_exact(eager, got, exact, TOL)
    assert not result.ok and "200 elements outside" in result.reason and f"allowed {tail_allowance(100)}" in result.reason
    assert tail_allowance(0) == 0 and tail_allowance(100) == 135


def test_other_leaves_still_match_eager_and_non_finite_values_get_no_route():
    exact, eager = _case()
    index = torch.arange(4)
    bad = (exact.half(), index + 1)  # the fp16 leaf passes the route; the integer one misses eager
    result = judge_against_exact((eager, index), bad, (exact, index), TOL)
    assert not result.ok and "only fp16/bf16/fp32 outputs have an exact route" in result.reason
    nan = exact.half()
    nan[0] = float("nan")
    assert "non-finite" in judge_against_exact(eager, nan, exact, TOL).reason


def test_a_reference_whose_fp32_run_is_its_bf16_run_lets_nothing_through():
    """A model that casts back to bf16 internally: its 'fp32' run equals eager, eager's error is 0."""
    x = (1.0 + torch.rand(256)).bfloat16()
    got = x.clone()
    got[3] = got[3] + 0.0078125  # one bf16 ulp: inside the band, but eager is exact against this run
    result = judge_against_exact(x, got, x.float(), TOL)
    assert not result.ok and "less accurate than eager" in result.reason


# -- fp32 outputs of a TF32 reference (cuDNN's default on a GPU) ---------------------------------

def _tf32_case(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A 64-term dot product per output, four ways: exact; eager's TF32 (inputs rounded to TF32);
    another algorithm exactly as accurate but wrong on other elements (eager's errors, shuffled
    over the outputs: the same mean and worst error, ~1e-3 apart from eager elementwise, as cuDNN's
    NHWC kernel was on the H200); in bf16 (a sloppier kernel); and in fp32 without TF32 (the
    rounding level any fp32 order has: the judge's fp32 run)."""
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(4096, 64, generator=g), torch.randn(64, generator=g)
    exact = (a.double() @ b.double()).float()
    eager = (tf32_round(a) * tf32_round(b)).sum(1)
    other = exact + (eager - exact)[torch.randperm(exact.numel(), generator=g)]
    sloppy = (a.bfloat16().float() * b.bfloat16().float()).sum(1)
    return exact, eager, other, sloppy, (a * b).sum(1)


def test_a_tf32_reference_lets_another_tf32_algorithm_through_and_not_a_bf16_one():
    exact, eager, other, sloppy, fp32 = _tf32_case()
    assert not torch.allclose(other, eager, atol=1e-4, rtol=1e-4)  # the plain comparison fails it
    assert judge_against_exact(eager, other, exact, TOL, tf32=eager, fp32=fp32).ok
    result = judge_against_exact(eager, sloppy, exact, TOL, tf32=eager, fp32=fp32)  # ~8x TF32's error: out of the band
    assert not result.ok and "elements outside" in result.reason, result.reason
    worst = float((eager - exact).abs().max())
    noisy = exact + 0.8 * worst * torch.randn(exact.shape).sign()  # inside the band, sloppier on average
    result = judge_against_exact(eager, noisy, exact, TOL, tf32=eager, fp32=fp32)
    assert not result.ok and "less accurate than eager" in result.reason, result.reason


def _fp32_case(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Dot products of 16384 terms that nearly cancel, without TF32: exact (fp64); eager's fp32
    (torch's order); another order exactly as accurate (eager's fp32 rounding errors shuffled over
    the outputs); TF32 operands; bf16 operands."""
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(2048, 8192, generator=g), torch.randn(8192, generator=g)
    a, b = torch.cat([a, -a], 1), torch.cat([b, b * (1 + 1e-3 * torch.randn(8192, generator=g))])
    exact = a.double() @ b.double()
    eager = a @ b
    other = exact + (eager.double() - exact)[torch.randperm(exact.numel(), generator=g)]
    tf32 = tf32_round(a) @ tf32_round(b)
    bf16 = a.bfloat16().float() @ b.bfloat16().float()
    return exact, eager, other.float(), tf32, bf16


def test_without_tf32_an_fp32_output_is_held_to_eagers_own_rounding():
    exact, eager, other, tf32, bf16 = _fp32_case()
    assert not torch.allclose(other, eager, atol=1e-4, rtol=1e-4)  # the plain comparison fails it
    result = judge_against_exact(eager, other, exact, TOL)
    assert result.ok and "against an fp64 run" in result.note, result.reason
    for lower in (tf32, bf16):  # arithmetic below fp32 is far outside eager's rounding
        result = judge_against_exact(eager, lower, exact, TOL)
        assert not result.ok and "elements outside" in result.reason, result.reason


def test_an_fp32_output_noisier_than_eager_by_more_than_the_slack_is_rejected():
    exact, eager, _, _, _ = _fp32_case()
    err = (eager.double() - exact).abs()
    worst, mean = float(err.max()), float(err.mean())
    assert 2 * worst > 1.5 * SLACK_FP32 * mean  # so noise at twice the worst error, inside the band, is too much
    noisy = (exact + 2 * worst * torch.randn(exact.shape, dtype=torch.float64).sign()).float()
    result = judge_against_exact(eager, noisy, exact, TOL)
    assert not result.ok and "less accurate than eager" in result.reason, result.reason
    assert f"{SLACK_FP32:g}x fp32 rounding" in result.reason


def test_an_fp32_output_may_miss_eagers_worst_error_by_the_slack_and_no_more():
    """The band is SLACK_FP32 x the fp32 run's worst error (eager's here) beyond atol + rtol."""
    exact, eager, other, _, _ = _fp32_case()
    worst = float((eager.double() - exact).abs().max())
    got = other.clone()
    band = 1e-4 + SLACK_FP32 * worst + 1e-4 * abs(float(exact[11]))
    got[11] = float(exact[11]) + 0.9 * band
    assert judge_against_exact(eager, got, exact, TOL).ok
    got[11] = float(exact[11]) + 1.1 * band
    result = judge_against_exact(eager, got, exact, TOL)
    assert not result.ok and "1 of 2048 elements outside" in result.reason, result.reason


def test_the_tf32_band_is_eager_worst_error_and_no_wider():
    exact, eager, other, _, fp32 = _tf32_case()
    worst = float((eager - exact).abs().max())
    got = other.clone()
    got[11] = exact[11] + 1e-4 + worst + 1e-3 * abs(float(exact[11])) + 1e-3  # just outside the band
    result = judge_against_exact(eager, got, exact, TOL, tf32=eager, fp32=fp32)
    assert not result.ok and "1 of 4096 elements outside" in result.reason, result.reason


def test_an_eager_equal_to_the_exact_run_lets_nothing_through():
    """Eager and the emulation equal the exact run (a reference that computes in fp32 internally:
    its fp64 run gains nothing): eager's error is 0, and so is the band's widening."""
    exact, _, other, _, fp32 = _tf32_case()
    result = judge_against_exact(exact, other, exact, TOL, tf32=exact, fp32=fp32)
    assert not result.ok and "elements outside atol=0.0001" in result.reason, result.reason


def test_the_flag_not_eagers_algorithm_sets_the_allowance():
    """cuDNN ran eager's convolution without TF32 (exact) though the flag allowed it: a TF32
    candidate is as accurate as the flag promises and passes; a bf16 one still does not."""
    exact, tf32, other, sloppy, fp32 = _tf32_case()
    assert judge_against_exact(exact, other, exact, TOL, tf32=tf32, fp32=fp32).ok
    assert not judge_against_exact(exact, sloppy, exact, TOL, tf32=tf32, fp32=fp32).ok


def test_tf32_emulation_rounds_the_operands_of_convolutions_and_matmuls_only():
    import torch.nn.functional as F

    from egg.evaluate.anchor import TF32Emulation

    x, w, a, m = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3), torch.randn(6, 8), torch.randn(8, 5)
    with TF32Emulation(convs=True, matmuls=False):
        conv, mm, add = F.conv2d(x, w), a @ m, x + 1
    assert torch.equal(conv, F.conv2d(tf32_round(x), tf32_round(w)))
    assert not torch.equal(conv, F.conv2d(x, w))
    assert torch.equal(mm, a @ m) and torch.equal(add, x + 1)  # matmul TF32 not allowed here
    with TF32Emulation(convs=False, matmuls=True):
        mm2 = a @ m
    assert torch.equal(mm2, tf32_round(a) @ tf32_round(m)) and not torch.equal(mm2, a @ m)


def test_an_integer_output_that_misses_eager_gets_a_reason_under_tf32_too():
    """The TF32 run is a tensor tree: the reason for a leaf outside the route must not test its truth."""
    idx = torch.arange(4)  # a lone tensor output: the TF32 run is then a tensor, not a tuple
    result = judge_against_exact(idx, idx + 1, idx, TOL, tf32=idx)
    assert not result.ok and "only fp16/bf16/fp32 outputs have an exact route" in result.reason


def test_the_exact_run_is_fp64_for_fp32_outputs_unless_the_problem_asks_to_match_eager_closer():
    from egg.tolerance import resolve_tolerances

    fp32, fp16 = torch.zeros(2), torch.zeros(2, dtype=torch.float16)
    assert exact_dtype((fp16, fp32), TOL) == torch.float64
    assert exact_dtype(fp16, TOL) == torch.float32
    assert exact_dtype(fp32, resolve_tolerances(1e-2)) == torch.float64  # looser: KernelBench's 1e-2
    # TOLERANCE = 1e-12: "match eager"; against an fp32 run eager's error is 0 and no fp32-rounding allowance
    assert exact_dtype(fp32, resolve_tolerances(1e-12)) == torch.float32
    exact, eager, other, _, _ = _fp32_case()
    assert not judge_against_exact(eager, other, eager, resolve_tolerances(1e-12)).ok
