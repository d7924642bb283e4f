"""Fixtures of the front-end tests: one judge for the session, and a verdict on a candidate source.

The pipeline these tests drive is the one issue 11 builds: ``agents.expert.design_candidates``
(contract §4, the codegen on ``egg.capture``'s canonical graph) writes a ``ModelNew`` file, and the
judge (``egg.evaluate.Harness``) decides whether it is correct and counts its generated-kernel
launches per forward call (``Verdict.launches_per_call``). The suite imports tests with
``--import-mode=importlib``, so this folder is put on ``sys.path`` for ``frontend_helpers``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from egg.evaluate import EvalOptions, Harness, Verdict

sys.path.insert(0, str(Path(__file__).parent))

# Few trials and one timed run: these tests ask "correct, and how many launches", never "how fast"
# (the CPU interpreter's timings mean nothing). Two trials still draw two sets of fresh inputs.
JUDGE_OPTIONS = {"device": "cpu", "trials": 2, "timing_runs": 1, "warmup_runs": 0}


@pytest.fixture(scope="session")
def harness() -> Iterator[Harness]:
    with Harness("cpu") as h:
        yield h


@pytest.fixture
def judge(harness: Harness, tmp_path: Path) -> Callable[[Path, str, str], Verdict]:
    """``judge(problem, candidate_source, shape_set)``: the harness's verdict, archived in tmp_path."""

    def run(problem: Path, source: str, shape_set: str) -> Verdict:
        candidate = tmp_path / "candidate.py"
        candidate.write_text(source, encoding="utf-8")
        options = EvalOptions(shapes=shape_set, **JUDGE_OPTIONS)
        return harness.evaluate(problem, candidate, options, archive_dir=tmp_path / "judged")

    return run
