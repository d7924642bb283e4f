"""invoke_with_retries against a real OpenAI-compatible HTTP server on 127.0.0.1 (conftest)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from agents.llm.agent import LLMAgent
from agents.llm.chat import LLMCallError, build_chat_model, invoke_with_retries
from agents.llm.config import LLMConfig, parse_llm_spec
from agents.llm.transcript import CallMeta, Transcript
from agents.protocol import AgentTask
from egg.errors import EggInputError
from egg.vocabulary import Backend, Focus, Stage

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MESSAGES = [HumanMessage(content="write a kernel")]


def config(stub, **overrides: object) -> LLMConfig:  # type: ignore[no-untyped-def]
    fields: dict[str, object] = dict(retry_initial_s=0.01, retry_max_s=0.05, max_retries=3)
    fields.update(overrides)
    return parse_llm_spec("local:tiny-model", env={"EGG_LLM_BASE_URL": stub.base_url}, **fields)


def test_transient_errors_are_retried_and_usage_recorded(openai_stub, tmp_path: Path) -> None:
    openai_stub.set_script(
        {"status": 429, "headers": {"Retry-After": "0"}},
        {"status": 500},
        {"content": "hello from the stub"},
    )
    cfg = config(openai_stub)
    transcript = Transcript(tmp_path / "transcript.jsonl")
    reply = invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg, transcript, CallMeta(agent="x"))
    assert reply.content == "hello from the stub"
    assert len(openai_stub.requests) == 3
    assert openai_stub.requests[0]["model"] == "tiny-model"
    assert openai_stub.requests[0]["messages"] == [{"role": "user", "content": "write a kernel"}]
    [record] = transcript.records()
    assert record.tries == 3 and record.error is None
    assert record.usage == {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}


def test_streaming_accumulates_chunks_and_usage(openai_stub, tmp_path: Path) -> None:
    openai_stub.set_script({"status": 503}, {"content": "streamed answer in four pieces"})
    cfg = config(openai_stub, streaming=True)
    transcript = Transcript(tmp_path / "transcript.jsonl")
    reply = invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg, transcript, CallMeta(agent="x"))
    assert reply.content == "streamed answer in four pieces"
    assert [r.get("stream") for r in openai_stub.requests] == [True, True]
    assert reply.usage_metadata is not None and reply.usage_metadata["total_tokens"] == 18
    assert transcript.records()[0].usage == {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}


def test_timeouts_raise_after_bounded_attempts(openai_stub, tmp_path: Path) -> None:
    openai_stub.set_script({"delay_s": 10.0})
    cfg = config(openai_stub, request_timeout_s=1.0, max_retries=1)
    transcript = Transcript(tmp_path / "transcript.jsonl")
    start = time.monotonic()
    with pytest.raises(LLMCallError, match="call failed after 2 tries: APITimeoutError") as info:
        invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg, transcript, CallMeta(agent="x"))
    assert time.monotonic() - start < 6
    assert info.value.tries == 2 and info.value.transient
    assert len(openai_stub.requests) == 2
    [record] = transcript.records()
    assert record.response is None and record.error is not None and "Timeout" in record.error


def test_bad_request_is_not_retried(openai_stub) -> None:
    openai_stub.set_script({"status": 400}, {"content": "never reached"})
    cfg = config(openai_stub)
    with pytest.raises(LLMCallError, match=r"after 1 tries: .*\(HTTP 400\)") as info:
        invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg)
    assert not info.value.transient
    assert len(openai_stub.requests) == 1


@pytest.mark.parametrize("status", [401, 404])
def test_auth_and_model_errors_are_user_errors(openai_stub, status: int) -> None:
    openai_stub.set_script({"status": status})
    cfg = config(openai_stub)
    with pytest.raises(EggInputError, match=f"--llm local:tiny-model: endpoint rejected the request: .*HTTP {status}"):
        invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg)
    assert len(openai_stub.requests) == 1


def test_retries_are_bounded_by_max_retries(openai_stub) -> None:
    openai_stub.set_script({"status": 502})
    cfg = config(openai_stub, max_retries=2)
    with pytest.raises(LLMCallError, match="after 3 tries"):
        invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg)
    assert len(openai_stub.requests) == 3


def test_llm_agent_end_to_end_over_http(openai_stub, tmp_path: Path) -> None:
    good = (FIXTURES / "candidates" / "add_relu_triton.py").read_text()
    openai_stub.set_script(
        {"status": 429, "headers": {"Retry-After": "0"}},
        {"content": "I will write a fused kernel."},
        {"content": f"```python\n{good}```\nSTRUCTURE: fused\nPRINCIPLES: none"},
    )
    problem = FIXTURES / "problems" / "add_relu.py"
    task = AgentTask(
        problem_path=str(problem), problem_source=problem.read_text(),
        problem_description="x, y: float32 [37, 129]", stage=Stage.ALGORITHM_DESIGN,
        focus=Focus.STRUCTURE, backend=Backend.TRITON, agent_name="llm-0",
    )
    transcript = Transcript(tmp_path / "transcript.jsonl")
    [draft] = LLMAgent("llm-0", config(openai_stub), transcript=transcript).propose(task)
    assert draft.source == good and draft.principle_ids == []
    assert draft.llm_usage is not None and draft.llm_usage.total_tokens == 36
    assert [(r.attempt, r.tries) for r in transcript.records()] == [(0, 2), (1, 1)]
    repair_request = openai_stub.requests[2]["messages"]
    assert repair_request[-2] == {"role": "assistant", "content": "I will write a fused kernel."}
    assert "no code found" in repair_request[-1]["content"]
