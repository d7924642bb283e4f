"""A user's principle pack drives the expert agents: each capability through the public APIs
(design_candidates, the designer, the tuner), with the real judge on the interpreter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from expert_helpers import accepted, problem

from agents.expert import design_candidates
from agents.expert.agents import ExpertDesigner
from agents.expert.tuner import ExpertTuner
from agents.expert.choices import decisions_for
from agents.expert.design import read_config
from agents.protocol import AgentTask, Draft
from egg.device import default_facts
from egg.evaluate.harness import Harness
from egg.vocabulary import Backend, Focus, Stage
from principles import Decisions, load_packs

SOFTMAX = "return torch.softmax(x * 0.5, dim=-1) + 1"
PRINCIPLE = "user-pack/house-rules"
USER_TEMPLATE = '''"""A user template: the expert's reduction template, always looped in chunks of 16."""

from agents.expert.templates.reduction import ReductionTemplate


class LoopedRows(ReductionTemplate):
    name = "user-pack/looped-rows"
    principle_ids = ["user-pack/house-rules"]

    def default_config(self, kernel, device):
        return {**super().default_config(kernel, device), "PERSISTENT": False, "RBLOCK": 16}


TEMPLATE = LoopedRows
'''


def _pack(tmp_path: Path, *blocks: dict[str, Any], name: str = "user-pack", template: bool = False) -> Path:
    root = tmp_path / name
    root.mkdir(exist_ok=True)
    data: dict[str, Any] = {
        "name": name, "version": "1.0.0", "description": "A user's house rules.",
        "principles": [{"id": f"{name}/house-rules", "stage": "hardware_tuning", "focus": "tiling",
                        "applies_to": ["softmax", "reduction", "elementwise"], "text": "Our rules.",
                        "decisions": list(blocks)}],
    }
    if template:
        (root / "looped_rows.py").write_text(USER_TEMPLATE)
        data["kernel_templates"] = [{"name": "looped-rows", "module": "looped_rows.py", "object": "TEMPLATE",
                                     "description": "looped rows"}]
    (root / "pack.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def _decisions(path: Path, *packs: Path) -> Decisions:
    return decisions_for(path, load_packs(list(packs), entry_points=False), default_facts())


def _task(path: Path, decisions: Decisions | None, parent: Draft | None = None, round_: int = 1) -> AgentTask:
    return AgentTask(problem_path=str(path), problem_source=path.read_text(), problem_description="",
                     stage=Stage.HARDWARE_TUNING if parent else Stage.ALGORITHM_DESIGN,
                     focus=Focus.MEMORY if parent else Focus.STRUCTURE, backend=Backend.TRITON, parent=parent,
                     round=round_, agent_name="expert", decisions=decisions)


def _tuned(path: Path, decisions: Decisions | None, rounds: int = 12) -> list[Draft]:
    """Every memory-focus config the tuner proposes for the fused parent, round after round."""
    parent = design_candidates(path, device="cpu", decisions=decisions)[0]
    draft = Draft(agent="expert-designer", stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, source=parent.source,
                  structure=parent.structure, id="s1r1-expert-designer-0")
    tuner = ExpertTuner(Focus.MEMORY, device="cpu")
    out: list[Draft] = []
    for r in range(1, rounds + 1):
        found = tuner.propose(_task(path, decisions, draft, r))
        if not found:
            break
        out += found
    return out


def _warps(d: Draft) -> list[int]:
    config = read_config(d.source)
    assert config is not None
    return [k.config["num_warps"] for k in config.kernels if k.template == "reduction"]


def test_added_tuning_value_is_tried_and_a_removed_one_never(harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    plain = {w for d in _tuned(path, None) for w in _warps(d)}
    assert 8 in plain and 32 not in plain
    edited = _decisions(path, _pack(tmp_path, {"tuning": {"reduction": {"num_warps": {"add": [32], "remove": [8]}}}}))
    drafts = _tuned(path, edited)
    tried = {w for d in drafts for w in _warps(d)}
    assert 32 in tried and 8 not in tried
    with_32 = next(d for d in drafts if 32 in _warps(d))
    assert PRINCIPLE in with_32.principle_ids  # the value came from the pack: the draft says so
    # a move of another parameter (an eviction hint) owes the pack nothing, and says so
    others = [d for d in drafts if _warps(d) == _warps(drafts[0]) == [4] or "EVICT" in d.structure]
    assert others and all(PRINCIPLE not in d.principle_ids for d in others)
    accepted(harness, path, with_32.source, "default", tmp_path / "w32")


def test_variant_switched_off_then_on_and_reordered(tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    assert [c.variant for c in design_candidates(path)] == ["fused", "less-fused"]
    off = _pack(tmp_path, {"variants": {"less-fused": {"enabled": False}}})
    d_off = _decisions(path, off)
    assert [c.variant for c in design_candidates(path, decisions=d_off)] == ["fused"]
    drafts = ExpertDesigner(device="cpu").propose(_task(path, d_off))
    assert [read_config(d.source).variant for d in drafts] == ["fused"]  # type: ignore[union-attr]
    assert PRINCIPLE in drafts[0].principle_ids
    on = _pack(tmp_path, {"variants": {"less-fused": {"enabled": True, "priority": 5}}}, name="later-pack")
    cands = design_candidates(path, decisions=_decisions(path, off, on))
    assert [c.variant for c in cands] == ["less-fused", "fused"]  # the later pack has the last word
    assert "later-pack/house-rules" in cands[0].principle_ids


def test_constant_changes_the_rendered_kernel(harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    default = design_candidates(path)[0]
    assert "tiling/one-pass-row-limit" in default.principle_ids  # the built-in default, credited
    decisions = _decisions(path, _pack(tmp_path, {"constants": {"tiling/persistent-row-max": 32}}))
    looped = design_candidates(path, decisions=decisions)[0]
    before, after = read_config(default.source), read_config(looped.source)
    assert before is not None and after is not None
    assert [k.config["PERSISTENT"] for k in before.kernels] == [True]
    assert [k.config["PERSISTENT"] for k in after.kernels] == [False]  # a 40-wide row now loops
    assert PRINCIPLE in looped.principle_ids and "tiling/one-pass-row-limit" not in looped.principle_ids
    accepted(harness, path, looped.source, "default", tmp_path / "looped")


def test_pack_constants_decide_which_reductions_split(harness: Harness, tmp_path: Path) -> None:
    """Batch-norm statistics over 96 channels: under 2 rows per SM (the built-in
    ``split-reduction-max-rows-per-sm``) each channel is split into chunk partials and a second
    stage; a pack that lowers the limit below 96 rows keeps one looped program per channel."""
    path = problem(tmp_path, "bn", "return self.bn(x)", "[torch.randn(2, 96, 64, 64)]",
                   init="self.bn = nn.BatchNorm2d(96)")
    split = design_candidates(path)[0]
    assert "_part" in split.source and "algorithm-structure/split-long-reductions" in split.principle_ids
    accepted(harness, path, split.source, "default", tmp_path / "split")
    limit = {"constants": {"algorithm-structure/split-reduction-max-rows-per-sm": 0.5}}  # 66 rows on 132 SMs
    whole = design_candidates(path, decisions=_decisions(path, _pack(tmp_path, limit)))[0]
    assert "_part" not in whole.source and "algorithm-structure/split-long-reductions" not in whole.principle_ids
    accepted(harness, path, whole.source, "default", tmp_path / "whole")


def test_a_pack_turns_the_direct_launch_path_off(harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    assert "= (torch.cuda.current_device(), " in design_candidates(path)[0].source  # the built-in default: on
    decisions = _decisions(path, _pack(tmp_path, {"constants": {"parallel-mapping/direct-launch": False}}))
    plain = design_candidates(path, decisions=decisions)[0]
    assert "current_device" not in plain.source and "_launch_k0" not in plain.source
    accepted(harness, path, plain.source, "default", tmp_path / "plain")


def test_user_template_is_offered_judged_and_tuned(harness: Harness, tmp_path: Path) -> None:
    path = problem(tmp_path, "softmax", SOFTMAX, "[torch.randn(6, 40)]")
    decisions = _decisions(path, _pack(tmp_path, {"kernel_templates": ["looped-rows"]}, template=True))
    cands = design_candidates(path, decisions=decisions)
    assert [c.variant for c in cands] == ["fused", "fused+user-pack/looped-rows", "less-fused"]
    user = cands[1]
    assert [k.template for k in user.config.kernels] == ["user-pack/looped-rows"]
    assert user.config.kernels[0].config["RBLOCK"] == 16 and PRINCIPLE in user.principle_ids
    accepted(harness, path, user.source, "default", tmp_path / "user")
    parent = Draft(agent="expert-designer", stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE, source=user.source,
                   structure=user.structure, id="s1r1-expert-designer-1")
    (tuned,) = ExpertTuner(Focus.MEMORY, device="cpu").propose(_task(path, decisions, parent))
    config = read_config(tuned.source)
    assert config is not None and config.variant == user.variant
    assert [k.template for k in config.kernels] == ["user-pack/looped-rows"]  # re-rendered by the user's template
