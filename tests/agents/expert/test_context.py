"""The expert agents use what the graph hands them: a tolerance rejection is answered with the
accurate fallback, evaluated configs are never proposed again, and the memory's recorded gains
order the tuner's moves (the pack order without them)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from expert_helpers import judge, problem

from agents.expert import design_candidates
from agents.expert.agents import ExpertDesigner
from agents.expert.tuner import ExpertTuner
from agents.expert.choices import choices_for
from agents.expert.design import analyse, read_config
from agents.expert.tuning import moves
from agents.protocol import AgentExhausted, AgentTask, Attempt, Draft, StrategyScore
from egg.evaluate.harness import Harness
from egg.vocabulary import Backend, Focus, Stage

SOFTMAX = "return torch.softmax(x * 0.5, dim=-1) + 1"
# A tolerance no fp32 kernel with another summation order can meet: the fused kernel misses it.
TIGHT = "TOLERANCE = 1e-12"


def _sha(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _task(path: Path, round_: int = 1, parent: Draft | None = None, attempts: list[Attempt] | None = None,
          strategies: list[StrategyScore] | None = None, focus: Focus = Focus.TILING) -> AgentTask:
    return AgentTask(problem_path=str(path), problem_source=path.read_text(), problem_description="",
                     stage=Stage.HARDWARE_TUNING if parent else Stage.ALGORITHM_DESIGN,
                     focus=focus if parent else Focus.STRUCTURE, backend=Backend.TRITON, parent=parent,
                     round=round_, agent_name="expert", attempts=attempts or [], strategies=strategies or [])


def _attempt(cid: str, draft: Draft, verdict) -> Attempt:
    return Attempt(id=cid, agent=draft.agent, stage="algorithm_design", source_sha256=_sha(draft.source),
                   accepted=verdict.accepted, stage_failed=verdict.stage_failed, reasons=verdict.reasons[:2])


def test_a_tolerance_rejection_makes_round_two_propose_the_accurate_fallback(harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]", header=TIGHT)
    designer = ExpertDesigner(device="cpu", rounds=2)
    (fused,) = designer.propose(_task(path))  # the fallback waits: round 2 may not need it
    assert read_config(fused.source).variant == "fused"  # type: ignore[union-attr]
    verdict = judge(harness, path, fused.source, "default", tmp_path / "fused")
    assert verdict.stage_failed == "correctness", verdict.reasons
    (repair,) = designer.propose(_task(path, 2, attempts=[_attempt("s1r1-expert-designer-0", fused, verdict)]))
    assert read_config(repair.source).variant == "less-fused"  # type: ignore[union-attr]
    assert any("missed the tolerance" in n and "s1r1-expert-designer-0" in n for n in repair.notes)
    with pytest.raises(AgentExhausted):
        designer.propose(_task(path, 3))


def test_a_resumed_run_still_answers_a_tolerance_rejection(harness: Harness, tmp_path: Path) -> None:
    """`egg optimize --resume` builds fresh agents: round 2's designer has not seen round 1, and
    must recall it from the attempts rather than declare itself exhausted."""
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]", header=TIGHT)
    (fused,) = ExpertDesigner(device="cpu", rounds=2).propose(_task(path))
    verdict = judge(harness, path, fused.source, "default", tmp_path / "fused")
    assert verdict.stage_failed == "correctness", verdict.reasons
    resumed = ExpertDesigner(device="cpu", rounds=2)
    (repair,) = resumed.propose(_task(path, 2, attempts=[_attempt("s1r1-expert-designer-0", fused, verdict)]))
    assert read_config(repair.source).variant == "less-fused"  # type: ignore[union-attr]
    with pytest.raises(AgentExhausted):  # nothing of its own in the attempts: a resumed designer that never ran
        ExpertDesigner(device="cpu", rounds=2).propose(_task(path, 2))


def test_round_two_without_a_rejection_proposes_nothing_on_cpu(harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    designer = ExpertDesigner(device="cpu", rounds=2)
    (fused,) = designer.propose(_task(path))
    verdict = judge(harness, path, fused.source, "default", tmp_path / "fused")
    assert verdict.accepted
    with pytest.raises(AgentExhausted):  # the fallback could only lose on rule (more kernels): not spent
        designer.propose(_task(path, 2, attempts=[_attempt("s1r1-expert-designer-0", fused, verdict)]))


def _parent(path: Path) -> Draft:
    c = design_candidates(path)[0]
    return Draft(agent="expert-designer", stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, source=c.source,
                 structure=c.structure, id="s1r1-expert-designer-0")


def _pack_order(path: Path, parent: Draft) -> list[str]:
    config = read_config(parent.source)
    assert config is not None
    variant = analyse(path).variant(config.variant)
    return [m.strategy() for m in moves(variant, config.by_kernel(), Focus.TILING, choices_for("cpu"))]


def _move(d: Draft) -> str:
    return d.structure.rsplit("[", 1)[1].rstrip("]")


def test_an_evaluated_config_is_not_proposed_again_and_a_missed_move_is_dropped(tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    parent = _parent(path)
    (first,) = ExpertTuner(Focus.TILING, device="cpu").propose(_task(path, parent=parent))
    # a fresh tuner (a resumed run, another agent) that hears the run evaluated that config already
    seen = Attempt(id="s2r1-expert-tiling-0", agent="expert-tiling", stage="hardware_tuning",
                   source_sha256=_sha(first.source), accepted=True, parent_id=parent.id)
    (second,) = ExpertTuner(Focus.TILING, device="cpu").propose(_task(path, parent=parent, attempts=[seen]))
    assert _move(second) != _move(first)
    # the same tuner hears its draft missed the tolerance: that move is not tried on another parent
    tuner = ExpertTuner(Focus.TILING, device="cpu")
    (mine,) = tuner.propose(_task(path, parent=parent))
    missed = seen.model_copy(update={"accepted": False, "stage_failed": "correctness", "source_sha256": _sha(mine.source)})
    other = _parent(path).model_copy(update={"id": "s2r1-other"})
    (after,) = ExpertTuner.propose(tuner, _task(path, 2, parent=other, attempts=[missed]))
    assert _move(after) != _move(mine)


def test_memory_gains_order_the_tuners_moves_and_none_keeps_the_pack_order(tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    parent = _parent(path)
    order = _pack_order(path, parent)
    assert len(order) >= 3
    (plain,) = ExpertTuner(Focus.TILING, device="cpu").propose(_task(path, parent=parent))
    # the last XBLOCK move of the pack order (RBLOCK moves do not reach a persistent kernel's code)
    target = [m for m in order if ".XBLOCK=" in m][-1]
    best = StrategyScore(direction="retile", strategy=target, score=0.7, attempts=4, failure_rate=0.0)
    worst = StrategyScore(direction="retile", strategy=order[0], score=-0.2, attempts=3, failure_rate=0.6)
    (ranked,) = ExpertTuner(Focus.TILING, device="cpu").propose(_task(path, parent=parent, strategies=[best, worst]))
    config = read_config(ranked.source)
    assert config is not None
    assert target != order[0] and f"XBLOCK {read_config(parent.source).kernels[0].config['XBLOCK']} -> " \
        f"{target.split('=')[1]}" in ranked.structure  # type: ignore[union-attr]
    assert [k.config["XBLOCK"] for k in config.kernels] == [int(target.split("=")[1])]
    assert _move(plain) != _move(ranked)


def test_memory_scores_order_the_designers_structures_and_say_so(tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    plain = ExpertDesigner(device="cpu").propose(_task(path))
    packs = [read_config(d.source).variant for d in plain]  # type: ignore[union-attr]
    assert len(packs) >= 2 and not any("transition memory" in n for d in plain for n in d.notes)
    last = StrategyScore(direction="fuse less", strategy=f"variant {packs[-1]}", score=0.4, attempts=4,
                         failure_rate=0.0)
    ordered = ExpertDesigner(device="cpu").propose(_task(path, strategies=[last]))
    assert [read_config(d.source).variant for d in ordered] == [packs[-1], *packs[:-1]]  # type: ignore[union-attr]
    assert any(n.startswith("transition memory: expected log-gain +0.40") and f"packs' order: {len(packs)})" in n
               for n in ordered[0].notes), ordered[0].notes
