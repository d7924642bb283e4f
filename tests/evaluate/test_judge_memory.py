"""What the judge holds in memory: superseded buffers are released, and a problem whose judge
peaked above its share of the device runs alone (the rule the harness applies after each
evaluation on a GPU; on the CPU no peak is measured, so the rule never fires)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from egg.evaluate import EvalOptions, Harness
from egg.evaluate.buffers import Arena, share_tree
from egg.evaluate.judge_slots import heavy_reason

FIXTURES = Path(__file__).parents[1] / "fixtures"
GiB = 2**30


def test_a_released_set_leaves_the_arena_and_its_file_goes():
    arena = Arena(torch.device("cpu"), "file")
    try:
        _, old = share_tree([torch.zeros(1000), torch.zeros(10)], arena)
        _, new = share_tree([torch.zeros(1000), torch.zeros(10)], arena)
        assert arena.live_bytes() == 2 * 1010 * 4
        arena.release(old)
        assert arena.live_bytes() == 1010 * 4
        assert all(not Path(b.spec.path).exists() for b in old)
        assert all(Path(b.spec.path).exists() for b in new)
    finally:
        arena.close()


@pytest.mark.parametrize(
    ("peak_gib", "judges", "heavy"),
    [
        (30, 2, False),  # under 141 / 4 = 35 GiB: two judges and their runners fit
        (40, 2, True),  # over it: one KernelBench level-1 judge of 2026-12-02 held 51-85 GB
        (40, 1, False),  # a judge alone on its device has nobody to run out of memory with
        (20, 4, True),  # four judges share 141 GiB: 17.6 GiB each
    ],
)
def test_a_judge_over_its_share_of_the_device_sends_its_problem_to_run_alone(peak_gib, judges, heavy):
    why = heavy_reason(peak_gib * GiB, 141 * GiB, judges)
    assert (why is not None) == heavy
    if heavy:
        assert f"peaked at {peak_gib:.1f} GiB of the device's 141 GiB" in why


def test_no_peak_no_rule():
    assert heavy_reason(None, None, 2) is None


def test_a_cpu_verdict_reports_no_device_peak_and_no_alone_note(tmp_path):
    with Harness(device="cpu", workers=2) as harness:
        v = harness.evaluate(FIXTURES / "problems" / "add_relu.py", FIXTURES / "candidates" / "add_relu_triton.py",
                             EvalOptions(device="cpu", seed=3), tmp_path / "v")
    assert v.accepted, v.reasons
    assert v.peak_device_bytes is None and v.phase_peak_bytes == {}
    assert not any("alone" in n for n in v.notes), v.notes


def test_a_heavy_problem_is_sent_alone_once_and_only_where_judges_share_a_device():
    from types import SimpleNamespace

    from egg.evaluate.judge_slots import JudgeSlots

    judges = [SimpleNamespace(label="cuda:0"), SimpleNamespace(label="cuda:0"), SimpleNamespace(label="cuda:1")]
    slots = JudgeSlots(judges)  # type: ignore[arg-type]
    assert slots.note_peak("light", "cuda:0", 30 * GiB, 141 * GiB) is None
    assert slots.alone_reason("light") is None
    why = slots.note_peak("heavy", "cuda:0", 40 * GiB, 141 * GiB)
    assert why and "over the 35 GiB share of one of its 2 judges" in why
    assert slots.alone_reason("heavy") == f"an earlier evaluation of this problem: {why}"
    assert slots.note_peak("heavy", "cuda:0", 60 * GiB, 141 * GiB) is None  # noted once
    assert slots.note_peak("solo", "cuda:1", 100 * GiB, 141 * GiB) is None  # a judge alone on its device
    slots.send_alone("solo", "ran out of memory beside another one", device_wide=True)
    assert slots.alone_reason("solo") == "ran out of memory beside another one"
    # only an out-of-memory error beside another evaluation keeps other EGG processes off the device;
    # a heavy problem is kept from this harness's other judges only (throughput: its share is a judge's)
    assert slots.device_wide("solo") and not slots.device_wide("heavy")
