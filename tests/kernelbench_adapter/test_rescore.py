"""Re-scoring KernelBench generations with the harness, through `egg kernelbench --candidates` on CPU:
an honest Triton kernel is accepted, a wrong one and a plain-PyTorch one are rejected, a missing one
is a failure; results.json has KernelBench's eval_results.json shape; metrics follow score.py."""

from __future__ import annotations

import json

import pytest

import egg.cli.main as cli_main
from kernelbench_adapter.store import SuiteStore


@pytest.fixture(autouse=True)
def kernelbench_command(monkeypatch):
    if "kernelbench" not in cli_main.COMMANDS:
        monkeypatch.setattr(cli_main, "COMMANDS", (*cli_main.COMMANDS, "kernelbench"))


def test_rescore_generations_then_resume_re_evaluates_nothing(kb_root, generations, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["kernelbench", "--root", str(kb_root), "--level", "1", "--ids", "1-4", "--candidates", str(generations),
            "--device", "cpu", "--timeout", "120", "--seed", "7", "--out", str(out)]
    assert cli_main.main(argv) == 0
    shown = capsys.readouterr().out
    assert "fast_p" in shown and "vs torch.compile" in shown and "not comparable" in shown

    results = json.loads((out / "results.json").read_text())
    assert list(results) == ["1", "2", "3", "4"]
    for entries in results.values():
        assert len(entries) == 1
        entry = entries[0]
        # KernelBench's eval_results.json keys (scripts/eval_from_generations.py), then ours
        for key in ("sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats",
                    "speedup_vs_eager", "speedup_vs_compile", "stage_failed", "reasons"):
            assert key in entry
        assert entry["sample_id"] == 0
    honest, wrong, plain, missing = (results[k][0] for k in ("1", "2", "3", "4"))
    assert honest["correctness"] and honest["compiled"] and honest["stage_failed"] is None
    assert honest["runtime"] > 0 and honest["runtime_stats"]["mean"] == honest["runtime"]
    assert honest["speedup_vs_eager"] > 0 and honest["speedup_vs_compile"] is None  # compile is not timed on CPU
    assert not wrong["correctness"] and wrong["compiled"] and wrong["stage_failed"] == "correctness"
    assert wrong["runtime"] == -1.0 and "correctness_issue" in wrong["metadata"]
    assert not plain["correctness"] and plain["stage_failed"] == "correctness"
    assert any("plain PyTorch" in r for r in plain["reasons"])
    assert not missing["correctness"] and not missing["compiled"] and missing["stage_failed"] == "missing"
    assert "level_1_problem_4_sample_0_kernel.py" in missing["reasons"][0]

    # per-candidate verdicts archived under OUT
    verdict = json.loads((out / "level1" / "1_ReLU" / "sample_0" / "verdict.json").read_text())
    assert verdict["accepted"] and verdict["backend"] == "triton"
    assert (out / "level1" / "2_Add_and_scale" / "sample_0" / "verdict.json").is_file()

    suite = json.loads((out / "suite.json").read_text())
    assert suite["mode"] == "rescore" and suite["level"] == 1 and suite["pending"] == []
    m = suite["metrics"]
    assert (m["total"], m["compiled"], m["correct"]) == (4, 3, 1)
    assert m["correctness_rate"] == pytest.approx(0.25)
    speedup = honest["speedup_vs_eager"]
    assert m["vs_eager"]["fast_p"]["0.0"] == pytest.approx(0.25)  # the one correct problem, over all four
    assert m["vs_eager"]["fast_p"]["1.0"] == pytest.approx(0.25 if speedup > 1 else 0.0)
    assert m["vs_eager"]["geo_mean_speedup"] == pytest.approx(speedup)
    assert m["vs_compile"]["fast_p"]["0.0"] == 0.0 and m["vs_compile"]["untimed_correct"] == 1
    assert m["timing_comparable"] is False

    # resume: finished samples are kept, nothing is evaluated again
    record = out / "level1" / "1_ReLU" / "sample_0" / "kb_result.json"
    before = record.stat().st_mtime_ns
    assert cli_main.main([*argv, "--resume"]) == 0
    assert record.stat().st_mtime_ns == before
    assert json.loads((out / "suite.json").read_text())["metrics"] == m


def test_rescore_refuses_a_used_out_dir_and_a_different_mode_or_level(kb_root, generations, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "something").write_text("x")
    argv = ["kernelbench", "--root", str(kb_root), "--level", "1", "--ids", "4", "--candidates", str(generations),
            "--device", "cpu", "--out", str(out)]
    assert cli_main.main(argv) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and len(err.strip().splitlines()) == 1

    started = tmp_path / "optimize-suite"
    SuiteStore(started, mode="optimize", level=1, root=kb_root, resume=False, settings={}).write_summaries()
    argv[argv.index(str(out))] = str(started)
    assert cli_main.main([*argv, "--resume"]) == 2
    assert "started with mode optimize, not rescore" in capsys.readouterr().err
    (kb_root / "level2").mkdir()
    (kb_root / "level2" / "1_X.py").write_text("")
    level2 = ["kernelbench", "--root", str(kb_root), "--level", "2", "--out", str(started), "--resume"]
    assert cli_main.main(level2) == 2
    assert "started with level 1, not 2" in capsys.readouterr().err
