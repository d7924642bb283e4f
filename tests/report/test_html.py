"""report.html from a real CPU run: content, escaping, self-containment, CPU honesty; the pieces."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from egg.evaluate.verdict import Verdict
from egg.report.charts import Bar, ChartPoint, LogScale, progress_chart, speedup_bars
from egg.report.highlight import highlight_python, line_numbers
from egg.report.html import NOT_COMPARABLE, regenerate, render_run_html, roofline_fraction, write_html_report
from egg.report.model import RunReport

FIXTURES = Path(__file__).parents[1] / "fixtures"


def report_of(run_dir: Path) -> RunReport:
    return RunReport.model_validate_json((run_dir / "report.json").read_text())


def text_of(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


# --- highlighting -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted((FIXTURES / "candidates").rglob("*.py")), ids=lambda p: p.name)
def test_highlighting_reproduces_every_fixture_exactly(path: Path) -> None:
    source = path.read_text()
    assert text_of(highlight_python(source)) == source


@pytest.mark.parametrize("source", [
    "", "x = 1", 's = """a\n<b>&</b>\n"""\n', "def f(:\n  <script>", "if x:\n    y = 1 \\\n  + 2\n# end",
    'print(f"{x!r} <>")\n', "class A:\n    @triton.jit(x=1)\n    def f(self): return a @ b\n", "\ttabs\n\n\n",
])
def test_highlighting_round_trips_and_escapes(source: str) -> None:
    out = highlight_python(source)
    assert text_of(out) == source
    assert "<script" not in out and "<b>" not in out


def test_highlighting_classes() -> None:
    out = highlight_python("@triton.jit\ndef k(x):  # hi\n    return tl.load(x) + 1 @ None\n")
    assert '<span class="tok-dec">triton</span>' in out and '<span class="tok-def">k</span>' in out
    assert '<span class="tok-com"># hi</span>' in out and '<span class="tok-ns">tl</span>' in out
    assert '<span class="tok-op">@</span>' in out and '<span class="tok-const">None</span>' in out
    assert line_numbers("a\nb\nc\n") == "1\n2\n3"


# --- charts -------------------------------------------------------------------------------------

def test_progress_chart_is_valid_svg_with_escaped_tooltips() -> None:
    points = [
        ChartPoint("c1", "algorithm_design", False, None, "rejected at static: <script>x</script>"),
        ChartPoint("c2", "algorithm_design", True, 1.5, "accepted"),
        ChartPoint("c3", "hardware_tuning", True, 2.5, "accepted"),
        ChartPoint("c4", "hardware_tuning", True, 2.0, "accepted"),
    ]
    svg = progress_chart(points, comparable=True, best_id="c3")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and "<script" not in svg
    assert 'class="best"' in svg and 'class="chosen"' in svg
    assert "stage 1: algorithm design" in svg and "stage 2: hardware tuning" in svg
    cpu = progress_chart(points, comparable=False, best_id="c4")
    ET.fromstring(cpu)
    assert 'class="best"' not in cpu and "not comparable" in cpu  # no "best so far" line from interpreter times
    empty = progress_chart([ChartPoint("c1", "algorithm_design", False, None)], comparable=True)
    assert "no accepted candidate" in ET.tostring(ET.fromstring(empty), encoding="unicode")


def test_speedup_bars_and_scale() -> None:
    bars = [Bar("1_Add<x>", 2.0, 1.5, True), Bar("2_Slow", 0.5, None, True), Bar("3_Bad", None, None, False, "failed")]
    svg = speedup_bars(bars)
    ET.fromstring(svg)
    assert "1_Add&lt;x&gt;" in svg and "failed" in svg
    scale = LogScale([0.5, 40], 0, 100)
    assert scale(scale.lo) == pytest.approx(0) and scale(scale.hi) == pytest.approx(100)
    assert 1.0 in scale.ticks() and len(scale.ticks()) <= 7
    assert len(LogScale([1.1], 0, 1).ticks()) >= 3  # a narrow range still gets ticks


# --- the page -----------------------------------------------------------------------------------

def test_every_run_writes_a_report_html(real_run: Path) -> None:
    page = (real_run / "report.html").read_text()  # written by run_optimization itself
    assert "EGG run report" in page and real_run.name in page


def test_cpu_page_content_escaping_and_honesty(real_run: Path) -> None:
    report = report_of(real_run)
    page = render_run_html(report, real_run)
    # self-contained: no scripts, no external resources
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link" not in page and "@import" not in page
    # hostile text from the model is escaped wherever it appears
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page
    assert "lost the relu &lt;/td&gt;&lt;/tr&gt;" in page
    # sections
    for anchor in ("summary", "progress", "candidates", "best-kernel", "stages", "analysis", "llm", "config"):
        assert f'id="{anchor}"' in page
    assert page.count('<tr class="cand') == len(report.candidates) == 4
    assert "_add_relu_kernel" in text_of(page) and '<span class="tok-kw">def</span>' in page
    # CPU: no speedups presented as such, roofline not comparable, correctness trials reported
    assert page.count(NOT_COMPARABLE) >= 3
    assert "CPU run: candidate timings" in page
    assert re.search(r"\d+/\d+ trials", page)
    assert "stage 1: algorithm design" in page and "stage 2: hardware tuning" in page
    assert "static check" in page  # the cheat's rejection reason
    assert "model</span><span>scripted" in page.replace("\n", "")


def test_gpu_like_page_shows_speedups_and_roofline(gpu_like_run: Path) -> None:
    report = report_of(gpu_like_run)
    page = render_run_html(report, gpu_like_run)
    assert report.best is not None and report.speedup_vs_eager
    assert f"{report.speedup_vs_eager:.2f}x" in page and f"{report.speedup_vs_compile:.2f}x" in page
    assert "of the H200 roofline" in page
    assert f'nc">{NOT_COMPARABLE}' not in page  # no summary card says "not comparable"
    assert 'class="best"' in page  # best-so-far line in the chart


def test_roofline_fraction_rules(gpu_like_run: Path) -> None:
    report = report_of(gpu_like_run)
    best = report.best
    assert best is not None and best.candidate_ms
    verdict = Verdict(accepted=True, device="cuda", timed_shape_set=report.analysis["shape_set"])
    fraction, text = roofline_fraction(report, verdict)
    assert fraction == pytest.approx(0.0021 / best.candidate_ms) and "%" in text
    other = verdict.model_copy(update={"timed_shape_set": "other"})
    assert roofline_fraction(report, other)[0] is None
    cpu = report.model_copy(update={"timing_comparable": False})
    assert roofline_fraction(cpu, verdict) == (None, NOT_COMPARABLE)
    assert roofline_fraction(report.model_copy(update={"best": None}), None)[0] is None


def test_no_accepted_candidate_and_missing_files(real_run: Path, tmp_path: Path) -> None:
    report = report_of(real_run).model_copy(update={"best": None, "candidates": [], "stage_summaries": {},
                                                    "outcome": "no candidate was accepted"})
    empty = tmp_path / "empty-run"
    empty.mkdir()
    page = render_run_html(report, empty)
    assert "the reference remains the result" in page and "No candidate was evaluated" in page


def test_write_html_report_is_safe_after_a_run_and_strict_for_the_cli(real_run: Path, monkeypatch) -> None:
    import egg.report.html as module

    def boom(*args, **kwargs):
        raise RuntimeError("template broke")

    monkeypatch.setattr(module, "render_run_html", boom)
    assert write_html_report(report_of(real_run), real_run) is None
    with pytest.raises(RuntimeError):
        write_html_report(report_of(real_run), real_run, strict=True)
    monkeypatch.undo()
    assert regenerate(real_run) == real_run / "report.html"
