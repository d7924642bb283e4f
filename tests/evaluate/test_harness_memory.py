"""Out of device memory beside another evaluation: re-run alone, never blamed on the candidate.

Two judges share a device (``workers=2``). The memory a neighbour holds is simulated with a file
lock in /dev/shm: the "hog" candidate holds it for its runner's whole life, as a judge holds a big
problem's buffers, and waits at its first call until the victim has failed. The "victim" raises
PyTorch's out-of-memory error while the lock is held, and computes honestly otherwise. The static
checks are off for these test doubles (file locks); what is tested is the harness's scheduling.
A second harness stands for a second ``egg`` process: it shares nothing with the first but the
device's lease (egg/evaluate/device_lease.py), in a lock folder of this module's own."""

from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path

import pytest

from egg.evaluate import EvalOptions, Harness, Verdict
from egg.evaluate.rejection import OWN_OUT_OF_MEMORY

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
HONEST = FIXTURES / "candidates" / "add_relu_triton.py"
SHM = Path("/dev/shm")

_PRELUDE = '''import fcntl
import os
import time

_TAG = "{tag}"


def _neighbour_holds_memory() -> bool:
    try:
        fd = os.open(f"/dev/shm/{{_TAG}}-hog", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
'''
_HOG = '''
_HOLD = open(f"/dev/shm/{_TAG}-hog", "w")  # "its memory": held until this runner exits
fcntl.flock(_HOLD, fcntl.LOCK_EX)
_FIRST = [True]
'''
_HOG_CALL = '''        if _FIRST[0]:
            _FIRST[0] = False
            deadline = time.monotonic() + 60
            while not os.path.exists(f"/dev/shm/{_TAG}-failed") and time.monotonic() < deadline:
                time.sleep(0.05)
        x = x.contiguous()
'''
_OOM_CALL = '''        if {condition}:
            open(f"/dev/shm/{{_TAG}}-failed", "w").close()
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        x = x.contiguous()
'''


def _candidate(tmp_path: Path, name: str, tag: str, call: str, extra: str = "") -> Path:
    source = HONEST.read_text()
    source = source.replace("import torch\n", _PRELUDE.format(tag=tag) + extra + "import torch\n", 1)
    source = source.replace("        x = x.contiguous()\n", call, 1)
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return path


@pytest.fixture(scope="module")
def lock_dir(tmp_path_factory):
    """This module's own lock folder: evaluations of other test workers do not share its device."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EGG_LOCK_DIR", str(tmp_path_factory.mktemp("locks")))
        yield


@pytest.fixture(scope="module")
def harness(lock_dir):
    with Harness(device="cpu", workers=2) as h:
        yield h


@pytest.fixture(scope="module")
def other_process(lock_dir):
    """Another EGG run on the same device: its own harness, judges and slots."""
    with Harness(device="cpu", workers=1) as h:
        yield h


@pytest.fixture
def tag():
    tag = f"egg-test-{secrets.token_hex(4)}"
    yield tag
    for f in SHM.glob(f"{tag}-*"):
        f.unlink()


def _eval(harness: Harness, problem: Path, candidate: Path, tmp_path: Path) -> Verdict:
    options = EvalOptions(device="cpu", timeout_s=120, seed=1234, shapes="default", trials=2, timing_runs=3,
                          warmup_runs=1, static_checks=False)
    return harness.evaluate(problem, candidate, options, tmp_path / candidate.stem)


def _beside_hog(harness: Harness, problem: Path, other: Path, tmp_path: Path, tag: str,
                hog_harness: Harness | None = None) -> tuple[Verdict, Verdict]:
    """Evaluate ``other`` while the hog (in ``hog_harness``, default the same) holds its neighbour's memory."""
    hog = _candidate(tmp_path, "hog", tag, _HOG_CALL, _HOG)
    got: dict[str, Verdict] = {}
    hog_harness = hog_harness or harness
    thread = threading.Thread(target=lambda: got.setdefault("hog", _eval(hog_harness, problem, hog, tmp_path)))
    thread.start()
    for _ in range(1200):  # the hog's runner has imported it: its lock is held
        if (SHM / f"{tag}-hog").exists():
            break
        thread.join(timeout=0.05)
    verdict = _eval(harness, problem, other, tmp_path)
    thread.join(timeout=180)
    return got["hog"], verdict


