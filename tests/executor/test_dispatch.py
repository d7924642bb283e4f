"""What the executors are for: `egg optimize` spreads a round's candidates over several judges, and
`egg kernelbench` spreads samples over them, with the serial results; report.html beside suite.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "rms_norm.py"


def egg(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "egg", *args], capture_output=True, text=True, timeout=timeout)


def test_optimize_spreads_a_rounds_candidates_over_the_workers(tmp_path):
    out = tmp_path / "run"
    done = egg("optimize", str(PROBLEM), "--llm", "none", "--device", "cpu", "--workers", "2", "--shapes", "default",
               "--trials", "2", "--no-memory", "--budget", "candidates=4,rounds=1,stage2_rounds=1,top_k=1", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    assert report["best"] is not None and report["best"]["accepted"]
    verdicts = [json.loads(p.read_text()) for p in sorted((out / "candidates").glob("*/verdict.json"))]
    assert len(verdicts) >= 2
    judges = {v["worker"] for v in verdicts}
    assert all(w.startswith("local cpu, judge pid ") for w in judges)
    assert len(judges) == 2, judges  # the candidates ran on both judges


def test_bad_executor_flags_are_one_line_errors(tmp_path, capsys):
    # in-process through the CLI's entry point (a fresh process's clean stderr is checked by
    # tests/cli/test_optimize_cmd.py's bad-input test): each subprocess would cost ~8 s of imports
    from egg.cli.main import main

    for extra, needle in ((["--workers", "0"], "--workers: expected a number >= 1"),
                          (["--ray-address", "127.0.0.1:1"], "--ray-address needs --executor ray")):
        try:
            code = main(["optimize", str(PROBLEM), "--device", "cpu", "--out", str(tmp_path / "x"), *extra])
        except SystemExit as exit_:  # argparse's errors exit, as the command line does
            code = exit_.code
        stderr = capsys.readouterr().err
        assert code == 2 and stderr.strip().splitlines() == [f"egg: error: {stderr.split('egg: error: ')[1].strip()}"]
        assert needle in stderr
