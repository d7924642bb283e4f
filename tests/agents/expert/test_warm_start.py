"""Stage 1 starts from the configs the transition memory found paying off (agents.expert.warm_start)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from expert_helpers import accepted, problem
from pack_helpers import one_rule_pack

from agents.expert.agents import ExpertDesigner
from agents.expert.choices import choices_for, decisions_for
from agents.expert.design import analyse, read_config
from agents.expert.templates import template_for
from agents.expert.warm_start import PRINCIPLE
from agents.protocol import AgentTask, Draft, StrategyScore
from egg.device import default_facts
from egg.evaluate.harness import Harness
from egg.vocabulary import Backend, Focus, Stage
from principles import load_packs

SOFTMAX = "return torch.softmax(x * 0.5, dim=-1) + 1"


@pytest.fixture(scope="module")
def harness() -> Any:
    with Harness(device="cpu") as h:
        yield h


def _task(path: Path, tuning: list[StrategyScore], decisions: Any = None) -> AgentTask:
    return AgentTask(problem_path=str(path), problem_source=path.read_text(), problem_description="",
                     stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, backend=Backend.TRITON, round=1,
                     agent_name="expert-designer", tuning_strategies=tuning, decisions=decisions)


def _first_kernel(d: Draft) -> tuple[str, str, dict[str, Any]]:
    config = read_config(d.source)
    assert config is not None
    k = config.kernels[0]
    return config.variant, k.template, dict(k.config)


def _xblocks(path: Path, variant_id: str) -> tuple[str, int, list[int]]:
    """(template, heuristic XBLOCK, the other XBLOCKs of its tuning space) of the variant's largest kernel."""
    variant = analyse(path).variant(variant_id)
    kernel = max(variant.program.kernels, key=lambda k: k.xnumel * k.rnumel)
    template = template_for(kernel)
    choices = choices_for("cpu")
    default = template.default_config(kernel, choices.target)["XBLOCK"]
    space, _ = choices.space(template, kernel)
    return template.name, default, [v for v in space["XBLOCK"] if v != default]


def _strategy(text: str, score: float) -> StrategyScore:
    return StrategyScore(direction="retile", strategy=text, score=score, attempts=4, failure_rate=0.0)


def test_a_remembered_move_starts_the_structure_and_the_draft_says_why(harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    plain = ExpertDesigner(device="cpu").propose(_task(path, []))
    variant, template, config = _first_kernel(plain[0])
    name, default, others = _xblocks(path, variant)
    other = others[0]
    assert (name, config["XBLOCK"]) == (template, default)
    assert not any("transition memory" in n for d in plain for n in d.notes)

    strategy = f"{template}.XBLOCK={other}"
    warm = ExpertDesigner(device="cpu").propose(_task(path, [_strategy(strategy, 0.25)]))
    assert _first_kernel(warm[0])[2]["XBLOCK"] == other
    note = next(n for n in warm[0].notes if n.startswith("transition memory"))
    assert f"XBLOCK {default} -> {other}" in note and "expected log-gain +0.25 over 4 attempts" in note
    assert PRINCIPLE in warm[0].principle_ids and PRINCIPLE not in plain[0].principle_ids
    accepted(harness, path, warm[0].source, "default", tmp_path / "warm")


@pytest.mark.parametrize("why", ["noise", "not in the space", "no change", "another template", "switched off"])
def test_moves_that_do_not_apply_leave_the_heuristic_configs(why: str, tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    plain = ExpertDesigner(device="cpu").propose(_task(path, []))
    variant, template, _ = _first_kernel(plain[0])
    _, default, (other, *_) = _xblocks(path, variant)
    decisions = None
    strategy, score = f"{template}.XBLOCK={other}", 0.25
    if why == "noise":  # the memory's score is 0 unless the gain is clear of the recorded spread
        score = 0.0
    elif why == "not in the space":
        strategy = f"{template}.XBLOCK=3"
    elif why == "no change":
        strategy = f"{template}.XBLOCK={default}"
    elif why == "another template":
        strategy = f"matmul.XBLOCK={other}"
    else:  # a user pack sets the constant to 0
        root = one_rule_pack(tmp_path, "no-memory-start/off", ["softmax"],
                             {"constants": {"algorithm-structure/remembered-configs": 0}})
        decisions = decisions_for(path, load_packs([root], entry_points=False), default_facts())
    drafts = ExpertDesigner(device="cpu").propose(_task(path, [_strategy(strategy, score)], decisions))
    assert [d.source for d in drafts] == [d.source for d in plain]
    assert not any("transition memory" in n for d in drafts for n in d.notes)


def test_the_best_scored_move_wins_a_parameter(tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    plain = ExpertDesigner(device="cpu").propose(_task(path, []))
    variant, template, _ = _first_kernel(plain[0])
    _, _, others = _xblocks(path, variant)
    assert len(others) >= 2
    other = others[0]
    weaker = _strategy(f"{template}.XBLOCK={others[1]}", 0.1)
    stronger = _strategy(f"{template}.XBLOCK={other}", 0.3)
    drafts = ExpertDesigner(device="cpu").propose(_task(path, [weaker, stronger]))
    assert _first_kernel(drafts[0])[2]["XBLOCK"] == other  # one move per kernel parameter, best first
    assert sum(n.startswith("transition memory") for n in drafts[0].notes) == 1


def test_a_remembered_value_is_compared_with_what_the_variant_renders(tmp_path: Path) -> None:
    """A TF32 GEMM renders tensor-core tiles (BLOCK_N 128 here) where the matmul template's
    precision-blind default is 64: a remembered ``BLOCK_N=64`` is a move, applied and rendered
    (until 2026-12-06 it read as the default and was dropped); one equal to the render is not."""
    from agents.expert.design import render
    from agents.expert.warm_start import remembered_overrides

    path = problem(tmp_path, "conv", "return torch.relu(self.conv(x))", "[torch.randn(8, 64, 66, 65)]",
                   init="self.conv = nn.Conv2d(64, 128, 3)")
    program = analyse(path)
    variant = program.variant("conv-gemm")
    choices = choices_for("cuda")
    gemm = next(k for k in render(program, variant, "cuda").config.kernels if k.template == "matmul")
    assert gemm.config["BLOCK_N"] == 128 and template_for(
        next(k for k in variant.program.kernels if k.name == gemm.kernel)).default_config(
        next(k for k in variant.program.kernels if k.name == gemm.kernel), "cuda")["BLOCK_N"] == 64
    overrides, applied = remembered_overrides(variant, choices, None, [_strategy("matmul.BLOCK_N=64", 0.3)])
    assert overrides == {gemm.kernel: {"BLOCK_N": 64}} and applied[0].changes == [("BLOCK_N", 128, 64)]
    moved = next(k for k in render(program, variant, "cuda", overrides).config.kernels if k.kernel == gemm.kernel)
    assert moved.config == {**gemm.config, "BLOCK_N": 64}
    assert remembered_overrides(variant, choices, None, [_strategy("matmul.BLOCK_N=128", 0.3)]) == ({}, [])