def test_out_of_memory_beside_another_evaluation_is_re_run_alone(harness, tmp_path, tag):
    victim = _candidate(tmp_path, "victim", tag, _OOM_CALL.format(condition="_neighbour_holds_memory()"))
    hog, v = _beside_hog(harness, PROBLEM, victim, tmp_path, tag)
    assert hog.accepted, hog.reasons
    assert (SHM / f"{tag}-failed").exists()  # the first attempt did run out of memory
    assert v.accepted, v.reasons
    assert any(n.startswith("re-run alone on its device with a new seed") for n in v.notes), v.notes
    assert v.worker and v.worker.endswith(", alone") and v.seed != 1234
    # the problem's later candidates run alone from the start
    later = _eval(harness, PROBLEM, HONEST, tmp_path / "later")
    assert later.accepted and any(n.startswith("run alone on its device") for n in later.notes), later.notes


def test_a_candidate_that_runs_out_of_memory_alone_too_is_rejected(harness, tmp_path, tag):
    # the lie an LLM might try: claim out of memory to get a second try. It gets one, alone, and
    # is judged on it (another problem file: the first test's problem now always runs alone).
    problem = tmp_path / "add_relu_copy.py"
    problem.write_text(PROBLEM.read_text() + "\n# a copy\n")
    liar = _candidate(tmp_path, "liar", tag, _OOM_CALL.format(condition="True"))
    hog, v = _beside_hog(harness, problem, liar, tmp_path, tag)
    assert hog.accepted, hog.reasons
    assert not v.accepted and v.stage_failed == "correctness"
    assert "out of memory" in " ".join(v.reasons)
    assert any(n.startswith("re-run alone") for n in v.notes), v.notes
    assert any(n.startswith(OWN_OUT_OF_MEMORY) for n in v.notes), v.notes  # now it is the candidate's own


def test_out_of_memory_with_the_device_to_itself_is_not_re_run(harness, tmp_path, tag):
    lone = _candidate(tmp_path, "lone", tag, _OOM_CALL.format(condition="True"))
    problem = tmp_path / "add_relu_lone.py"
    problem.write_text(PROBLEM.read_text() + "\n# alone\n")
    v = _eval(harness, problem, lone, tmp_path)
    assert not v.accepted and "out of memory" in " ".join(v.reasons)
    assert not any("alone" in n for n in v.notes), v.notes
    assert any(n.startswith(OWN_OUT_OF_MEMORY) for n in v.notes), v.notes


def test_out_of_memory_beside_another_egg_process_is_re_run_alone(harness, other_process, tmp_path, tag):
    # the sweep of 2026-12-04: two `egg kernelbench` processes on one GPU, 7 of 20 problems lost
    # to out-of-memory errors the neighbour caused. This harness's own slots see nothing here.
    problem = tmp_path / "add_relu_two_processes.py"
    problem.write_text(PROBLEM.read_text() + "\n# two processes\n")
    victim = _candidate(tmp_path, "victim2", tag, _OOM_CALL.format(condition="_neighbour_holds_memory()"))
    hog, v = _beside_hog(harness, problem, victim, tmp_path, tag, hog_harness=other_process)
    assert hog.accepted, hog.reasons
    assert (SHM / f"{tag}-failed").exists()  # the first attempt did run out of memory
    assert v.accepted, v.reasons
    assert any(n.startswith("re-run alone on its device with a new seed") for n in v.notes), v.notes
    assert v.worker and v.worker.endswith(", alone")
    assert not any(n.startswith(OWN_OUT_OF_MEMORY) for n in v.notes), v.notes


def test_a_judge_whose_attempt_ran_out_of_memory_is_replaced(harness, tmp_path, tag):
    # the H100 sweep of 2026-12-05: judges began their re-runs alone still holding 24-28 GiB of a
    # failed attempt, and ran out of memory again; the judge now ends, and its slot starts a new one
    problem = tmp_path / "add_relu_replaced.py"
    problem.write_text(PROBLEM.read_text() + "\n# replaced\n")
    lone = _candidate(tmp_path, "lone_replaced", tag, _OOM_CALL.format(condition="True"))
    v = _eval(harness, problem, lone, tmp_path)
    assert not v.accepted and "out of memory" in " ".join(v.reasons)
    note = next((n for n in v.notes if " replaced after this attempt ran out of device memory" in n), None)
    assert note is not None, v.notes
    pid = int(note.split()[2])
    assert v.worker and v.worker.split("judge pid ")[1].split(",")[0] == str(pid)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    for name in ("after_a", "after_b"):  # both slots judge again (one of them from a new process)
        later = _eval(harness, problem, HONEST, tmp_path / name)
        assert later.accepted, later.reasons
        assert f"judge pid {pid}," not in (later.worker or "") + ","
