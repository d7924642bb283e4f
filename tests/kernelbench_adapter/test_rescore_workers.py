"""`egg kernelbench --candidates DIR --workers 2`: samples spread over two judges give the serial
results; report.html lies beside suite.json; a sample recorded as an infrastructure failure (no
verdict was reached) is evaluated again on --resume, the others are kept."""

from __future__ import annotations

import json

import pytest

import egg.cli.main as cli_main


@pytest.fixture(autouse=True)
def kernelbench_command(monkeypatch):
    if "kernelbench" not in cli_main.COMMANDS:
        monkeypatch.setattr(cli_main, "COMMANDS", (*cli_main.COMMANDS, "kernelbench"))


def test_rescore_over_two_workers_then_resume_redoes_infrastructure_failures(kb_root, generations, tmp_path):
    out = tmp_path / "out"
    argv = ["kernelbench", "--root", str(kb_root), "--level", "1", "--ids", "1-4", "--candidates", str(generations),
            "--device", "cpu", "--timeout", "120", "--seed", "7", "--trials", "2", "--workers", "2", "--out", str(out)]
    assert cli_main.main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    stages = {k: results[k][0]["stage_failed"] for k in results}
    assert stages == {"1": None, "2": "correctness", "3": "correctness", "4": "missing"}  # as one judge decides
    judges = {json.loads(p.read_text())["worker"] for p in (out / "level1").glob("*/sample_0/verdict.json")}
    assert len(judges) == 2, judges
    assert (out / "report.html").is_file() and "1_ReLU" in (out / "report.html").read_text()

    # a sample whose worker was lost twice has no verdict: --resume judges it; the rest are kept
    infra = out / "level1" / "1_ReLU" / "sample_0" / "kb_result.json"
    record = json.loads(infra.read_text())
    record.update(correctness=False, stage_failed="infrastructure",
                  reasons=["infrastructure failure, not a verdict on the kernel: test"])
    infra.write_text(json.dumps(record))
    kept = out / "level1" / "2_Add_and_scale" / "sample_0" / "kb_result.json"
    before = kept.stat().st_mtime_ns
    assert cli_main.main([*argv, "--resume"]) == 0
    assert json.loads(infra.read_text())["correctness"] is True
    assert kept.stat().st_mtime_ns == before
