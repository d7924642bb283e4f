"""The device lease across processes (egg/evaluate/device_lease.py): real processes, real flocks.

Each holder is a separate Python process that holds the lease until a file tells it to let go and
then writes what it learned (overlapped or not, seconds waited) to a file of its own."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from egg.evaluate import device_lease

_HOLDER = '''
import json, sys, time
from pathlib import Path
from egg.evaluate import device_lease
lease, alone, folder, name = Path(sys.argv[1]), sys.argv[2] == "alone", Path(sys.argv[3]), sys.argv[4]
(folder / f"{name}.asking").touch()  # imports done: the request follows at once
with device_lease.hold(lease, alone) as held:
    (folder / f"{name}.holding").touch()
    while not (folder / f"{name}.release").exists():
        time.sleep(0.02)
(folder / f"{name}.json").write_text(json.dumps({"overlapped": held.overlapped, "waited_s": held.waited_s}))
'''


def _start(tmp_path: Path, name: str, alone: bool = False) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", _HOLDER, str(tmp_path / "dev.lease"),
                             "alone" if alone else "shared", str(tmp_path), name])


def _holding(tmp_path: Path, name: str, alone: bool = False) -> subprocess.Popen[bytes]:
    """A holder started and holding the lease."""
    proc = _start(tmp_path, name, alone)
    assert _wait_for(tmp_path / f"{name}.holding")
    return proc


def _wait_for(path: Path, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return path.exists()


def _release(tmp_path: Path, proc: subprocess.Popen[bytes], name: str) -> dict[str, float | bool]:
    (tmp_path / f"{name}.release").touch()
    assert proc.wait(timeout=60) == 0
    return json.loads((tmp_path / f"{name}.json").read_text())


def test_two_processes_holding_the_device_at_once_both_learn_it(tmp_path):
    first = _holding(tmp_path, "first")
    second = _holding(tmp_path, "second")
    # the earlier holder learns it from the ticket (the later one registered while it held) ...
    assert _release(tmp_path, first, "first")["overlapped"] is True
    # ... the later one from the register (the earlier one was there when it came)
    assert _release(tmp_path, second, "second")["overlapped"] is True


def test_one_holder_after_another_did_not_overlap(tmp_path):
    for name in ("a", "b"):
        proc = _holding(tmp_path, name)
        assert _release(tmp_path, proc, name)["overlapped"] is False


def test_a_holder_that_came_and_went_meanwhile_counts(tmp_path):
    long = _holding(tmp_path, "long")
    short = _holding(tmp_path, "short")
    assert _release(tmp_path, short, "short")["overlapped"] is True
    assert _release(tmp_path, long, "long")["overlapped"] is True


def test_alone_waits_for_other_processes_and_keeps_new_ones_out(tmp_path):
    shared = _holding(tmp_path, "shared")
    alone = _start(tmp_path, "alone", alone=True)
    assert _wait_for(tmp_path / "alone.asking")
    time.sleep(1.5)
    assert not (tmp_path / "alone.holding").exists()  # it waits for the shared holder
    late = _start(tmp_path, "late")  # arrives after the alone request: queues behind it
    assert _wait_for(tmp_path / "late.asking")
    time.sleep(1.0)
    assert not (tmp_path / "late.holding").exists()
    _release(tmp_path, shared, "shared")
    assert _wait_for(tmp_path / "alone.holding")
    time.sleep(0.5)
    assert not (tmp_path / "late.holding").exists()  # nothing shares the device with it
    got = _release(tmp_path, alone, "alone")
    assert got["overlapped"] is False and got["waited_s"] >= 1.0
    assert _wait_for(tmp_path / "late.holding")
    assert _release(tmp_path, late, "late")["overlapped"] is False
    assert device_lease.wait_note(device_lease.Held(True, waited_s=float(got["waited_s"]))).startswith("waited")


def test_a_holder_killed_mid_evaluation_frees_the_device_and_leaves_no_ghost(tmp_path):
    doomed = _holding(tmp_path, "doomed")
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=30)
    # its flock died with it (an alone request gets the device) and its register entry does not
    # make the next holder think it shared the device
    after = _start(tmp_path, "after", alone=True)
    assert _wait_for(tmp_path / "after.holding", timeout=30)
    assert _release(tmp_path, after, "after")["overlapped"] is False


@pytest.mark.parametrize("alone", [False, True])
def test_no_lease_file_no_lease(alone):
    with device_lease.hold(None, alone) as held:
        pass
    assert held.overlapped is False and held.waited_s == 0.0
