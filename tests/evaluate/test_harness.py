"""The harness on CPU (Triton interpreter): each candidate gets the right verdict, and the harness
and its judge survive every one of them. One Harness serves the whole module, so crashes and
timeouts must leave it usable for the next candidate. The bad candidates run with the static
checks off: what is tested here is the judge's own verdict (test_adversarial.py checks both)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from egg.evaluate import EvalOptions, Harness, Verdict

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
HONEST = FIXTURES / "candidates" / "add_relu_triton.py"
HARNESS_CASES = FIXTURES / "candidates" / "harness"


@pytest.fixture(scope="module")
def harness():
    with Harness(device="cpu") as h:
        yield h


def _eval(harness: Harness, candidate: Path, tmp_path: Path, problem: Path = PROBLEM, **opts) -> Verdict:
    opts.setdefault("shapes", "default")
    options = EvalOptions(device="cpu", timeout_s=opts.pop("timeout_s", 60), seed=opts.pop("seed", 1234), **opts)
    return harness.evaluate(problem, candidate, options, tmp_path / candidate.stem)


def test_honest_triton_candidate_is_accepted_and_archived(harness, tmp_path):
    v = _eval(harness, HONEST, tmp_path)
    assert v.accepted, v.reasons
    assert v.stage_failed is None and v.reasons == []
    assert v.backend == "triton"
    assert any("add_relu" in k for k in v.kernels_launched) and v.launches_per_call == 1
    assert len(v.trials) == 5 + 2 and all(t.passed for t in v.trials)
    # timing on CPU is reported but marked not comparable; compile is skipped there
    assert v.candidate_ms and v.eager_ms and v.speedup_vs_eager
    assert v.timing_comparable is False and v.compile_ms is None
    assert v.backend_flags == {"matmul_allow_tf32": False, "cudnn_allow_tf32": True}
    archive = Path(v.archive_dir)
    assert (archive / "candidate.py").is_file() and (archive / "worker.log").is_file()
    assert (archive / "problem.py").read_bytes() == PROBLEM.read_bytes()
    saved = json.loads((archive / "verdict.json").read_text())
    assert saved["accepted"] is True and saved["device"] == "cpu" and saved["problem_sha256"] == v.problem_sha256


def test_every_declared_shape_set_is_checked_by_default(harness, tmp_path):
    v = _eval(harness, HONEST, tmp_path, shapes=None, trials=2)
    assert v.accepted, v.reasons
    assert v.shape_sets == ["default", "small", "wide"]
    assert [t.shape_set for t in v.trials] == ["default"] * 4 + ["small"] * 4 + ["wide"] * 4
    assert v.timed_shape_set == "default"


@pytest.mark.parametrize(
    ("name", "stage", "needle"),
    [
        ("syntax_error", "load", "line 5"),
        ("no_model_new", "load", "no class ModelNew"),
        ("import_error", "load", "line 4"),
        ("wrong_signature", "load", "constructor signature"),
        ("wrong_shape", "correctness", "shape"),
        ("wrong_values", "correctness", "outside atol"),
        ("nan_output", "correctness", "NaN"),
        # the runner poisons freed memory before each trial, so an unwritten torch.empty reads NaN
        # where the allocator hands back a poisoned block, else another tensor's stale bytes
        ("unwritten_output", "correctness", "output:"),
        ("mutates_input", "correctness", "modified input"),
        ("plain_pytorch", "correctness", "plain PyTorch"),
        ("decoy_kernel", "correctness", "plain PyTorch"),
        ("raises", "correctness", "ValueError: boom"),
        ("pointer_cache", "correctness", "outside atol"),
        ("first_calls_only", "timing", "timed call"),
        ("crash_exit", "crash", "exited with code 7"),
    ],
)
def test_bad_candidates_get_the_right_verdict(harness, tmp_path, name, stage, needle):
    v = _eval(harness, HARNESS_CASES / f"{name}.py", tmp_path, static_checks=False)
    assert not v.accepted
    assert v.stage_failed == stage, v.reasons
    assert any(needle in r for r in v.reasons), v.reasons
    assert all("\n" not in r for r in v.reasons)


def test_infinite_loop_times_out_and_the_next_candidate_still_works(harness, tmp_path):
    v = _eval(harness, HARNESS_CASES / "infinite_loop.py", tmp_path, timeout_s=8)
    assert v.stage_failed == "timeout" and not v.accepted
    after = _eval(harness, HONEST, tmp_path / "after")
    assert after.accepted, after.reasons


def test_shape_specialised_kernel_is_caught_unless_shapes_are_restricted(harness, tmp_path):
    default_only = _eval(harness, HARNESS_CASES / "shape_specialised.py", tmp_path / "default")
    assert default_only.accepted, default_only.reasons
    every = _eval(harness, HARNESS_CASES / "shape_specialised.py", tmp_path / "all", shapes=None)
    assert every.stage_failed == "correctness"
    assert any("'wide'" in r for r in every.reasons), every.reasons


def test_out_of_memory_is_the_candidates_own(harness, tmp_path):
    # every candidate gets a fresh runner process and the judge releases its cached memory before
    # each job, so with the device to itself (this harness has one judge) an out-of-memory error is
    # the candidate's: no re-run (beside another evaluation it is re-run alone: test_harness_memory.py)
    source = HONEST.read_text().replace(
        "        x = x.contiguous()\n",
        "        raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 6.00 GiB')\n", 1)
    path = tmp_path / "oom.py"
    path.write_text(source)
    v = _eval(harness, path, tmp_path)
    assert v.stage_failed == "correctness" and "out of memory" in " ".join(v.reasons)


def test_the_judges_own_out_of_memory_is_no_verdict_on_the_kernel(harness, tmp_path):
    # the reference runs in the judge: where its allocations do not fit (level-1 problems with 6-8 GB
    # tensors on an 80 GB card), no verdict on the kernel was reached; it is neither the candidate's
    # "crash" nor "the candidate's own" out-of-memory error
    problem = tmp_path / "add_relu_oom.py"
    problem.write_text(PROBLEM.read_text().replace(
        "        return torch.relu(x + y)\n",
        "        raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 8.00 GiB')\n", 1))
    v = _eval(harness, HONEST, tmp_path, problem=problem)
    assert not v.accepted and v.stage_failed == "infrastructure", (v.stage_failed, v.reasons)
    assert "judge ran out of device memory" in v.reasons[0] and "8.00 GiB" in v.reasons[0]
    assert v.summary().startswith("not judged:")
    assert not any("with the device to itself" in n for n in v.notes), v.notes


@pytest.mark.parametrize("raised, hint", [
    # a cheat that looks at its kernel's output on the host and raises when it is poisoned
    ("ValueError('bad output')", True),
    # an out-of-memory error keeps its own reason (the harness re-runs those alone beside others)
    ("torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 6.00 GiB')", False),
])
def test_a_raise_under_kernel_ablation_is_rejected_with_its_own_reason(harness, tmp_path, raised, hint):
    source = HONEST.read_text().replace(
        "        return out\n",
        f"        if torch.isnan(out).any():\n            raise {raised}\n        return out\n", 1)
    path = tmp_path / "raises_under_poison.py"
    path.write_text(source)
    v = _eval(harness, path, tmp_path)
    assert not v.accepted and v.stage_failed == "correctness", (v.stage_failed, v.reasons)
    reason = " ".join(v.reasons)
    assert ("do not branch on kernel outputs" in reason) is hint, reason
    assert ("out of memory" in reason) is not hint, reason


def test_strict_fp32_and_allow_tf32_set_the_backend_flags(harness, tmp_path):
    strict = _eval(harness, HONEST, tmp_path / "strict", strict_fp32=True, trials=1)
    assert strict.accepted and strict.backend_flags == {"matmul_allow_tf32": False, "cudnn_allow_tf32": False}
    loose = _eval(harness, HONEST, tmp_path / "loose", allow_tf32=True, trials=1)
    assert loose.accepted and loose.backend_flags == {"matmul_allow_tf32": True, "cudnn_allow_tf32": True}


def test_rewriting_the_problem_file_changes_nothing(tmp_path, monkeypatch):
    """Even without Landlock (turned off here), a candidate that rewrites the problem on disk does
    not change what it or any later candidate is judged against: the judge reads the harness's
    copy once per hash, and the harness pinned that copy before any candidate ran."""
    monkeypatch.setenv("EGG_RUNNER_LANDLOCK", "0")
    problem = tmp_path / "run" / "problem.py"
    problem.parent.mkdir()
    shutil.copy(FIXTURES / "problems" / "rms_norm.py", problem)
    original = problem.read_bytes()
    cheat = FIXTURES / "candidates" / "adversarial" / "rewrite_problem_file.py"
    with Harness(device="cpu") as fresh:
        opts = {"problem": problem, "static_checks": False, "trials": 2}
        first = _eval(fresh, cheat, tmp_path / "run" / "candidates", **opts)
        assert first.stage_failed == "correctness" and "outside atol" in first.reasons[0]
        assert problem.read_bytes() != original  # the file on disk was rewritten...
        honest = _eval(fresh, FIXTURES / "candidates" / "honest" / "rms_norm_triton.py", tmp_path / "h", **opts)
        assert honest.accepted, honest.reasons  # ...but the judge still holds the real reference
        assert any("changed on disk" in n for n in honest.notes)
        again = _eval(fresh, cheat, tmp_path / "again", **opts)
        assert again.stage_failed == "correctness" and "outside atol" in again.reasons[0]


def test_problem_file_is_not_writable_by_a_candidate_under_landlock(harness, tmp_path):
    problem = tmp_path / "run" / "problem.py"
    problem.parent.mkdir()
    shutil.copy(FIXTURES / "problems" / "rms_norm.py", problem)
    original = problem.read_bytes()
    cheat = FIXTURES / "candidates" / "adversarial" / "rewrite_problem_file.py"
    v = _eval(harness, cheat, tmp_path / "run" / "candidates", problem=problem, static_checks=False, trials=2)
    assert v.stage_failed == "correctness"
    if any(n.startswith("landlock ABI") for n in v.isolation):
        assert problem.read_bytes() == original


def test_patching_cheats_do_not_reach_later_candidates_in_one_suite(tmp_path):
    """Issue 16 class 4: in one `egg kernelbench --candidates` suite, two candidates that patch the
    evaluator and torch run first (static checks off, so their patches execute), then a wrong one
    and a plain-PyTorch one: both are still rejected, each in a fresh runner."""
    kb = pytest.importorskip("kernelbench_adapter")
    level = tmp_path / "root" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    gens = tmp_path / "gens"
    gens.mkdir()
    order = ["adversarial/patch_compare_outputs", "adversarial/patch_torch_allclose", "harness/wrong_values",
             "harness/plain_pytorch"]
    for i, name in enumerate(order, start=1):
        problem = "rms_norm" if name.startswith("adversarial") else "add_relu"
        shutil.copy(FIXTURES / "problems" / f"{problem}.py", level / f"{i}_Problem{i}.py")
        shutil.copy(FIXTURES / "candidates" / f"{name}.py", gens / f"level_1_problem_{i}_sample_0_kernel.py")
    out = tmp_path / "out"
    kb.rescore_suite(tmp_path / "root", 1, gens, out,
                     EvalOptions(device="cpu", trials=2, timing_runs=2, seed=5, static_checks=False))
    results = json.loads((out / "results.json").read_text())
    patch_a, patch_b, wrong, plain = (results[str(i)][0] for i in range(1, 5))
    assert not patch_a["correctness"] and not patch_b["correctness"]
    assert not wrong["correctness"] and wrong["stage_failed"] == "correctness"
    assert any("outside atol" in r for r in wrong["reasons"])
    assert not plain["correctness"] and any("plain PyTorch" in r for r in plain["reasons"])


def test_host_shared_memory_transport_is_recorded_and_still_checks_everything(tmp_path, monkeypatch):
    """The fallback when CUDA IPC fails its self-test: shared host memory mirrored on the device by the
    runner. Forced here on CPU, where the mirror is a second CPU tensor: inputs and outputs still cross."""
    monkeypatch.setenv("EGG_JUDGE_TRANSPORT", "host-mirror")
    with Harness(device="cpu") as fresh:
        honest = _eval(fresh, HONEST, tmp_path, trials=2)
        assert honest.accepted, honest.reasons
        assert honest.transport == "host-mirror" and any("EGG_JUDGE_TRANSPORT" in n for n in honest.notes)
        mutates = _eval(fresh, HARNESS_CASES / "mutates_input.py", tmp_path, trials=2, static_checks=False)
        assert mutates.stage_failed == "correctness" and "modified input" in mutates.reasons[0]


def test_the_reference_is_compiled_before_the_timed_phase(harness, tmp_path):
    # torch.compile's trace and compile run under the shared GPU lock (phase "compile"), so the
    # exclusive timing phase that other judges of the GPU wait for holds only timed calls.
    v = _eval(harness, HONEST, tmp_path, trials=1, time_compile=True)
    assert v.accepted, v.reasons
    assert v.compile_ms and "compile" in v.phase_s and "timing" in v.phase_s
    assert list(v.phase_s).index("compile") < list(v.phase_s).index("timing")


# A problem whose Model.__init__ reads a module constant that a shape set overrides, and a candidate
# that embeds the problem (as the expert's candidates do) and subclasses its Model.
SIZED_PROBLEM = '''import torch
import torch.nn as nn

ROWS = 8
COLS = 40
SHAPES = {"small": {"ROWS": 3, "COLS": 24}, "tall": {"ROWS": 50}}


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.randn(COLS))

    def forward(self, x):
        return torch.relu(x * self.scale)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
'''
SIZED_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def _scale_relu(x_ptr, s_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    s = tl.load(s_ptr + offs % cols, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x * s, 0.0), mask=mask)


class ModelNew(Model):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _scale_relu[(triton.cdiv(x.numel(), 256),)](x, self.scale, out, x.numel(), x.shape[1], BLOCK=256)
        return out
'''


def test_a_candidate_embedding_the_problem_gets_each_shape_sets_constants(harness, tmp_path):
    """``nn.Parameter(torch.randn(COLS))`` in ``Model.__init__``: the judge builds the reference with
    the set's COLS, and the candidate's copy of ``Model`` must see the same (until 2026-12-06 it kept
    the written 40, so every candidate of such a problem failed every set but ``default``); a set
    that does not override COLS ("tall", after "small") gets the written value back."""
    problem = tmp_path / "sized.py"
    problem.write_text(SIZED_PROBLEM)
    candidate = tmp_path / "sized_candidate.py"
    candidate.write_text(SIZED_PROBLEM + SIZED_KERNEL)
    v = _eval(harness, candidate, tmp_path, problem=problem, shapes=None, trials=2)
    assert v.accepted, v.reasons
    assert v.shape_sets == ["default", "small", "tall"]
    assert all(t.passed for t in v.trials) and {t.shape_set for t in v.trials} == {"default", "small", "tall"}
