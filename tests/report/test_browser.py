"""Render the reports in headless Chromium (Debian's ``chromium``): the DOM has the content, and a
screenshot is produced. Set ``EGG_REPORT_SCREENSHOTS=DIR`` to keep the PNGs for a look."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from egg.report.html import regenerate
from egg.report.suite import write_suite_report

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="headless Chromium is not installed (apt-get install chromium)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars"]


def chromium(tmp_path: Path, page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    profile = tmp_path / "chromium-profile"
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def dump_dom(tmp_path: Path, page: Path) -> str:
    return chromium(tmp_path, page, "--dump-dom").stdout


def screenshot(tmp_path: Path, page: Path, name: str) -> Path:
    png = tmp_path / name
    chromium(tmp_path, page, f"--screenshot={png}", "--window-size=1280,2000")
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 20_000  # a blank page is a few KB
    keep = os.environ.get("EGG_REPORT_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(keep) / name)
    return png


def test_run_report_renders_in_chromium(real_run: Path, tmp_path: Path) -> None:
    page = regenerate(real_run)
    dom = dump_dom(tmp_path, page)
    assert "<script" not in dom.lower()  # the hostile structure stayed text
    assert "window.pwned=1" in dom  # ... and is visible as text
    for heading in ("Summary", "Best speedup over evaluated candidates", "Candidates", "Best kernel",
                    "Stage summaries", "LLM usage"):
        assert f">{heading}" in dom
    assert dom.count('<tr class="cand') == 4 and 'class="cand best"' in dom
    assert "not comparable (CPU interpreter)" in dom and "trials" in dom
    assert "_add_relu_kernel" in dom and "tl.program_id" not in dom  # highlighted: split into spans
    assert '<span class="tok-ns">tl</span><span class="tok-op">.</span>program_id' in dom
    assert "stage 1: algorithm design" in dom and "stage 2: hardware tuning" in dom
    assert "<svg" in dom and "<circle" in dom
    screenshot(tmp_path, page, "run-report-cpu.png")


def test_gpu_like_run_report_renders(gpu_like_run: Path, tmp_path: Path) -> None:
    page = regenerate(gpu_like_run)
    dom = dump_dom(tmp_path, page)
    assert "of the H200 roofline" in dom and 'class="best"' in dom
    screenshot(tmp_path, page, "run-report-gpu-like.png")


def test_suite_report_renders_in_chromium(suite_dir: Path, tmp_path: Path) -> None:
    page = write_suite_report(suite_dir)
    dom = dump_dom(tmp_path, page)
    assert dom.count('<tr class="fastp">') == 6 and dom.count('<tr class="problem">') == 4
    assert "per-problem speedup" in dom and "<rect" in dom
    assert 'href="level1/1_AddRelu/report.html"' in dom
    screenshot(tmp_path, page, "suite-report.png")
