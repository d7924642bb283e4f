"""The judge on a CUDA GPU (run on the H200: ``python -m pytest -m gpu tests/evaluate/test_harness_gpu.py``).

Honest Triton, CUDA C++ and cuBLAS + Triton-epilogue candidates are accepted with timings side by
side with eager and torch.compile, buffers shared by CUDA IPC; each GPU-side defence rejects its
cheat for the right reason, with the static checks on (as users run it) and off (the judge alone):
side streams, timer patching, runner timing patched to report nothing (physics floor) or a tenth
(the judge's clock), forged results, caches keyed by ``_version``, touch kernels (ablation); an
illegal memory access is a crash and the next evaluation works.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from egg.evaluate import EvalOptions, Harness, Verdict

pytestmark = pytest.mark.gpu

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu_large.py"
GPU = FIXTURES / "candidates" / "gpu"
HONEST = FIXTURES / "candidates" / "add_relu_triton.py"


@pytest.fixture(scope="module")
def harness():
    with Harness(device="cuda") as h:
        yield h


def _eval(harness: Harness, candidate: Path, tmp_path: Path, problem: Path = PROBLEM, **kw) -> Verdict:
    options = EvalOptions(device="cuda", timeout_s=kw.pop("timeout_s", 300), seed=7, **kw)
    return harness.evaluate(problem, candidate, options, tmp_path / Path(candidate).stem)


def test_honest_triton_kernel_is_accepted_with_sane_timings_over_cuda_ipc(harness, tmp_path):
    v = _eval(harness, HONEST, tmp_path)
    assert v.accepted, v.reasons
    assert v.timing_comparable and v.device == "cuda"
    assert v.transport == "cuda-ipc" and not any(n.startswith("transport:") for n in v.notes)
    assert v.backend_flags == {"matmul_allow_tf32": False, "cudnn_allow_tf32": True}
    assert v.candidate_ms > 0 and v.eager_ms > 0 and v.compile_ms > 0
    assert v.timing["candidate"].runs >= 50
    assert v.speedup_vs_eager == pytest.approx(v.eager_ms / v.candidate_ms)
    # one fused pass over 128 MB against eager's two: faster, but not by more than physics allows
    assert 1.0 < v.speedup_vs_eager < 4.0, v.speedup_vs_eager
    assert v.floor_ms is not None and 0 < v.floor_ms < v.candidate_ms
    # the output, plus the input elements relu lets through (x + y > 0: about half of 2 x 64 MB)
    assert 1.9 * 64 * 2**20 < v.floor_bytes < 2.1 * 64 * 2**20, v.floor_bytes
    assert v.judge_clock_ms is not None and v.null_call_ms is not None
    assert len(v.clock_sets) == 1 and len(v.clock_sets[0]) == v.timing["candidate"].runs
    assert v.checked_timed_calls == 32  # 64 MB of output: 2 GB of checked outputs is 32 of the 100 calls
    assert v.launches_per_call == 1
    assert v.generated_gpu_ms and v.generated_gpu_ms > 0 and (v.library_gpu_ms or 0.0) < v.generated_gpu_ms
    assert v.ablation and "no longer" not in v.ablation
    assert v.phase_s["runner_start"] < 3.0


def test_honest_load_inline_cuda_kernel_is_accepted(harness, tmp_path):
    v = _eval(harness, GPU / "cuda_add_relu.py", tmp_path)
    assert v.accepted, v.reasons
    assert v.backend == "cuda"
    assert any(k.startswith("cuda_ext:") for k in v.kernels_launched)
    assert v.generated_gpu_ms and v.generated_gpu_ms > 0


def test_cublas_gemm_with_a_fused_triton_epilogue_is_accepted(harness, tmp_path):
    v = _eval(harness, FIXTURES / "candidates" / "honest" / "cublas_fused_epilogue.py", tmp_path,
              problem=FIXTURES / "problems" / "linear_scale.py")
    assert v.accepted, v.reasons
    assert v.generated_gpu_ms and v.generated_gpu_ms > 0 and v.library_gpu_ms and v.library_gpu_ms > 0


@pytest.mark.parametrize(
    ("name", "static_rule", "stage", "needle"),
    [
        ("side_stream_unsynced", "stream", "correctness", "stream other than the caller's"),
        ("side_stream_getattr", "computed-attr", "correctness", "stream other than the caller's"),
        ("patch_event_elapsed", "patch", "static", "replaced torch.cuda.Event.elapsed_time"),
        ("runner_timing_zero", "introspection", "timing", "physics floor"),
        ("runner_timing_scaled", "stream", "timing", "disagree with the judge's clock"),
        ("forged_result_exit", "import", "crash", "the candidate's process"),
        ("version_cache", "global-cache", "correctness", "outside atol"),
        ("touch_kernel", None, "correctness", "generated kernels do no part of the computation"),
    ],
)
def test_gpu_cheat_is_rejected_statically_and_by_the_judge_alone(harness, tmp_path, name, static_rule, stage, needle):
    v = _eval(harness, GPU / f"{name}.py", tmp_path / "static")
    if static_rule:
        assert v.stage_failed == "static" and f"static check '{static_rule}'" in v.reasons[0], v.reasons
    alone = _eval(harness, GPU / f"{name}.py", tmp_path / "alone", static_checks=False)
    assert not alone.accepted
    assert alone.stage_failed == stage, alone.reasons
    assert needle in alone.reasons[0], alone.reasons


@contextlib.contextmanager
def _beside(script: str, count: int, seconds: float = 240) -> Iterator[None]:
    """``count`` processes running ``script`` (its argv[1]: how long to run) while the block runs."""
    procs = [subprocess.Popen([sys.executable, "-c", script, str(seconds)]) for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


_LOAD = """
import time, torch
a = torch.randn(4096, 4096, device="cuda")
end = time.time() + float(__import__("sys").argv[1])
while time.time() < end:
    for _ in range(20):
        a = torch.tanh(a @ a)
    torch.cuda.synchronize()
