"""What keeps one problem's lesson off a different problem: the heavy ops' kinds in the context,
starting moves scored against their siblings, and scores that stand only clear of the spread."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from egg.analysis import analyze_problem
from egg.device import default_facts
from egg.memory import Context, TransitionMemory, directions, render_experience, weight
from egg.memory.directions import START
from egg.memory.retrieve import SIMILAR, relative_starts

from .conftest import obs

CONV = Context(op_classes=["broadcast", "conv", "elementwise"], bottleneck="compute", dtypes=["float32"],
               device="NVIDIA H200", anchors=["conv2d"])
PROBLEM = '''
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose3d(4, 4, 3, stride=2)
        self.proj = nn.Linear(4, 8)

    def forward(self, x):
        return self.proj(torch.relu(self.up(x)).mean(dim=(2, 3, 4)))


def get_inputs():
    return [torch.randn(2, 4, 4, 4, 4)]


def get_init_inputs():
    return []
'''


def test_the_analysis_names_the_heavy_ops_kinds(tmp_path: Path) -> None:
    path = tmp_path / "up_proj.py"
    path.write_text(PROBLEM)
    context = Context.from_analysis(analyze_problem(path).model_dump(mode="json"), default_facts())
    assert context.anchors == ["conv_transpose3d", "matmul"]
    assert "conv_transpose3d+matmul" in context.line()


def test_other_heavy_op_kinds_do_not_count_and_older_observations_do() -> None:
    transposed = CONV.model_copy(update={"anchors": ["conv_transpose3d"]})
    assert weight(transposed, CONV) == 0.0  # same op classes, bottleneck and dtypes: a different convolution
    older = CONV.model_copy(update={"anchors": None})  # recorded before contexts kept the kinds
    assert weight(CONV, older) == SIMILAR


def test_starting_moves_score_against_their_siblings() -> None:
    """Less-fused was tried only on an easy problem, where it lost to fused; channels-last only on
    hard ones, where it beat fused. Over eager, less-fused's 4x would rank it first."""
    def start(i: int, run: str, variant: str, speedup: float):
        return obs(i, context=CONV, run=run, stage="algorithm_design", focus="fusion", direction="d",
                   strategy=f"variant {variant}", gain=speedup, from_direction=START)

    records = [start(0, "easy", "fused", 5.0), start(1, "easy", "less-fused", 4.0),
               start(2, "hard", "fused", 1.2), start(3, "hard", "conv-channels-last", 1.5),
               start(4, "hard2", "fused", 1.3), start(5, "hard2", "conv-channels-last", 1.6)]
    assert relative_starts(records)[1].gain == pytest.approx((4.0 / 5.0) ** 0.5)
    (found,) = directions(records, CONV)
    assert [s.strategy for s in found.strategies] == ["variant conv-channels-last", "variant fused",
                                                       "variant less-fused"]
    assert found.strategies[0].stats.score > 0 > found.strategies[2].stats.expected


def test_disagreeing_evidence_scores_nothing() -> None:
    records = [obs(0, strategy="layout", gain=1.8), obs(1, strategy="layout", gain=0.12, run="run-b"),
               obs(2, strategy="steady", gain=1.3), obs(3, strategy="steady", gain=1.25, run="run-b")]
    scores = {s.strategy: s.stats for d in directions(records) for s in d.strategies}
    assert scores["layout"].score == 0.0 and scores["layout"].expected != 0.0
    assert scores["steady"].score == pytest.approx(scores["steady"].expected) and scores["steady"].score > 0


def test_a_memory_file_from_before_the_kinds_opens_and_reads(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    memory = TransitionMemory(path)
    memory.record([obs(0)])
    with sqlite3.connect(path) as db:  # the file as an EGG without the column wrote it
        db.execute("ALTER TABLE observations DROP COLUMN anchors")
    reopened = TransitionMemory(path)
    (old,) = reopened.observations()
    assert old.context.anchors is None
    reopened.record([obs(1, context=CONV)])
    assert [o.context.anchors for o in reopened.observations()] == [None, ["conv2d"]]


def test_the_prompt_says_what_a_structures_gain_is_against(tmp_path: Path) -> None:
    memory = TransitionMemory(tmp_path / "m.sqlite")
    memory.record([obs(i, context=CONV, run=f"r{i // 2}", stage="algorithm_design", focus="fusion", direction="d",
                       strategy=f"variant v{i % 2}", gain=1.0 + i, from_direction=START) for i in range(4)])
    text = render_experience(memory.observations(), CONV, stage="algorithm_design", focus="fusion")
    assert text is not None and "over the other structures tried on the same problem" in text.splitlines()[0]
    memory.record([obs(9, context=CONV)])  # a tuning move: gains over its parent, no such note
    tuned = render_experience(memory.observations(), CONV, stage="hardware_tuning", focus="tiling")
    assert tuned is not None and "other structures" not in tuned
