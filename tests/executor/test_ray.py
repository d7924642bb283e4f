"""The Ray executor on CPU, against a cluster started the way users start one (``ray start --head``
in a process of its own), several actors, Triton interpreter; actors killed for real mid-evaluation."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'egg-kernels[ray]')")

from egg.evaluate import Harness, Verdict  # noqa: E402
from egg.executor import ExecutorSpec, open_executor  # noqa: E402
from egg.executor.spread import map_ordered  # noqa: E402

from .conftest import HONEST, OPTIONS, PROBLEM, SLOW, WRONG, same_verdict  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    """``ray start --head --block`` with 3 CPUs in its own session; killed (the whole group) at the end."""
    port = _free_port()
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}  # a throwaway local cluster: no token to hand around
    ray_cli = Path(sys.executable).with_name("ray")
    proc = subprocess.Popen([str(ray_cli), "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
                             "--port", str(port), "--num-cpus", "3", "--include-dashboard=false",
                             "--disable-usage-stats"], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    saved = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"ray start --head did not come up (exit code {proc.poll()})")
            time.sleep(0.5)
        yield address
    finally:
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=wait)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
        if saved is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = saved


@pytest.fixture(scope="module")
def executor(cluster):
    with open_executor(ExecutorSpec(kind="ray", ray_address=cluster, workers=2), "cpu") as ex:
        yield ex


def kill_busy_actor(executor, not_pid: int | None = None, timeout: float = 120.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for worker in executor.workers():
            if worker["busy"] and worker["pid"] != not_pid:
                time.sleep(1.0)  # the call is in flight: the actor's judge is starting or the slow build runs
                os.kill(int(worker["pid"]), signal.SIGKILL)
                return int(worker["pid"])
        time.sleep(0.05)
    raise AssertionError("no actor took the job")


def test_ray_actors_give_the_local_verdicts(executor, tmp_path):
    assert executor.kind == "ray" and executor.device == "cpu" and executor.capacity == 2
    assert all(w["device"].startswith("ray node ") and " pid " in w["device"] for w in executor.workers())
    verdicts = map_ordered(lambda c: executor.evaluate(PROBLEM, c, OPTIONS, tmp_path / c.stem), [HONEST, WRONG], 2)
    with Harness("cpu") as local:
        expected = [local.evaluate(PROBLEM, c, OPTIONS, tmp_path / f"local-{c.stem}") for c in (HONEST, WRONG)]
    for got, want in zip(verdicts, expected):
        same_verdict(got, want)
        assert got.worker.startswith("ray node ") and "(local cpu, judge pid " in got.worker
    honest = verdicts[0]
    assert honest.accepted and honest.archive_dir == str(tmp_path / HONEST.stem)
    archive = tmp_path / HONEST.stem
    for name in ("candidate.py", "problem.py", "worker.log", "verdict.json"):
        assert (archive / name).is_file(), name
    assert Verdict.model_validate_json((archive / "verdict.json").read_text()).candidate == str(HONEST)
    baseline = executor.profile_reference(PROBLEM, OPTIONS)
    assert baseline.eager_ms and baseline.problem == str(PROBLEM)


def test_actor_killed_mid_evaluation_requeues_once_then_infrastructure(executor, tmp_path):
    out: dict[str, Verdict] = {}
    run = threading.Thread(target=lambda: out.setdefault("once", executor.evaluate(PROBLEM, SLOW, OPTIONS, tmp_path / "once")))
    run.start()
    kill_busy_actor(executor)
    run.join(timeout=300)
    once = out["once"]
    assert once.accepted, once.reasons  # judged on another actor
    assert any(n.startswith("re-queued once: the Ray actor on ray node ") for n in once.notes), once.notes

    run = threading.Thread(target=lambda: out.setdefault("twice", executor.evaluate(PROBLEM, SLOW, OPTIONS, tmp_path / "twice")))
    run.start()
    first = kill_busy_actor(executor)
    kill_busy_actor(executor, not_pid=first)
    run.join(timeout=300)
    twice = out["twice"]
    assert not twice.accepted and twice.stage_failed == "infrastructure"
    assert "was lost (" in twice.reasons[0] and "it was lost twice" in twice.reasons[0]
    assert (tmp_path / "twice" / "verdict.json").is_file() and (tmp_path / "twice" / "candidate.py").is_file()
    # lost actors are replaced: the executor still evaluates
    deadline = time.monotonic() + 120
    while executor.capacity < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert executor.capacity == 2
    assert executor.evaluate(PROBLEM, WRONG, OPTIONS, tmp_path / "after").stage_failed == "correctness"
