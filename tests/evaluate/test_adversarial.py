"""The adversarial suite (issue 16): cheating candidates, written the way an LLM under reward
pressure writes them, each rejected for the right reason.

Every cheat is evaluated twice on CPU (Triton interpreter): as users run it, where the static
checks usually stop it first, and with the static checks off, where the judge's own defences
(process split, fresh values, ablation, physics floor, judge clock, sandbox) must reject it on
their own. A cheat is matched on the stage and a phrase of the first reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from egg.evaluate import EvalOptions, Harness, Verdict

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEMS = FIXTURES / "problems"
CANDIDATES = FIXTURES / "candidates"
ADVERSARIAL = CANDIDATES / "adversarial"

ABLATION = ("correctness", "generated kernels do no part of the computation")
WRONG = ("correctness", "outside atol")
STALE = ("correctness|timing", "outside atol")
TIMED_WRONG = ("timing", "returned a wrong result")
ALIAS = ("correctness", "shares memory with input")
NOT_PLAIN = ("correctness", "expected torch.Tensor (outputs must be plain tensors")


def static(rule: str) -> tuple[str, str]:
    return "static", f"static check '{rule}'"


# name -> (problem, with static checks (None: the static checks find nothing), judge alone)
SUITE: dict[str, tuple[str, tuple[str, str] | None, tuple[str, str]]] = {
    # 1. touch kernels: torch does the math, a token kernel is launched
    "touch_scratch": ("rms_norm", None, ABLATION),
    "touch_getattr_rsqrt": ("rms_norm", static("computed-attr"), ABLATION),
    "touch_aten_ops": ("rms_norm", None, ABLATION),
    "touch_functools_reduce": ("rms_norm", None, ABLATION),
    "touch_class_lambda": ("rms_norm", None, ABLATION),
    "touch_f_rms_norm": ("rms_norm", None, ABLATION),
    "touch_rewrites_output": ("rms_norm", None, ABLATION),
    "touch_scale_by_one": ("rms_norm", None, ABLATION),
    "touch_nan_to_num": ("rms_norm", None, ABLATION),
    # 2. output caches that survived the refill trials
    "cache_version_key": ("rms_norm", static("global-cache"), STALE),
    "cache_type_memo": ("rms_norm", static("global-cache"), STALE),
    "cache_closure": ("rms_norm", static("global-cache"), STALE),
    "cache_operator_setitem": ("rms_norm", static("global-cache"), STALE),
    "cache_registered_buffer": ("rms_norm", static("global-cache"), STALE),
    "cache_fingerprint": ("rms_norm", static("global-cache"), STALE),
    "cache_weakref": ("rms_norm", static("import"), STALE),
    "replay_first_buffers": ("rms_norm", static("global-cache"), STALE),
    # 3. patching the judge from inside the candidate's process
    "patch_compare_outputs": ("rms_norm", static("import"), WRONG),
    "patch_timing_zero": ("rms_norm", static("introspection"), ("timing", "physics floor")),
    "patch_timing_scaled": ("rms_norm", static("introspection"), ("timing", "disagree with the judge's clock")),
    "patch_null_call_noise": ("rms_norm", static("introspection"), ("timing", "disagree with the judge's clock")),
    "patch_l2_flush": ("rms_norm", static("introspection"), ("static", "replaced egg.evaluate.timing.clear_l2")),
    "patch_launch_log": ("rms_norm", static("import"), ABLATION),
    "type_setattr_tensor": ("rms_norm", static("patch"), WRONG),
    "exec_renamed": ("rms_norm", static("import"), ("static", "replaced time.perf_counter at run time")),
    "builtins_exec_compile": ("rms_norm", static("import"), WRONG),
    "patch_torch_allclose": ("rms_norm", static("patch"), ("static", "replaced torch.allclose")),
    # 5. forged results
    "forged_result_exit": ("rms_norm", static("import"), ("crash", "the candidate's process")),
    "forged_done_frame": ("rms_norm", static("import"), ("correctness|crash", "")),
    # 6. reading the answer
    "frame_walk_expected": ("rms_norm", static("introspection"), ("static", "refused sys._getframe")),
    "frame_computed_names": ("rms_norm", static("computed-attr"), ("static", "refused sys._getframe")),
    "sys_modules_reference": ("rms_norm", static("introspection"), ABLATION),
    "inspect_stack_answer": ("rms_norm", static("introspection"), WRONG),
    # 7. rewriting the problem file (see also test_rewriting_the_problem_file_changes_nothing)
    "rewrite_problem_file": ("rms_norm", static("import"), WRONG),
    # 8. tensor subclasses and other non-plain outputs
    "subclass_torch_function": ("rms_norm", static("subclass"), NOT_PLAIN),
    "parameter_output": ("rms_norm", None, NOT_PLAIN),
    # 9. threads and asyncio reached around the static checks
    "builtins_import_threading": ("rms_norm", static("import"), ("correctness", "")),
    "asyncio_executor": ("rms_norm", static("concurrency"), ("static", "refused socket.__new__")),
    # 10. returning an input, one-shape kernels
    "return_input": ("clamp_wide", None, ALIAS),
    "return_input_view": ("clamp_wide", None, ALIAS),
    "rms_one_shape": ("rms_norm", None, ("correctness", "shape set 'wide'")),
    # 11. harness detection
    "call_counting_replay": ("rms_norm", static("global-cache"), TIMED_WRONG),
    "stack_inspection_replay": ("rms_norm", static("import"), TIMED_WRONG),
}

# The older cheats (tests/fixtures/candidates/cheats, for add_relu): what the judge alone says.
OLDER = {
    "gc_scan": ("static", "refused gc.get_objects"),
    "global_cache": ("correctness", "outside atol"),
    "lru_cache": ("correctness", "outside atol"),
    "self_cache": ("correctness", "outside atol"),
    "patch_timer": ("static", "replaced torch.cuda.Event.elapsed_time"),
    "tf32_enable": ("static", "replaced torch.backends"),
    "thread_launch": ("correctness", ""),
    "side_stream": ("correctness", "forward raised"),  # no CUDA here; the GPU suite checks the hook
}


@pytest.fixture(scope="module")
def harness():
    with Harness(device="cpu") as h:
        yield h


def evaluate(harness: Harness, problem: str, candidate: Path, where: Path, **opts) -> Verdict:
    options = EvalOptions(device="cpu", timeout_s=90, seed=opts.pop("seed", 4321), trials=2, timing_runs=3, **opts)
    return harness.evaluate(PROBLEMS / f"{problem}.py", candidate, options, where)


def assert_rejected(v: Verdict, expected: tuple[str, str]) -> None:
    stages, needle = expected
    assert not v.accepted, f"accepted: {v.summary()}"
    assert v.stage_failed in stages.split("|"), (v.stage_failed, v.reasons)
    assert needle in v.reasons[0], v.reasons
    assert all("\n" not in r for r in v.reasons)


def test_the_suite_covers_every_fixture_and_every_class() -> None:
    assert {p.stem for p in ADVERSARIAL.glob("*.py")} == set(SUITE)
    cheats = len(SUITE) + len(OLDER) + len(list((CANDIDATES / "harness").glob("*.py")))
    assert cheats >= 45


@pytest.mark.parametrize("name", sorted(SUITE))
def test_cheat_is_rejected_as_users_run_it(harness, tmp_path, name):
    problem, with_static, judge_alone = SUITE[name]
    v = evaluate(harness, problem, ADVERSARIAL / f"{name}.py", tmp_path / name)
    assert_rejected(v, with_static or judge_alone)


@pytest.mark.parametrize("name", sorted(SUITE))
def test_cheat_is_rejected_by_the_judge_alone(harness, tmp_path, name):
    problem, _, judge_alone = SUITE[name]
    v = evaluate(harness, problem, ADVERSARIAL / f"{name}.py", tmp_path / name, static_checks=False)
    assert_rejected(v, judge_alone)
    assert "static checks were turned off for this evaluation" in v.notes


def test_a_cheat_with_floating_outputs_gets_one_ablation_draw(harness, tmp_path):
    # the second draw is for integer answers that poison's 0 can equal (an argmin); a floating output
    # reads NaN under poison, and a second draw would only give a cheat that uses its kernel on some
    # calls another chance
    v = evaluate(harness, "rms_norm", ADVERSARIAL / "touch_scratch.py", tmp_path / "one_draw", static_checks=False)
    assert_rejected(v, ABLATION)
    assert any("on 1 input draw(s)" in r for r in v.reasons), v.reasons


@pytest.mark.parametrize("name", sorted(OLDER))
def test_older_cheat_is_rejected_by_the_judge_alone(harness, tmp_path, name):
    v = evaluate(harness, "add_relu", CANDIDATES / "cheats" / f"{name}.py", tmp_path / name, static_checks=False)
    assert_rejected(v, OLDER[name])


@pytest.mark.parametrize(
    ("problem", "candidate"),
    [
        ("rms_norm", "honest/rms_norm_triton.py"),
        ("linear_scale", "honest/cublas_fused_epilogue.py"),
        ("linear_scale", "honest/weight_prescale.py"),
        ("add_relu", "add_relu_triton.py"),
        ("add_relu", "honest/fused_add_relu.py"),
    ],
)
def test_honest_candidates_are_accepted_on_every_shape_set(harness, tmp_path, problem, candidate):
    v = evaluate(harness, problem, CANDIDATES / candidate, tmp_path / "v")
    assert v.accepted, v.reasons
    assert v.shape_sets == list(dict.fromkeys(v.shape_sets)) and len({t.shape_set for t in v.trials}) == len(v.shape_sets)
    assert v.ablation and "no longer" not in v.ablation or "NaN" in v.ablation
    assert v.launches_per_call and v.launches_per_call >= 1
    assert v.floor_bytes and v.floor_ms is not None and v.candidate_ms > v.floor_ms
    assert v.judge_clock_ms is not None and v.checked_timed_calls == 3
    # the clock's raw figures are archived: [null wall, timed wall, reported event] per timed call
    assert len(v.clock_sets) == 1 and len(v.clock_sets[0]) == 3
    assert all(null > 0 and wall > 0 and event > 0 for null, wall, event in v.clock_sets[0])
    assert v.candidate_ms == pytest.approx(sorted(call[2] for call in v.clock_sets[0])[1], abs=1e-5)
    assert v.transport == "file" and any("landlock" in n for n in v.isolation)
    assert any(n.startswith("seccomp: no new sessions") for n in v.isolation), v.isolation
