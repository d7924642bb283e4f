"""Retrieval: moves ordered by the gains recorded on problems like this one."""

from __future__ import annotations

import math

import pytest

from egg.context.tokens import estimate_tokens
from egg.memory import TransitionMemory, directions, render_experience, transitions, weight
from egg.memory.retrieve import PRIOR, SAME, SIMILAR

from .conftest import GEMM, NORM, SOFTMAX, obs


def test_similarity_weights() -> None:
    assert weight(NORM, NORM) == SAME
    assert weight(NORM, SOFTMAX) == 0.0  # {normalization, reduction} vs {reduction, softmax}: a third in common
    wider = NORM.model_copy(update={"op_classes": ["elementwise", "normalization", "reduction"], "device": "other"})
    assert weight(NORM, wider) == SIMILAR
    assert weight(NORM, wider.model_copy(update={"bottleneck": "latency"})) == 0.0
    assert weight(NORM, GEMM) == 0.0


def test_strategies_are_ordered_by_recorded_gain() -> None:
    records = (
        [obs(i, strategy="reduction.num_warps=8", gain=1.10) for i in range(4)]
        + [obs(10 + i, strategy="reduction.XBLOCK=4", gain=1.40) for i in range(4)]
        + [obs(20 + i, strategy="reduction.RBLOCK=64", gain=0.80) for i in range(4)]
    )
    (retile,) = directions(records, NORM)
    assert [s.strategy for s in retile.strategies] == ["reduction.XBLOCK=4", "reduction.num_warps=8",
                                                       "reduction.RBLOCK=64"]
    best = retile.strategies[0].stats
    assert best.gain == pytest.approx(1.40) and best.score == pytest.approx(4 * math.log(1.40) / (4 + PRIOR))


def test_failures_cost_a_strategy_its_rank() -> None:
    records = ([obs(i, strategy="risky", gain=1.5) for i in range(2)]
               + [obs(2 + i, strategy="risky", accepted=False, stage_failed="correctness") for i in range(6)]
               + [obs(10 + i, strategy="steady", gain=1.15) for i in range(8)])
    (retile,) = directions(records, NORM)
    assert [s.strategy for s in retile.strategies] == ["steady", "risky"]
    assert retile.strategies[1].stats.failure_rate == pytest.approx(0.75)


def test_one_lucky_try_does_not_beat_a_record() -> None:
    records = [obs(0, strategy="once", gain=1.6)] + [obs(1 + i, strategy="often", gain=1.35) for i in range(6)]
    (retile,) = directions(records, NORM)
    assert retile.strategies[0].strategy == "often"


def test_directions_are_ordered_and_other_kinds_do_not_count() -> None:
    records = ([obs(i, direction="retile", gain=1.05) for i in range(3)]
               + [obs(10 + i, focus="parallel_mapping", direction="remap work to programs",
                      strategy="reduction.XBLOCK=8", gain=1.5) for i in range(3)]
               + [obs(20 + i, context=GEMM, direction="retile for tensor cores", strategy="matmul.BLOCK_N=256",
                      gain=3.0) for i in range(5)])
    found = directions(records, NORM, stage="hardware_tuning")
    assert [d.direction for d in found] == ["remap work to programs", "retile"]
    assert found[0].meaning.startswith("work per program")
    assert [d.direction for d in directions(records, NORM, stage="hardware_tuning", focus="tiling")] == ["retile"]


def test_cpu_observations_count_failures_never_gains() -> None:
    records = [obs(i, gain=None) for i in range(3)] + [obs(5, accepted=False, stage_failed="correctness")]
    (retile,) = directions(records, NORM)
    assert retile.stats.gain is None and retile.stats.score == 0.0
    assert retile.stats.failure_rate == pytest.approx(0.25)


def test_transitions_between_directions() -> None:
    records = ([obs(i, from_direction="fuse the epilogue into a Triton matmul", direction="retile for tensor cores",
                    gain=1.3) for i in range(3)]
               + [obs(10 + i, from_direction="fuse around library calls", direction="retile", gain=1.02)
                  for i in range(3)])
    found = transitions(records, NORM)
    assert [(t.from_direction, t.to_direction) for t in found] == [
        ("fuse the epilogue into a Triton matmul", "retile for tensor cores"), ("fuse around library calls", "retile")]
    assert [t.to_direction for t in transitions(records, NORM, from_direction="fuse around library calls")] == [
        "retile"]


def test_the_prompt_section_fits_its_budget(tmp_path) -> None:
    memory = TransitionMemory(tmp_path / "m.sqlite")
    memory.record([obs(i, strategy=f"reduction.num_warps={2 ** (i % 5)}", gain=1 + (i % 5) / 10,
                       principle_ids=["tiling/num-warps-match-work"]) for i in range(40)])
    text = render_experience(memory.observations(), NORM, stage="hardware_tuning", focus="tiling", budget_tokens=120)
    assert text.startswith("From 40 candidates evaluated in earlier runs on problems like this one")
    assert "- retile: 40 tries (40 on this kind of problem)" in text
    assert "  - reduction.num_warps=16: 8 tries" in text and "[tiling/num-warps-match-work]" in text
    assert sum(estimate_tokens(line) + 1 for line in text.splitlines()) <= 120
    assert render_experience(memory.observations(), GEMM, stage="hardware_tuning", focus="tiling") is None
    assert render_experience(memory.observations(), NORM, stage="hardware_tuning", focus="memory") is None
