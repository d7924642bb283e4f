"""`egg optimize PROBLEM --llm replay:FILE --device cpu --out DIR`, end to end in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
GOOD = (FIXTURES / "candidates" / "add_relu_triton.py").read_text()
WRONG = (FIXTURES / "candidates" / "harness" / "wrong_values.py").read_text()


def egg(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "egg", *args], capture_output=True, text=True, timeout=timeout)


def test_replay_run_finishes_with_an_accepted_best_and_lists_rejections(tmp_path):
    replay = tmp_path / "answers.jsonl"
    lines = [
        {"response": "I would fuse the add and the relu.", "note": "malformed: no code"},
        {"response": "Still thinking.", "model": "x"},
        {"response": "No code again."},
        {"response": f"```python\n{WRONG}\n```\nSTRUCTURE: add only"},
        {"response": f"```python\n{GOOD}\n```\nSTRUCTURE: fused add+relu"},
    ]
    replay.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    out = tmp_path / "run"
    done = egg("optimize", str(PROBLEM), "--llm", f"replay:{replay}", "--device", "cpu", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    assert report["best"] is not None and report["best"]["accepted"]
    assert (out / "best.py").read_text() == (out / "candidates" / report["best"]["id"] / "candidate.py").read_text()
    reasons = [r for item in report["rejected"] for r in item["reasons"]]
    assert any("malformed answer" in r for r in reasons)  # the designer that never produced code
    assert any("outside atol" in r for r in reasons)  # the wrong kernel, with the harness's reason
    assert len((out / "transcript.jsonl").read_text().splitlines()) == len(lines)
    assert "candidates (cpu" in done.stdout and "evaluated," not in done.stdout  # a table, no progress line


def test_bad_inputs_are_one_line_errors_with_exit_2(tmp_path, capsys):
    # one fresh `python -m egg` process: its whole stderr is the one line (no import-time noise)
    missing = egg("optimize", str(tmp_path / "nope.py"), "--device", "cpu")
    assert missing.returncode == 2 and missing.stderr.strip().count("\n") == 0 and "nope.py" in missing.stderr
    assert missing.stdout == ""  # stdout is a pipe: no progress line before the error
    # the other bad inputs through the same entry point in this process (each subprocess costs
    # ~8 s of imports): exit 2, one line on stderr, nothing on stdout
    from egg.cli.main import main

    def run(*args: str) -> tuple[int, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        assert out == "" and err.strip().count("\n") == 0, (out, err)
        return code, err

    code, err = run("optimize", str(PROBLEM), "--llm", "gibberish", "--device", "cpu", "--out", str(tmp_path / "a"))
    assert code == 2 and "--llm" in err and not (tmp_path / "a").exists()
    code, err = run("optimize", str(PROBLEM), "--budget", "candidates=lots", "--device", "cpu")
    assert code == 2 and "--budget" in err
    code, err = run("optimize", "--resume", str(tmp_path))
    assert code == 2 and "nothing to resume" in err
