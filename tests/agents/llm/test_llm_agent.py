"""LLMAgent with langchain-core's fake chat models and with replay of its own transcript."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from agents.llm.agent import LLMAgent
from agents.llm.config import parse_llm_spec, scripted_config
from agents.llm.transcript import CallMeta, Transcript, make_record
from agents.protocol import Agent, AgentExhausted, AgentTask, PrincipleRef
from egg.problem import import_file
from egg.vocabulary import Backend, Focus, Stage

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
GOOD_TRITON = (FIXTURES / "candidates" / "add_relu_triton.py").read_text()
WRONG_SIGNATURE = GOOD_TRITON.replace("def __init__(self) -> None:", "def __init__(self, n) -> None:")
GOOD_ANSWER = (
    f"```python\n{GOOD_TRITON}```\n"
    "STRUCTURE: one fused add+relu kernel, 1-D grid\nPRINCIPLES: fuse-elementwise, mask-tail\n"
)
SIGNATURE_ERROR = (
    "ModelNew.__init__ takes (n) but Model.__init__ takes () (no parameters besides self): "
    "use exactly the same parameters in the same order"
)


def make_task(**overrides: object) -> AgentTask:
    fields: dict[str, object] = dict(
        problem_path=str(PROBLEM),
        problem_source=PROBLEM.read_text(),
        problem_description="x: float32 [37, 129]; y: float32 [37, 129]",
        stage=Stage.ALGORITHM_DESIGN,
        focus=Focus.STRUCTURE,
        backend=Backend.TRITON,
        principles=[
            PrincipleRef(id="fuse-elementwise", text="Fuse chains of elementwise ops."),
            PrincipleRef(id="mask-tail", text="Mask the tail block."),
        ],
        round=3,
        agent_name="llm-0",
    )
    fields.update(overrides)
    return AgentTask(**fields)  # type: ignore[arg-type]


def usage(n: int) -> dict[str, int]:
    return {"input_tokens": n, "output_tokens": n, "total_tokens": 2 * n}


def test_malformed_answer_gets_a_repair_turn_with_the_precise_error(tmp_path: Path) -> None:
    model = FakeMessagesListChatModel(
        responses=[
            AIMessage(content=f"```python\n{WRONG_SIGNATURE}```", usage_metadata=usage(10)),
            AIMessage(content=GOOD_ANSWER, usage_metadata=usage(20)),
        ]
    )
    transcript = Transcript.in_run_dir(tmp_path)
    agent = LLMAgent("llm-0", scripted_config([]), model=model, transcript=transcript)
    assert isinstance(agent, Agent)

    drafts = agent.propose(make_task())

    assert len(drafts) == 1
    draft = drafts[0]
    assert draft.source == GOOD_TRITON
    assert draft.principle_ids == ["fuse-elementwise", "mask-tail"]
    assert draft.structure == "one fused add+relu kernel, 1-D grid"
    assert (draft.agent, draft.stage, draft.focus) == ("llm-0", Stage.ALGORITHM_DESIGN, Focus.STRUCTURE)
    assert draft.notes == [f"repair turn 1 after: {SIGNATURE_ERROR}"]
    assert draft.llm_usage is not None
    assert (draft.llm_usage.total_tokens, draft.llm_usage.calls) == (60, 2)

    records = transcript.records()
    assert [r.attempt for r in records] == [0, 1]
    assert all(r.agent == "llm-0" and r.round == 3 and r.error is None for r in records)
    first, repair = records
    assert [m.role for m in first.messages] == ["system", "user"]
    assert [m.role for m in repair.messages] == ["system", "user", "assistant", "user"]
    assert repair.messages[2].content == first.response
    assert SIGNATURE_ERROR in repair.messages[3].content
    assert repair.response == GOOD_ANSWER and repair.usage == usage(20)
    # the file itself: one JSON object per line with the documented keys
    lines = (tmp_path / "transcript.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert set(json.loads(lines[0])) == {
        "ts", "agent", "stage", "focus", "round", "attempt", "tries", "messages", "response",
        "usage", "latency_s",
    }


def test_draft_source_is_the_runnable_candidate(tmp_path: Path) -> None:
    model = FakeMessagesListChatModel(responses=[AIMessage(content=GOOD_ANSWER)])
    [draft] = LLMAgent("a", scripted_config([]), model=model).propose(make_task())
    path = tmp_path / "candidate.py"
    path.write_text(draft.source)
    module = import_file(path, "egg_test_candidate")
    x, y = torch.randn(5, 33), torch.randn(5, 33)
    torch.testing.assert_close(module.ModelNew()(x, y), torch.relu(x + y))


def test_gives_up_after_repair_turns(tmp_path: Path) -> None:
    transcript = Transcript(tmp_path / "t.jsonl")
    cfg = scripted_config(["no code here", "still none", "nope", GOOD_ANSWER])
    agent = LLMAgent("a", cfg, transcript=transcript, repair_turns=2)
    assert agent.propose(make_task()) == []
    assert len(transcript.records()) == 3
    # the next proposal starts a fresh exchange and gets the remaining good answer
    assert agent.propose(make_task())[0].source == GOOD_TRITON
    with pytest.raises(AgentExhausted):
        agent.propose(make_task())


def test_stage2_draft_names_its_parent() -> None:
    model = FakeMessagesListChatModel(responses=[AIMessage(content=GOOD_ANSWER)])
    parent_task = make_task()
    [parent] = LLMAgent("a", scripted_config([]), model=model).propose(parent_task)
    parent.id = "cand-7"
    task = make_task(stage=Stage.HARDWARE_TUNING, focus=Focus.TILING, parent=parent,
                     stage_summary="fused kernel wins")
    [child] = LLMAgent("b", scripted_config([GOOD_ANSWER])).propose(task)
    assert (child.parent_id, child.stage, child.focus) == ("cand-7", Stage.HARDWARE_TUNING, Focus.TILING)


def test_replay_of_an_agent_transcript_round_trips(tmp_path: Path) -> None:
    transcript = Transcript(tmp_path / "transcript.jsonl")
    recorded = LLMAgent(
        "a", scripted_config([f"```python\n{WRONG_SIGNATURE}```", GOOD_ANSWER]), transcript=transcript
    ).propose(make_task())
    # a failed call is recorded too; replay must skip it, as the original run got no answer
    transcript.append(
        make_record(CallMeta(agent="a"), [HumanMessage(content="q")], response=None, usage=None,
                    started=time.monotonic(), tries=5, error="APITimeoutError: timed out")
    )
    replayed = LLMAgent("a", parse_llm_spec(f"replay:{transcript.path}", env={})).propose(make_task())
    assert [d.source for d in replayed] == [d.source for d in recorded] == [GOOD_TRITON]
    assert replayed[0].notes == recorded[0].notes
    assert replayed[0].principle_ids == recorded[0].principle_ids