"""


@pytest.mark.gpu_load
def test_clock_check_holds_while_another_process_loads_the_gpu(tmp_path):
    """The scaled-timer cheat, judged by a judge started on a GPU another process keeps busy.

    A judge measures its L2 flush once, and its clock check allows twice that: a flush measured while
    another process holds the GPU would read long and widen the allowance, so it is the fastest of
    ten, taken under the exclusive GPU lock. (Passed on the H200, 2026-12-03, tree f01520f.)
    """
    with _beside(_LOAD, 1), Harness(device="cuda") as fresh:
        v = _eval(fresh, GPU / "runner_timing_scaled.py", tmp_path, static_checks=False)
    assert not v.accepted
    assert "disagree with the judge's clock" in v.reasons[0], v.reasons


_BURN = """
import sys, time
end = time.time() + float(sys.argv[1])
while time.time() < end:
    pass
"""


@pytest.mark.gpu_load
@pytest.mark.parametrize(("candidate", "accepted"), [(HONEST, True), (GPU / "runner_timing_scaled.py", False)],
                         ids=["honest", "runner_timing_scaled"])
def test_the_clock_check_on_a_host_with_every_core_busy(harness, tmp_path, candidate, accepted):
    """One busy process per CPU core beside the judge (a sweep's compiles), ten timed calls.

    The honest candidate is accepted and the scaled-timer cheat (judge alone) is not: the null call
    does the timed call's host work, noise in the null calls cannot lower the judge's figure, and a
    disagreement is confirmed on fresh sets of calls (egg/evaluate/clock.py). Passed on the H200
    (2026-12-03, 5eec254). A busy GPU is another matter: BENCHMARKS.md, third session."""
    import os

    with _beside(_BURN, os.cpu_count() or 1):
        v = _eval(harness, candidate, tmp_path, timing_runs=10, **({} if accepted else {"static_checks": False}))
    assert v.accepted == accepted, (v.reasons, v.notes)
    if not accepted:
        assert v.stage_failed == "timing" and "disagree with the judge's clock" in v.reasons[0], v.reasons


def test_the_flush_the_clock_allows_for_streams_at_memory_speed():
    """The clock check allows twice the flush time: a flush that reads 256 MB slowly widens it for
    every candidate (an int32 sum took 0.36 ms on the H200 and let runner_timing_scaled through).
    256 MB at 2 TB/s, half the H200's bandwidth, is 0.134 ms."""
    import torch

    from egg.evaluate import timing

    assert timing.flush_ms(torch.device("cuda")) < 0.134


def test_illegal_memory_access_is_a_crash_and_the_next_evaluation_works(harness, tmp_path):
    v = _eval(harness, GPU / "illegal_access.py", tmp_path)
    assert v.stage_failed == "crash", v.reasons
    after = _eval(harness, HONEST, tmp_path / "after")
    assert after.accepted, after.reasons


def test_strict_fp32_turns_cudnn_tf32_off(harness, tmp_path):
    v = _eval(harness, HONEST, tmp_path, strict_fp32=True, timing_runs=10)
    assert v.accepted, v.reasons
    assert v.backend_flags == {"matmul_allow_tf32": False, "cudnn_allow_tf32": False}


def test_judge_memory_peak_stays_under_four_and_a_half_sets_and_nothing_stays_behind(harness, tmp_path):
    """A problem with 2 GiB tensors (inputs 4 GiB, output 2 GiB: one set is 6 GiB), evaluated twice
    by one judge.

    The judge's peak reserved device memory stays under 4.5 sets. On the H200 (2026-12-02) it was
    26.0 GiB at 0d6d5bc; the code before it (one pool per evaluation, the floor's autograd pass on
    copies beside the buffers) peaked at 32.5 GiB, and the code before that held three sets of
    buffers beside the inputs, expected outputs and their copies. And the second evaluation starts
    with (almost) nothing reserved: the runner is killed holding its mapping of the last set, so
    without ``Arena.forget_consumers`` that set (6 GiB here) stayed in PyTorch's IPC limbo for the
    judge's lifetime; the sweep of 2026-12-02 saw idle judges holding 46-80 GB."""
    problem = FIXTURES / "problems" / "add_relu_huge.py"
    tensors = 3 * 2 * 2**30
    for run in ("first", "second"):
        v = _eval(harness, HONEST, tmp_path / run, problem=problem, timing_runs=10)
        assert v.accepted, v.reasons
        assert v.peak_device_bytes is not None and v.start_device_bytes is not None
        assert v.peak_device_bytes < 4.5 * tensors, f"{run}: judge peak {v.peak_device_bytes / 2**30:.1f} GiB"
        # which phase set it: every phase of an accepted evaluation reports its own peak
        assert {"trials", "compile", "timing", "ablation"} <= set(v.phase_peak_bytes), v.phase_peak_bytes
        assert max(v.phase_peak_bytes.values()) == v.peak_device_bytes, v.phase_peak_bytes
    assert v.start_device_bytes < 2**30, f"the second evaluation began with {v.start_device_bytes / 2**30:.1f} GiB held"


@pytest.mark.parametrize(("name", "accepted"), [("blocked_dot", True), ("bf16_dot", False)])
def test_fp32_outputs_are_judged_against_an_fp64_run_on_the_gpu(harness, tmp_path, name, accepted):
    """A long fp32 sum whose terms cancel: another summation order than cuBLAS's misses eager by more
    than atol and passes against the fp64 run; the same sum on bf16-rounded operands does not."""
    v = _eval(harness, FIXTURES / "candidates" / "fp32_route" / f"{name}.py", tmp_path,
              problem=FIXTURES / "problems" / "fp32_cancelling_dot.py")
    assert v.accepted is accepted, v.reasons
    where = " ".join(v.notes if accepted else v.reasons)
    assert "fp32 route" in where and "against an fp64 run" in where, where
