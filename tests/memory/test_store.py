"""The memory file: one transaction per write, nothing twice, two writers at once, JSON round trips."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from egg.errors import EggInputError
from egg.memory import TransitionMemory

from .conftest import GEMM, obs


def test_record_and_read_back(tmp_path) -> None:
    memory = TransitionMemory(tmp_path / "m.sqlite")
    assert memory.record([obs(1), obs(2, context=GEMM, accepted=False, stage_failed="correctness")]) == 2
    back = memory.observations()
    assert [o.candidate_id for o in back] == ["c1", "c2"]
    assert back[1].context == GEMM and back[1].accepted is False and back[1].gain is None
    assert back[0] == obs(1).model_copy(update={"created": back[0].created})


def test_the_same_candidate_is_recorded_once(tmp_path) -> None:
    memory = TransitionMemory(tmp_path / "m.sqlite")
    memory.record([obs(1), obs(2)])
    assert memory.record([obs(1), obs(3)]) == 1  # a resumed run re-sends c1: only c3 is new
    assert memory.count() == 3


def test_export_import_round_trip(tmp_path) -> None:
    mine = TransitionMemory(tmp_path / "mine.sqlite")
    mine.record([obs(i, gain=1.0 + i / 10) for i in range(5)] + [obs(9, accepted=False, stage_failed="timeout")])
    exported = tmp_path / "team.json"
    exported.write_text(json.dumps(mine.export()))
    theirs = TransitionMemory(tmp_path / "theirs.sqlite")
    theirs.record([obs(0, run="run-b")])
    assert theirs.import_file(exported) == (6, 0)
    assert theirs.import_file(exported) == (0, 6)  # importing twice adds nothing
    assert {(o.run_id, o.candidate_id) for o in theirs.observations()} == {
        ("run-b", "c0"), *(("run-a", f"c{i}") for i in (0, 1, 2, 3, 4, 9))}
    again = {o.candidate_id: o for o in theirs.observations() if o.run_id == "run-a"}
    assert [o.model_dump() for o in mine.observations()] == [again[o.candidate_id].model_dump()
                                                             for o in mine.observations()]


@pytest.mark.parametrize(("content", "expected"), [
    ("not json", "cannot read a memory export"),
    ('{"format": "other"}', 'not an EGG memory export (expected "format": "egg-memory")'),
    ('{"format": "egg-memory", "version": 9, "observations": []}', "version: memory export version 9 is not 1"),
    ('{"format": "egg-memory", "version": 1, "observations": [{"run_id": "r"}]}', "observations.0.candidate_id:"),
])
def test_bad_import_files_are_one_line(tmp_path, content, expected) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(EggInputError) as info:
        TransitionMemory(tmp_path / "m.sqlite").import_file(path)
    assert str(path) in str(info.value) and expected in str(info.value) and "\n" not in str(info.value)


def test_clear(tmp_path) -> None:
    memory = TransitionMemory(tmp_path / "m.sqlite")
    memory.record([obs(1), obs(2)])
    assert memory.clear() == 2 and memory.count() == 0


def test_an_unusable_path_is_one_line(tmp_path) -> None:
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(EggInputError, match="cannot open the transition memory"):
        TransitionMemory(tmp_path / "dir.sqlite")


WRITER = textwrap.dedent("""
    import sys
    sys.path[:0] = [{tests!r}]
    from memory.conftest import obs
    from egg.memory import TransitionMemory
    memory = TransitionMemory(sys.argv[1])
    run = sys.argv[2]
    for i in range(100):
        # one transaction per candidate, as the graph writes; c0..c49 of "shared" are sent by both
        memory.record([obs(i, run=run), obs(i % 50, run="shared")])
    print("done")
""")


def test_two_writer_processes_stay_consistent(tmp_path) -> None:
    path = tmp_path / "shared.sqlite"
    TransitionMemory(path)
    code = WRITER.format(tests=str(Path(__file__).resolve().parents[1]))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    writers = [subprocess.Popen([sys.executable, "-c", code, str(path), f"run-{n}"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in (1, 2)]
    results = [w.communicate(timeout=300) for w in writers]
    for writer, (out, err) in zip(writers, results):
        assert writer.returncode == 0, err
        assert out.strip() == "done"
    memory = TransitionMemory(path)
    rows = memory.observations()
    assert memory.count() == 100 + 100 + 50
    assert sorted({o.run_id for o in rows}) == ["run-1", "run-2", "shared"]
    assert all(sum(1 for o in rows if o.run_id == r) == 100 for r in ("run-1", "run-2"))
