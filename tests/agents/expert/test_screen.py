"""Tuning by measurement: successive halving, the configs a tuner screens, the screen process on
real interpreter kernels, and a tuner that proposes only what the screen found faster."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from expert_helpers import problem

from agents.expert.agents import program_for
from agents.expert.design import read_config, render
from agents.expert.screen import PARENT, ScreenEntry, ScreenReport, halve, screen
from agents.expert.tuner import ExpertTuner
from agents.expert.tuning import Move, configs, with_spares
from agents.protocol import AgentTask, Draft
from egg.vocabulary import Focus, Stage

SPEEDS = {PARENT: 5.0, "a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 6.0, "f": 7.0}


def _measure(calls_seen: dict[str, list[int]]):
    def measure(key: str, calls: int) -> float:
        calls_seen.setdefault(key, []).append(calls)
        return SPEEDS[key]
    return measure


def test_halving_keeps_the_fastest_and_times_the_parent_every_round() -> None:
    seen: dict[str, list[int]] = {}
    times, finalists, rounds = halve(list(SPEEDS), _measure(seen), keep=2, reps=3)
    assert sorted(k for k in finalists if k != PARENT) == ["a", "b"]
    assert PARENT in finalists and rounds == 3  # 6 racers -> 3 -> 2
    assert seen[PARENT] == [3, 6, 12] and seen["a"] == [3, 6, 12]  # calls double per round
    assert seen["f"] == [3] and seen["c"] == [3, 6]  # slow configs stop early
    assert times["e"] == [6.0]


def test_halving_drops_failures_and_stops_at_the_deadline() -> None:
    def failing(key: str, calls: int) -> float | None:
        return None if key == "a" else SPEEDS[key]

    times, finalists, _ = halve(list(SPEEDS), failing, keep=2, reps=1)
    assert "a" not in times and "a" not in finalists
    ticks = iter(range(100))
    seen: dict[str, list[int]] = {}
    times, finalists, rounds = halve(list(SPEEDS), _measure(seen), keep=1, reps=1, deadline=9.5,
                                     clock=lambda: float(next(ticks)))
    # round 1 measures all 7 (clock 0-6), round 2 is cut after 3 (clock 7-9): the finalists are round
    # 2's keys, measured or not, and only the parent's last median is comparable with theirs
    assert rounds == 2 and set(finalists) == {PARENT, "a", "b", "c"}
    assert sum(len(v) for v in seen.values()) == 10


def test_a_deadline_already_past_still_times_the_parent_and_keep_configs_once() -> None:
    # beside other lanes' judges the builds and the GPU lock can eat the whole deadline: the first
    # round still measures the parent and the first ``keep`` configs (the packs' order), no more
    seen: dict[str, list[int]] = {}
    times, finalists, rounds = halve(list(SPEEDS), _measure(seen), keep=2, reps=3, deadline=0.0,
                                     clock=lambda: 1.0)
    assert list(seen) == [PARENT, "a", "b"] and rounds == 1
    assert times[PARENT] == [5.0] and times["a"] == [1.0] and times["b"] == [2.0]
    assert times["c"] == [] and set(finalists) == set(SPEEDS)  # the rest: not reached


def test_report_proposes_only_finalists_faster_than_the_parent_at_equal_calls() -> None:
    report = ScreenReport(entries=[ScreenEntry(key=PARENT, status="ok", medians_ms=[5.0, 5.0]),
                                   ScreenEntry(key="a", status="ok", medians_ms=[4.0, 4.95]),  # inside the margin
                                   ScreenEntry(key="b", status="ok", medians_ms=[3.0, 2.0]),
                                   ScreenEntry(key="c", status="ok", medians_ms=[1.0]),  # round 2 not reached
                                   ScreenEntry(key="d", status="ok", medians_ms=[9.0])],
                          finalists=[PARENT, "a", "b", "c"], rounds=2)
    assert [e.key for e in report.faster_than_parent(0.02)] == ["b"]


def _move(kernel: str, param: str, new: int) -> Move:
    return Move(kernel=kernel, param=param, old=0, new=new)


def test_configs_are_single_moves_then_pairs_on_one_kernel() -> None:
    ordered = [_move("k0", "BLOCK_M", 64), _move("k0", "BLOCK_N", 64), _move("k1", "XBLOCK", 512),
               _move("k0", "BLOCK_M", 32)]
    out = configs(ordered, 6)
    singles = [c for c in out if len(c) == 1]
    pairs = [c for c in out if len(c) == 2]
    assert [c[0] for c in singles] == ordered[:len(singles)]  # the packs' order, best first
    assert all(a.kernel == b.kernel and a.param != b.param for a, b in pairs)
    assert [(a.param, a.new, b.param, b.new) for a, b in pairs] == [
        ("BLOCK_M", 64, "BLOCK_N", 64), ("BLOCK_N", 64, "BLOCK_M", 32)]
    assert len(out) == 6 and configs(ordered, 0) == []
    assert len(configs(ordered, 3)) == 3 and len([c for c in configs(ordered, 3) if len(c) == 2]) == 1


def test_spares_follow_the_screens_own_configs_unchanged() -> None:
    ordered = [_move("k0", "BLOCK_M", 64), _move("k0", "BLOCK_N", 64), _move("k1", "XBLOCK", 512),
               _move("k0", "BLOCK_M", 32), _move("k0", "num_warps", 8)]
    out, own = with_spares(ordered, 4, 3)
    assert own == 4 and out[:4] == configs(ordered, 4)  # the screen's own configs do not move
    assert len(out) == 7 and all(c not in out[:4] for c in out[4:])  # three spares, none repeated
    assert with_spares(ordered, 4, 0) == (configs(ordered, 4), 4)
    everything = configs(ordered, 100)
    assert len(with_spares(ordered, len(everything) - 1, 5)[0]) == len(everything)  # as many as there are


ELEMENTWISE = "return x * 2.0 + 1.0"


def _parent(path: Path, xblock: int) -> Draft:
    program = program_for(str(path))
    variant = program.variants[0]
    kernel = variant.program.kernels[0].name
    c = render(program, variant, "cpu", {kernel: {"XBLOCK": xblock}})
    return Draft(agent="expert-designer", stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, source=c.source,
                 structure=c.structure)


def test_screen_process_times_good_configs_and_reports_broken_ones(tmp_path: Path) -> None:
    path = problem(tmp_path, "affine", ELEMENTWISE, "[torch.randn(4096)]")
    good = _parent(path, 1024).source
    wrong = good.replace("* 2.0", "* 2.5") if "* 2.0" in good else None
    assert wrong is not None and wrong != good  # the constant is in the kernel: a wrong-output config
    crashing = good.replace("class ModelNew", "import missing_module_of_a_broken_config\nclass ModelNew")
    report = screen(path, {PARENT: _parent(path, 4096).source, "good": good, "wrong": wrong, "crash": crashing},
                    keep=1, seconds=60, device="cpu")
    assert report.error is None, report.error
    status = {e.key: e.status for e in report.entries}
    assert status == {PARENT: "ok", "good": "ok", "wrong": "gross error", "crash": "error"}
    assert "missing_module_of_a_broken_config" in report.entry("crash").detail
    assert report.entry("good").medians_ms and report.entry(PARENT).medians_ms
    assert "mismatch" in report.entry("wrong").detail or "max" in report.entry("wrong").detail
    # the summary a rejected tuning round reports names each failed config by its settings, with why
    line = report.summary({"wrong": "k.XBLOCK 512", "crash": "k.num_warps 8"})
    assert "k.num_warps 8 (error: ModuleNotFoundError" in line and "k.XBLOCK 512 (gross error: " in line


def test_a_spare_takes_the_place_of_a_config_that_fails_and_unused_spares_are_not_screened(tmp_path: Path) -> None:
    path = problem(tmp_path, "affine", ELEMENTWISE, "[torch.randn(4096)]")
    crashing = _parent(path, 1024).source.replace("class ModelNew", "import missing_module_of_a_broken_config\nclass ModelNew")
    sources = {PARENT: _parent(path, 4096).source, "crash": crashing, "good": _parent(path, 1024).source,
               "spare": _parent(path, 512).source, "unused": _parent(path, 2048).source}
    report = screen(path, sources, keep=1, seconds=60, device="cpu", quota=2)
    assert report.error is None, report.error
    status = {e.key: e.status for e in report.entries}
    # the crash spent its place; the first spare took it; the second was not needed, nor reported
    assert status == {PARENT: "ok", "crash": "error", "good": "ok", "spare": "ok"}
    assert report.entry("spare").medians_ms and "screened 3 configs" in report.summary()


def test_a_summary_names_a_few_failures_with_why_and_counts_the_rest() -> None:
    entries = [ScreenEntry(key=PARENT, status="ok", medians_ms=[1.0])]
    entries += [ScreenEntry(key=f"config_{i}", status="error", detail=f"OutOfResources: shared memory {i}" + "x" * 400)
                for i in range(6)]
    line = ScreenReport(entries=entries, rounds=1).summary({"config_0": "mat.BLOCK_N 256"})
    assert line.startswith("screened 6 configs")
    assert "mat.BLOCK_N 256 (error: OutOfResources: shared memory 0" in line and "config_3 (error:" in line
    assert "config_4" not in line and line.endswith("and 2 more")
    assert len(line) < 1000  # each reason cut short


def test_screen_process_compares_configs_with_the_judged_parent_and_keeps_time_to_time_them(tmp_path: Path) -> None:
    """The parent (accepted by the judge) is built first and is the other configs' reference, so a
    config that agrees with it passes even where the parent's own output is not eager's (a TF32
    convolution's error); with no time left for builds, the parent and ``keep`` configs are still
    built (something to time) and the rest are reported as not reached."""
    path = problem(tmp_path, "affine", ELEMENTWISE, "[torch.randn(4096)]")
    parent = _parent(path, 4096).source
    shifted = parent.replace("* 2.0", "* 2.01")  # 0.5% off eager: past 10x a 1e-4 tolerance
    assert shifted != parent
    same = _parent(path, 1024).source.replace("* 2.0", "* 2.01")
    report = screen(path, {PARENT: shifted, "same": same, "eager": _parent(path, 1024).source}, keep=2, seconds=60,
                    device="cpu")
    status = {e.key: e.status for e in report.entries}
    assert status == {PARENT: "ok", "same": "ok", "eager": "gross error"}, report.entries
    report = screen(path, {PARENT: parent, "same": _parent(path, 1024).source, "later": _parent(path, 512).source},
                    keep=1, seconds=0.001, device="cpu")
    assert {e.key: e.status for e in report.entries} == {PARENT: "ok", "same": "ok", "later": "not reached"}
    timed = {e.key for e in report.entries if e.medians_ms}
    assert timed == {PARENT, "same"}  # the first round's floor: the parent and keep configs, timed once


def test_the_screen_holds_its_devices_lease(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # its inputs and configs are device memory: an evaluation that runs out of memory beside a screen
    # must see a neighbour (egg/evaluate/device_lease.py), so the screen registers as a holder
    locks = tmp_path / "locks"
    monkeypatch.setenv("EGG_LOCK_DIR", str(locks))
    path = problem(tmp_path, "affine", ELEMENTWISE, "[torch.randn(1024)]")
    report = screen(path, {PARENT: _parent(path, 1024).source}, keep=1, seconds=30, device="cpu")
    assert report.error is None, report.error
    assert int((locks / "cpu.lease.ticket").read_text().strip()) == 1
    assert not any((locks / "cpu.lease.holders").iterdir())  # and let go of it


_RUNS_OUT_BESIDE_A_NEIGHBOUR = """

_plain_forward = ModelNew.forward


def _forward(self, *args):
    import os

    if os.path.exists("{held}"):  # "another process's memory" is there: out of memory
        open("{failed}", "w").close()
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 6.00 GiB")
    return _plain_forward(self, *args)


ModelNew.forward = _forward
"""


def _neighbour(lease_dir: Path, held: Path, failed: Path, released: list[bool], linger_s: float = 0.0):
    """Another EGG process's evaluation: holds the device's lease (shared) and "its memory" (the
    ``held`` file) until the screen's config has run out of memory, then lets both go."""
    import threading

    from egg.evaluate import device_lease

    ready = threading.Event()

    def hold() -> None:
        with device_lease.hold(device_lease.lease_path(torch.device("cpu")), alone=False):
            held.write_text("x")
            ready.set()
            deadline = time.monotonic() + 120
            while not failed.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(linger_s)
            held.unlink()
        released.append(True)

    thread = threading.Thread(target=hold)
    thread.start()
    assert ready.wait(30)
    return thread


def test_a_screen_that_ran_out_of_memory_beside_another_process_screens_again_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EGG_LOCK_DIR", str(tmp_path / "locks"))
    path = problem(tmp_path, "affine", ELEMENTWISE, "[torch.randn(1024)]")
    held, failed, released = tmp_path / "held", tmp_path / "failed", []
    hungry = _parent(path, 512).source + _RUNS_OUT_BESIDE_A_NEIGHBOUR.format(held=held, failed=failed)
    thread = _neighbour(tmp_path / "locks", held, failed, released)
    report = screen(path, {PARENT: _parent(path, 1024).source, "hungry": hungry}, keep=1, seconds=30, device="cpu")
    thread.join(60)
    assert failed.exists() and released  # the first screen did run out, beside the neighbour
    assert report.error is None, report.error
    assert report.entry("hungry").status == "ok" and report.entry("hungry").medians_ms, report.entries
    assert any(n.startswith("screened again with the device to itself") for n in report.notes), report.notes
    assert "screened again" in report.summary()


def test_a_screen_killed_while_waiting_to_screen_again_keeps_its_first_screen(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import agents.expert.screen as screen_module

    monkeypatch.setenv("EGG_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setattr(screen_module, "STARTUP_GRACE_S", 25.0)  # the caller's deadline: 10 + 25 s
    path = problem(tmp_path, "affine", ELEMENTWISE, "[torch.randn(1024)]")
    held, failed, released = tmp_path / "held", tmp_path / "failed", []
    hungry = _parent(path, 512).source + _RUNS_OUT_BESIDE_A_NEIGHBOUR.format(held=held, failed=failed)
    thread = _neighbour(tmp_path / "locks", held, failed, released, linger_s=45.0)  # past the deadline
    report = screen(path, {PARENT: _parent(path, 1024).source, "hungry": hungry}, keep=1, seconds=10, device="cpu")
    assert not released  # the neighbour still held the device when the caller gave up
    thread.join(90)
    assert report.error is None, report.error
    assert report.entry("hungry").status == "error" and report.entry(PARENT).medians_ms
    assert any("while waiting to screen again: this is its first screen" in n for n in report.notes), report.notes


def test_a_screen_that_ran_out_of_memory_with_the_device_to_itself_is_not_repeated(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EGG_LOCK_DIR", str(tmp_path / "locks"))
    path = problem(tmp_path, "affine", ELEMENTWISE, "[torch.randn(1024)]")
    held = tmp_path / "held"
    held.write_text("x")  # the config always runs out; no other process holds the device
    hungry = _parent(path, 512).source + _RUNS_OUT_BESIDE_A_NEIGHBOUR.format(held=held, failed=tmp_path / "failed")
    report = screen(path, {PARENT: _parent(path, 1024).source, "hungry": hungry}, keep=1, seconds=30, device="cpu")
    assert report.entry("hungry").status == "error" and "out of memory" in report.entry("hungry").detail
    assert report.notes == []


def test_screen_failure_is_reported_not_raised(tmp_path: Path) -> None:
    report = screen(tmp_path / "no_such_problem.py", {PARENT: "x = 1\n"}, device="cpu", seconds=5)
    assert report.error is not None and "exited with" in report.error


@pytest.mark.slow
def test_tuner_proposes_configs_the_screen_found_faster(tmp_path: Path) -> None:
    # 65536 elements: a parent with 256-element blocks runs 256 programs in the interpreter, the
    # tiling moves 16-128; the interpreter pays per program, so the screen's ranking is not close.
    path = problem(tmp_path, "affine", ELEMENTWISE, "[torch.randn(65536)]")
    parent = _parent(path, 256)
    task = AgentTask(problem_path=str(path), problem_source=path.read_text(), problem_description="",
                     stage=Stage.HARDWARE_TUNING, focus=Focus.TILING, backend="triton", parent=parent,
                     round=1, agent_name="expert-tiling")
    tuner = ExpertTuner(Focus.TILING, device="cpu", measure=True)
    drafts = tuner.propose(task)
    assert drafts, tuner.last_errors
    assert len(drafts) <= 2
    for d in drafts:
        config = read_config(d.source)
        assert config is not None
        assert next(iter(config.by_kernel().values()))["XBLOCK"] > 256
        assert any("screened" in n and "against the parent's" in n for n in d.notes), d.notes
    # the same parent again: every screened config is known, nothing is re-screened
    assert tuner.propose(task) == [] and "no tiling parameter" in tuner.last_errors[0]


def test_a_pack_turns_the_screen_off(tmp_path: Path) -> None:
    """``tiling/screen-configs: 0`` (benchmarks/packs/no_screen, the A/B's other arm): the tuner that
    would measure proposes in the packs' order, and the draft says the config is unmeasured."""
    from agents.expert.choices import decisions_for
    from egg.device import default_facts
    from principles import load_packs

    path = problem(tmp_path, "affine", ELEMENTWISE, "[torch.randn(4096)]")
    pack = Path(__file__).resolve().parents[3] / "benchmarks" / "packs" / "no_screen"
    decisions = decisions_for(path, load_packs([pack], entry_points=False), default_facts())
    assert decisions.constants["tiling/screen-configs"].decided_by == "no-screen/heuristic-configs-only"
    task = AgentTask(problem_path=str(path), problem_source=path.read_text(), problem_description="",
                     stage=Stage.HARDWARE_TUNING, focus=Focus.TILING, backend="triton", parent=_parent(path, 256),
                     round=1, agent_name="expert-tiling", decisions=decisions)
    (draft,) = ExpertTuner(Focus.TILING, device="cpu", measure=True).propose(task)
    assert not any("screened" in n for n in draft.notes) and any("not measured" in n for n in draft.notes)


@pytest.mark.gpu
def test_tuner_screens_a_gemm_on_the_gpu_and_the_judge_accepts_its_picks(tmp_path: Path) -> None:
    """Real Triton on the GPU: a bf16 GEMM whose parent has 32 x 32 tiles; the tiling tuner screens
    its configs (builds, gross-error checks, halving under the GPU lock) and every config it proposes
    is accepted by the judge. What the screen measured is in the notes; how much faster the judge
    finds the picks is a benchmark's question (BENCHMARKS.md), not this test's."""
    from egg.evaluate.harness import EvalOptions, Harness

    path = problem(tmp_path, "gemm", "return torch.mm(a, b)",
                   "[torch.randn(4096, 4096, dtype=torch.bfloat16), torch.randn(4096, 4096, dtype=torch.bfloat16)]",
                   header="# args: a, b")
    program = program_for(str(path))
    variant = next(v for v in program.variants if v.id.startswith("triton-matmul"))
    kernel = next(k for k in variant.program.kernels if k.matmul is not None).name
    c = render(program, variant, "cuda", {kernel: {"BLOCK_M": 32, "BLOCK_N": 32}})
    parent = Draft(agent="expert-designer", stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, source=c.source,
                   structure=c.structure)
    task = AgentTask(problem_path=str(path), problem_source=path.read_text(), problem_description="",
                     stage=Stage.HARDWARE_TUNING, focus=Focus.TILING, backend="triton", parent=parent,
                     round=1, agent_name="expert-tiling")
    tuner = ExpertTuner(Focus.TILING, device="cuda")
    drafts = tuner.propose(task)
    assert drafts, tuner.last_errors
    with Harness(device="cuda") as h:
        for i, d in enumerate(drafts):
            assert any("screened" in n for n in d.notes), d.notes
            where = tmp_path / f"pick{i}"
            where.mkdir()
            (where / "candidate.py").write_text(d.source)
            verdict = h.evaluate(path, where / "candidate.py", EvalOptions(device="cuda", timeout_s=600), where)
            assert verdict.accepted, (d.structure, verdict.stage_failed, verdict.reasons)
