"""``egg report DIR`` for run and suite directories, through egg.cli.main (COMMANDS patched in)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import egg.cli.main as cli
from egg.report.suite import ProblemResult, SuiteInput, metrics_of, render_suite_html


@pytest.fixture(autouse=True)
def with_report_command(monkeypatch):
    if "report" not in cli.COMMANDS:
        monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, "report"))


def test_regenerates_a_run_report_and_prints_its_path(real_run: Path, tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    shutil.copytree(real_run, run)
    (run / "report.html").unlink()
    assert cli.main(["report", str(run)]) == 0
    assert capsys.readouterr().out.strip() == str((run / "report.html").resolve())
    assert "EGG run report" in (run / "report.html").read_text()


def test_open_uses_webbrowser(real_run: Path, monkeypatch, capsys) -> None:
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url) or True)
    assert cli.main(["report", str(real_run), "--open"]) == 0
    assert opened == [(real_run / "report.html").resolve().as_uri()]


def test_bad_directories_are_one_line_errors(tmp_path: Path, capsys) -> None:
    assert cli.main(["report", str(tmp_path / "missing")]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert cli.main(["report", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    (tmp_path / "config.json").write_text("{}")
    assert cli.main(["report", str(tmp_path)]) == 2
    assert "--resume" in capsys.readouterr().err
    (tmp_path / "report.json").write_text("{not json")
    assert cli.main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unreadable report data" in err and len(err.strip().splitlines()) == 1


def test_suite_report_fast_p_chart_and_links(suite_dir: Path, capsys) -> None:
    assert cli.main(["report", str(suite_dir)]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path == (suite_dir / "report.html").resolve()
    page = path.read_text()
    assert "<script" not in page.lower()
    assert page.count('<tr class="fastp">') == 6 and "fast_1" in page and "fast_1.5" in page
    assert "75.0%" in page and "1.22x" in page and "0.79x" in page  # correctness rate and geomeans
    assert "2_Softmax&lt;i&gt;" in page and "output mismatch &lt;b&gt;bold&lt;/b&gt;" in page
    assert page.count('<tr class="problem">') == 4 and "Pending" in page
    assert 'aria-label="per-problem speedup"' in page
    # link to the problem's run report, which was regenerated alongside
    assert 'href="level1/1_AddRelu/report.html"' in page
    assert (suite_dir / "level1" / "1_AddRelu" / "report.html").is_file()


def test_results_json_alone_is_enough(suite_dir: Path) -> None:
    (suite_dir / "suite.json").unlink()
    page = render_suite_html(suite_dir)
    assert page.count('<tr class="problem">') == 4 and "75.0%" in page


def test_computed_metrics_match_kernelbench_definitions() -> None:
    rows = [ProblemResult(problem_id=1, correctness=True, speedup_vs_eager=2.0, speedup_vs_compile=1.0),
            ProblemResult(problem_id=2, correctness=True, speedup_vs_eager=0.5),
            ProblemResult(problem_id=3, correctness=False, speedup_vs_eager=9.0),  # incorrect: never fast
            ProblemResult(problem_id=4, correctness=True, speedup_vs_eager=1.0)]
    m = metrics_of(SuiteInput(results=rows), rows)
    assert m["total"] == 4 and m["correctness_rate"] == 0.75
    assert m["vs_eager"]["fast_p"]["1.0"] == 0.25  # strictly greater than p
    assert m["vs_eager"]["fast_p"]["0.0"] == 0.75
    assert m["vs_eager"]["geo_mean_speedup"] == pytest.approx(1.0)
    assert m["vs_compile"]["untimed_correct"] == 2
    try:
        from kernelbench_adapter.metrics import suite_metrics
    except ImportError:
        return
    ref = suite_metrics(compiled=[True] * 4, correct=[r.correctness for r in rows],
                        speedup_vs_eager=[r.speedup_vs_eager if r.correctness else None for r in rows],
                        speedup_vs_compile=[r.speedup_vs_compile if r.correctness else None for r in rows],
                        timing_comparable=False)
    assert ref.vs_eager.fast_p == pytest.approx(m["vs_eager"]["fast_p"])
    assert ref.vs_compile.geo_mean_speedup == pytest.approx(m["vs_compile"]["geo_mean_speedup"])


@pytest.mark.slow
def test_suite_report_of_a_real_kernelbench_rescore(tmp_path: Path) -> None:
    kb = pytest.importorskip("kernelbench_adapter")
    if not hasattr(kb, "rescore_suite"):
        pytest.skip("kernelbench_adapter has no rescore_suite (stale editable install: reinstall the project)")
    from egg.evaluate.harness import EvalOptions

    fixtures = Path(__file__).parents[1] / "fixtures"
    level = tmp_path / "root" / "KernelBench" / "level1"
    level.mkdir(parents=True)
    shutil.copy(fixtures / "problems" / "add_relu.py", level / "1_AddRelu.py")
    shutil.copy(fixtures / "problems" / "add_relu.py", level / "2_AddReluAgain.py")
    gens = tmp_path / "gens"
    gens.mkdir()
    shutil.copy(fixtures / "candidates" / "add_relu_triton.py", gens / "level_1_problem_1_sample_0_kernel.py")
    out = tmp_path / "out"
    kb.rescore_suite(tmp_path / "root", 1, gens, out, EvalOptions(device="cpu", trials=1, timing_runs=2))
    assert cli.main(["report", str(out)]) == 0
    page = (out / "report.html").read_text()
    assert json.loads((out / "suite.json").read_text())["metrics"]["total"] == 2
    assert "50.0%" in page and "failed at missing" in page and ">verdict</a>" in page
