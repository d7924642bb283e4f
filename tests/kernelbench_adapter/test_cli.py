"""`egg kernelbench`: one-line errors (exit 2) and the optimize mode driven by a replay file."""

from __future__ import annotations

import json

import pytest

import egg.cli.main as cli_main

from .conftest import RELU_TRITON


@pytest.fixture(autouse=True)
def kernelbench_command(monkeypatch):
    if "kernelbench" not in cli_main.COMMANDS:
        monkeypatch.setattr(cli_main, "COMMANDS", (*cli_main.COMMANDS, "kernelbench"))


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--ids", "1-x"], "--ids: expected an id or a range"),
        (["--ids", "3-1"], "is not a range"),
        (["--ids", "2,40-41"], "no level1 problem with id 40, 41"),
        (["--level", "7"], "no level7 directory"),
        (["--level", "0"], "expected a level >= 1"),
        (["--limit", "0"], "--limit"),
        (["--resume"], "--resume continues a suite: give its --out DIR"),
        (["--candidates", "/no/such/gens"], "--candidates /no/such/gens: no such directory"),
        (["--budget", "bogus=1"], "--budget"),
        (["--llm", "nosuchprovider:x"], "--llm nosuchprovider:x"),
    ],
)
def test_bad_input_is_a_one_line_error(kb_root, tmp_path, capsys, extra, needle):
    base = ["kernelbench", "--root", str(kb_root)]
    base += [] if "--level" in extra else ["--level", "1"]
    base += [] if "--resume" in extra else ["--out", str(tmp_path / "out")]
    argv = [*base, *extra]
    assert cli_main.main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert len(err.strip().splitlines()) == 1 and err.startswith("egg")
    assert needle in err
    assert captured.out == ""  # no progress bar was started
    assert not (tmp_path / "out").exists()  # nothing was created


def test_missing_root_is_a_one_line_error(tmp_path, capsys):
    assert cli_main.main(["kernelbench", "--root", str(tmp_path / "nowhere"), "--level", "1"]) == 2
    err = capsys.readouterr().err
    assert err == f"egg: error: --root {tmp_path / 'nowhere'}: no such directory (expected a KernelBench checkout)\n"


def test_optimize_mode_from_the_command_line(kb_root, tmp_path, capsys):
    replay = tmp_path / "answers.jsonl"
    replay.write_text(json.dumps({"response": f"STRUCTURE: one kernel\n```python\n{RELU_TRITON}\n```"}) + "\n")
    out = tmp_path / "out"
    argv = ["kernelbench", "--root", str(kb_root), "--level", "1", "--ids", "1", "--llm", f"replay:{replay}",
            "--device", "cpu", "--budget", "designers=1,rounds=1,stage2_rounds=0", "--no-expert-seeds",
            "--out", str(out)]
    assert cli_main.main(argv) == 0
    shown = capsys.readouterr().out
    assert "1_ReLU.py" in shown and "fast_p" in shown
    suite = json.loads((out / "suite.json").read_text())
    assert suite["mode"] == "optimize" and suite["metrics"]["correct"] == 1
    assert suite["settings"]["llm"] == f"replay:{replay}" and suite["settings"]["budget"]["designers"] == 1
    assert (out / "level1" / "1_ReLU" / "report.json").is_file()
    # a second run into the same OUT without --resume is refused; with it, nothing runs again
    assert cli_main.main(argv) == 2
    assert "already exists" in capsys.readouterr().err
    assert cli_main.main([*argv, "--resume"]) == 0
