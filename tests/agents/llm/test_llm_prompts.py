from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from agents.llm.prompts import build_messages, build_repair_message, render_prompt_text
from agents.protocol import AgentTask, Draft, PrincipleRef
from egg.vocabulary import Backend, Focus, Stage

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROBLEM = FIXTURES / "problems" / "linear_scale.py"
DESCRIPTION = "x: float32 [8, 48] contiguous; weight: float32 [40, 48]; output: float32 [8, 40]"
SUMMARY = "STAGE-1-SUMMARY: fused matmul+bias+scale epilogue was fastest (c3, 1.8x)"
PARENT_SOURCE = "# PARENT-SOURCE-MARKER\nclass ModelNew: ...\n"


def task(stage: Stage = Stage.ALGORITHM_DESIGN, focus: Focus = Focus.STRUCTURE, **kw: object) -> AgentTask:
    fields: dict[str, object] = dict(
        problem_path=str(PROBLEM),
        problem_source=PROBLEM.read_text(),
        problem_description=DESCRIPTION,
        stage=stage,
        focus=focus,
        backend=Backend.TRITON,
        principles=[
            PrincipleRef(id="mm-epilogue-fusion", text="Fuse bias and scale into the matmul epilogue."),
            PrincipleRef(id="fp32-ieee-dot", text="Use input_precision='ieee' for fp32 tl.dot."),
        ],
        stage_summary=SUMMARY,
        history="HISTORY-MARKER: 2 attempts, best c3",
        feedback=["FEEDBACK-MARKER: output mismatch at [0, 39]"],
        agent_name="llm-0",
    )
    if stage is Stage.HARDWARE_TUNING:
        fields["parent"] = Draft(
            agent="llm-0", stage=Stage.ALGORITHM_DESIGN, focus=Focus.STRUCTURE,
            source=PARENT_SOURCE, structure="fused epilogue", id="c3",
        )
    fields.update(kw)
    return AgentTask(**fields)  # type: ignore[arg-type]


def test_stage1_prompt_has_problem_shapes_principles_and_contract() -> None:
    text = render_prompt_text(task())
    assert "class Model(nn.Module)" in text and DESCRIPTION in text
    assert "stage 1 (algorithm design)" in text and 'focus "structure"' in text
    assert "- [mm-epilogue-fusion] Fuse bias and scale" in text and "[fp32-ieee-dot]" in text
    assert "PRINCIPLES: <comma-separated ids" in text
    assert "HISTORY-MARKER" in text and "FEEDBACK-MARKER" in text
    assert "(self, in_features, out_features, scale)" in text
    assert "@triton.jit" in text and 'input_precision="ieee"' in text
    assert "No try/except fallbacks to PyTorch" in text and "no caching of results" in text
    # stage 1 never sees a stage summary or a parent
    assert SUMMARY not in text and "PARENT-SOURCE-MARKER" not in text


@pytest.mark.parametrize(
    ("focus", "phrase"),
    [
        (Focus.PARALLEL_MAPPING, "Focus on parallel mapping"),
        (Focus.TILING, "Focus on tiling"),
        (Focus.MEMORY, "Focus on memory"),
    ],
)
def test_stage2_prompt_per_focus_has_summary_and_parent(focus: Focus, phrase: str) -> None:
    text = render_prompt_text(task(Stage.HARDWARE_TUNING, focus))
    assert SUMMARY in text and "PARENT-SOURCE-MARKER" in text and "(c3)" in text
    assert phrase in text and f'focus "{focus.value}"' in text and DESCRIPTION in text
    others = {"Focus on parallel mapping", "Focus on tiling", "Focus on memory"} - {phrase}
    assert not any(o in text for o in others)


def test_messages_match_rendered_text_and_repair_carries_error() -> None:
    t = task()
    system, user = build_messages(t)
    assert isinstance(system, SystemMessage) and isinstance(user, HumanMessage)
    assert render_prompt_text(t) == f"=== system ===\n{system.content}\n\n=== user ===\n{user.content}\n"
    repair = build_repair_message(t, "ERROR-LINE-XYZ")
    assert "ERROR-LINE-XYZ" in repair.content and "(self, in_features, out_features, scale)" in repair.content


def test_tf32_rule_follows_allow_tf32_and_cuda_contract() -> None:
    source = PROBLEM.read_text() + "\nALLOW_TF32 = True\n"
    assert "do not use TF32" not in render_prompt_text(task(problem_source=source))
    cuda = render_prompt_text(task(backend=Backend.CUDA))
    assert "load_inline" in cuda and "CUDA C++" in cuda and "@triton.jit" not in cuda


def test_inconsistent_tasks_are_rejected() -> None:
    with pytest.raises(ValueError, match="does not belong to stage"):
        render_prompt_text(task(Stage.ALGORITHM_DESIGN, Focus.TILING))
    with pytest.raises(ValueError, match="needs a parent"):
        render_prompt_text(task(Stage.HARDWARE_TUNING, Focus.TILING, parent=None))
