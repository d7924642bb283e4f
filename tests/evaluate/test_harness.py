"""The harness on CPU (Triton interpreter): each candidate gets the right verdict, and the harness
process survives every one of them. One Harness serves the whole module, so crashes and timeouts
must leave it usable for the next candidate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from egg.evaluate import EvalOptions, Harness, Verdict

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
HARNESS_CASES = FIXTURES / "candidates" / "harness"


@pytest.fixture(scope="module")
def harness():
    with Harness(device="cpu") as h:
        yield h


def _eval(harness: Harness, candidate: Path, tmp_path: Path, **opts) -> Verdict:
    opts.setdefault("shapes", "default")
    options = EvalOptions(device="cpu", timeout_s=opts.pop("timeout_s", 60), seed=opts.pop("seed", 1234), **opts)
    return harness.evaluate(PROBLEM, candidate, options, tmp_path / candidate.stem)


def test_honest_triton_candidate_is_accepted_and_archived(harness, tmp_path):
    v = _eval(harness, FIXTURES / "candidates" / "add_relu_triton.py", tmp_path)
    assert v.accepted, v.reasons
    assert v.stage_failed is None and v.reasons == []
    assert v.backend == "triton"
    assert any("add_relu" in k for k in v.kernels_launched)
    assert len(v.trials) == 5 + 2 and all(t.passed for t in v.trials)
    # timing on CPU is reported but marked not comparable; compile is skipped there
    assert v.candidate_ms and v.eager_ms and v.speedup_vs_eager
    assert v.timing_comparable is False and v.compile_ms is None
    archive = Path(v.archive_dir)
    assert (archive / "candidate.py").is_file() and (archive / "worker.log").is_file()
    saved = json.loads((archive / "verdict.json").read_text())
    assert saved["accepted"] is True and saved["device"] == "cpu"


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
        # poisoned memory reads as NaN where the allocator hands back a poisoned block; on the CPU
        # allocator it may instead be another tensor's stale bytes: rejected either way
        ("unwritten_output", "correctness", "output:"),
        ("mutates_input", "correctness", "modified input"),
        ("plain_pytorch", "correctness", "plain PyTorch"),
        ("decoy_kernel", "correctness", "plain PyTorch"),
        ("raises", "correctness", "ValueError: boom"),
        ("pointer_cache", "correctness", "outside atol"),
        ("first_calls_only", "timing", "timed call"),
        ("crash_exit", "crash", "exit"),
    ],
)
def test_bad_candidates_get_the_right_verdict(harness, tmp_path, name, stage, needle):
    v = _eval(harness, HARNESS_CASES / f"{name}.py", tmp_path)
    assert not v.accepted
    assert v.stage_failed == stage, v.reasons
    assert any(needle in r for r in v.reasons), v.reasons
    assert all("\n" not in r for r in v.reasons)


def test_infinite_loop_times_out_and_the_next_candidate_still_works(harness, tmp_path):
    v = _eval(harness, HARNESS_CASES / "infinite_loop.py", tmp_path, timeout_s=8)
    assert v.stage_failed == "timeout" and not v.accepted
    after = _eval(harness, FIXTURES / "candidates" / "add_relu_triton.py", tmp_path / "after")
    assert after.accepted, after.reasons


def test_shape_specialised_kernel_is_caught_by_all_shape_sets(harness, tmp_path):
    default_only = _eval(harness, HARNESS_CASES / "shape_specialised.py", tmp_path / "default")
    assert default_only.accepted, default_only.reasons
    every = _eval(harness, HARNESS_CASES / "shape_specialised.py", tmp_path / "all", shapes="all")
    assert every.stage_failed == "correctness"
    assert any("'wide'" in r for r in every.reasons), every.reasons


def test_out_of_memory_is_the_candidates_own(harness, tmp_path):
    # every candidate gets a fresh runner process and the judge releases its cached memory before
    # each job, so an out-of-memory error is the candidate's (no retry, unlike the shared worker)
    source = (FIXTURES / "candidates" / "add_relu_triton.py").read_text().replace(
        "        x = x.contiguous()\n",
        "        raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 6.00 GiB')\n", 1)
    path = tmp_path / "oom.py"
    path.write_text(source)
    v = _eval(harness, path, tmp_path)
    assert v.stage_failed == "correctness" and "out of memory" in " ".join(v.reasons)
