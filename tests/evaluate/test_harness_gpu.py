"""The harness on a CUDA GPU: honest Triton and CUDA C++ candidates are accepted with timings side by
side with eager and torch.compile; a side-stream kernel is rejected (statically, and dynamically
when the static layer is off); an illegal memory access is a crash and the next evaluation works."""

from __future__ import annotations

from pathlib import Path

import pytest

from egg.evaluate import EvalOptions, Harness

pytestmark = pytest.mark.gpu

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu_large.py"
GPU = FIXTURES / "candidates" / "gpu"


@pytest.fixture(scope="module")
def harness():
    with Harness(device="cuda") as h:
        yield h


def _eval(harness, candidate, tmp_path, **kw):
    options = EvalOptions(device="cuda", timeout_s=kw.pop("timeout_s", 300), seed=7, **kw)
    return harness.evaluate(PROBLEM, candidate, options, tmp_path / Path(candidate).stem)


def test_honest_triton_kernel_is_accepted_with_comparable_timings(harness, tmp_path):
    v = _eval(harness, FIXTURES / "candidates" / "add_relu_triton.py", tmp_path)
    assert v.accepted, v.reasons
    assert v.timing_comparable and v.device == "cuda"
    assert v.candidate_ms > 0 and v.eager_ms > 0 and v.compile_ms > 0
    assert v.timing["candidate"].runs >= 50
    assert v.speedup_vs_eager == pytest.approx(v.eager_ms / v.candidate_ms)


def test_honest_load_inline_cuda_kernel_is_accepted(harness, tmp_path):
    v = _eval(harness, GPU / "cuda_add_relu.py", tmp_path)
    assert v.accepted, v.reasons
    assert v.backend == "cuda"
    assert any(k.startswith("cuda_ext:") for k in v.kernels_launched)


def test_side_stream_kernel_is_rejected_statically(harness, tmp_path):
    v = _eval(harness, GPU / "side_stream_unsynced.py", tmp_path)
    assert v.stage_failed == "static"


def test_side_stream_kernel_is_rejected_dynamically_without_static_checks(harness, tmp_path):
    v = _eval(harness, GPU / "side_stream_unsynced.py", tmp_path, static_checks=False)
    assert not v.accepted
    assert v.stage_failed == "correctness"
    assert any("side stream" in r or "stream other than" in r for r in v.reasons), v.reasons


def test_illegal_memory_access_is_a_crash_and_the_next_evaluation_works(harness, tmp_path):
    v = _eval(harness, GPU / "illegal_access.py", tmp_path)
    assert v.stage_failed == "crash", v.reasons
    after = _eval(harness, FIXTURES / "candidates" / "add_relu_triton.py", tmp_path / "after")
    assert after.accepted, after.reasons
