"""The local executor on CPU: several judges at once, and judges killed for real mid-evaluation.

A killed judge's candidate is re-queued once on a fresh judge (the verdict is the judge's and
says it was re-queued); a candidate whose judge is lost twice is an infrastructure failure,
never a rejection of the kernel; the harness goes on serving.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import pytest

from egg.evaluate import Harness, Verdict
from egg.executor import ExecutorSpec, open_executor
from egg.executor.spread import map_ordered

from .conftest import HONEST, OPTIONS, PROBLEM, SLOW, WRONG, same_verdict

def kill_busy_judge(harness: Harness, served: int, not_pid: int | None = None, timeout: float = 120.0) -> int:
    """SIGKILL the judge that has taken its ``served``-th job (a job is in flight), once it is busy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for worker in harness.workers():
            if worker["pid"] and worker["pid"] != not_pid and worker["jobs"] == served:
                time.sleep(1.0)  # inside the 4 s constructor of the slow candidate
                os.kill(int(worker["pid"]), signal.SIGKILL)
                return int(worker["pid"])
        time.sleep(0.05)
    raise AssertionError("no judge took the job")


def test_local_executor_spreads_candidates_over_workers_with_the_same_verdicts(tmp_path):
    with open_executor(ExecutorSpec(workers=1), "cpu") as serial:
        expected = [serial.evaluate(PROBLEM, c, OPTIONS, tmp_path / f"serial-{c.stem}") for c in (HONEST, WRONG)]
    with open_executor(ExecutorSpec(kind="local", workers=2), "cpu") as executor:
        assert executor.capacity == 2
        verdicts = map_ordered(lambda c: executor.evaluate(PROBLEM, c, OPTIONS, tmp_path / c.stem), [HONEST, WRONG],
                               executor.capacity)
        used = [w for w in executor.workers() if w["jobs"]]
    assert len({w["pid"] for w in used}) == 2  # both judges served: the two candidates ran side by side
    assert verdicts[0].accepted and verdicts[1].stage_failed == "correctness"
    for got, want in zip(verdicts, expected):
        same_verdict(got, want)
        assert got.worker.startswith("local cpu, judge pid ")


def test_judge_killed_mid_evaluation_requeues_the_candidate_once(tmp_path):
    with Harness("cpu", workers=2) as harness:
        out: dict[str, Verdict] = {}
        thread = threading.Thread(target=lambda: out.setdefault("v", harness.evaluate(PROBLEM, SLOW, OPTIONS, tmp_path / "slow")))
        thread.start()
        killed = kill_busy_judge(harness, served=1)
        thread.join(timeout=300)
        verdict = out["v"]
        assert verdict.accepted, verdict.reasons  # the re-queued evaluation's own verdict
        assert any(n.startswith("re-queued once: the judge process for cpu ended") for n in verdict.notes), verdict.notes
        assert all(w["pid"] != killed for w in harness.workers())
        # the harness goes on serving
        assert harness.evaluate(PROBLEM, WRONG, OPTIONS, tmp_path / "after").stage_failed == "correctness"


def test_judge_lost_twice_is_an_infrastructure_failure_not_a_rejection(tmp_path):
    with Harness("cpu", workers=1) as harness:
        out: dict[str, Verdict] = {}
        thread = threading.Thread(target=lambda: out.setdefault("v", harness.evaluate(PROBLEM, SLOW, OPTIONS, tmp_path / "slow")))
        thread.start()
        first = kill_busy_judge(harness, served=1)
        kill_busy_judge(harness, served=1, not_pid=first)  # the fresh judge that took the re-queued job
        thread.join(timeout=300)
        verdict = out["v"]
        assert not verdict.accepted and verdict.stage_failed == "infrastructure"
        assert verdict.reasons[0].startswith("infrastructure failure, not a verdict on the kernel: the judge process")
        assert "lost twice" in verdict.reasons[0]
        assert verdict.summary().startswith("not judged:")
        assert (tmp_path / "slow" / "verdict.json").is_file()


def test_bad_worker_count_is_a_one_line_input_error():
    from egg.errors import EggInputError

    with pytest.raises(EggInputError, match="--workers: expected a number >= 1"):
        Harness("cpu", workers=0)
    with pytest.raises(EggInputError, match="--ray-address needs --executor ray"):
        open_executor(ExecutorSpec(ray_address="127.0.0.1:6379"), "cpu")
