"""invoke_with_retries and LLMAgent against a real OpenAI-compatible HTTP server on 127.0.0.1 (llm_stub)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import httpx2
import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from agents.llm.agent import LLMAgent
from agents.llm.chat import invoke_with_retries
from agents.llm.config import LLMConfig, parse_llm_spec
from agents.llm.endpoint import EndpointState
from agents.llm.errors import LLMCallError, is_transient
from agents.llm.models import adopt_chat_model, build_chat_model, request_options
from agents.llm.transcript import CallMeta, Transcript
from agents.protocol import AgentTask, ServiceFailed, TokenUsage
from egg.vocabulary import Backend, Focus, Stage

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
GOOD = (FIXTURES / "candidates" / "add_relu_triton.py").read_text()
MESSAGES = [HumanMessage(content="write a kernel")]


def config(stub, **overrides: object) -> LLMConfig:  # type: ignore[no-untyped-def]
    fields: dict[str, object] = dict(retry_initial_s=0.01, retry_max_s=0.05, max_retries=3)
    fields.update(overrides)
    return parse_llm_spec("local:tiny-model", env={"EGG_LLM_BASE_URL": stub.base_url}, **fields)


def task() -> AgentTask:
    return AgentTask(
        problem_path=str(PROBLEM), problem_source=PROBLEM.read_text(),
        problem_description="x, y: float32 [37, 129]", stage=Stage.ALGORITHM_DESIGN,
        focus=Focus.STRUCTURE, backend=Backend.TRITON, agent_name="llm-0",
    )


class Meter:
    """Collects what invoke_with_retries reports per request."""

    def __init__(self) -> None:
        self.total = TokenUsage()

    def __call__(self, usage: TokenUsage) -> None:
        self.total = self.total + usage


def test_transient_errors_are_retried_each_request_counted_and_logged(openai_stub, tmp_path: Path) -> None:
    openai_stub.set_script(
        {"status": 429, "headers": {"Retry-After": "0"}},
        {"status": 500},
        {"content": "hello from the stub"},
    )
    cfg = config(openai_stub)
    transcript, meter = Transcript(tmp_path / "transcript.jsonl"), Meter()
    reply = invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg, transcript, CallMeta(agent="x"),
                                on_request=meter)
    assert reply.content == "hello from the stub"
    assert len(openai_stub.requests) == 3
    assert openai_stub.requests[0]["model"] == "tiny-model"
    assert openai_stub.requests[0]["messages"] == [{"role": "user", "content": "write a kernel"}]
    # every request counts, the failed ones too; tokens are what the server reported
    assert (meter.total.calls, meter.total.failed_calls, meter.total.total_tokens) == (3, 2, 18)
    # each failed request has a line of its own: status, error, latency; then the answer
    failed_429, failed_500, answer = transcript.records()
    assert (failed_429.status, failed_429.try_number, failed_429.response) == (429, 1, None)
    assert (failed_500.status, failed_500.try_number) == (500, 2)
    assert "RateLimitError" in (failed_429.error or "") and failed_429.latency_s >= 0
    assert answer.tries == 3 and answer.error is None and answer.finish_reason == "stop"
    assert answer.usage == {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}


def test_retry_after_is_honoured(openai_stub) -> None:
    openai_stub.set_script({"status": 429, "headers": {"Retry-After": "1"}}, {"content": "after the wait"})
    cfg = config(openai_stub, retry_max_s=2.0)
    start = time.monotonic()
    reply = invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg)
    assert reply.content == "after the wait"
    assert 1.0 <= time.monotonic() - start < 5


def test_streaming_accumulates_chunks_and_usage(openai_stub, tmp_path: Path) -> None:
    openai_stub.set_script({"status": 503}, {"content": "streamed answer in four pieces"})
    cfg = config(openai_stub, streaming=True)
    transcript = Transcript(tmp_path / "transcript.jsonl")
    reply = invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg, transcript, CallMeta(agent="x"))
    assert reply.content == "streamed answer in four pieces"
    assert [r.get("stream") for r in openai_stub.requests] == [True, True]
    assert reply.usage_metadata is not None and reply.usage_metadata["total_tokens"] == 18
    assert transcript.records()[-1].usage == {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}


def test_a_stream_cut_mid_body_is_retried_not_accepted(openai_stub, tmp_path: Path) -> None:
    whole = "the complete answer has exactly eight words here"
    openai_stub.set_script({"content": whole, "cut": True}, {"content": whole})
    cfg = config(openai_stub, streaming=True)
    transcript, meter = Transcript(tmp_path / "transcript.jsonl"), Meter()
    reply = invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg, transcript, CallMeta(agent="x"),
                                on_request=meter)
    assert reply.content == whole
    assert len(openai_stub.requests) == 2 and (meter.total.calls, meter.total.failed_calls) == (2, 1)
    cut, answer = transcript.records()
    assert "StreamCut" in (cut.error or "") and "without a finish_reason" in (cut.error or "")
    assert answer.response == whole and answer.tries == 2


def test_transport_errors_of_httpx_and_httpx2_are_transient() -> None:
    # openai >= 3 runs on httpx2: a stream that breaks outside its error mapping raises httpx2's errors
    assert is_transient(httpx2.RemoteProtocolError("peer closed connection"))
    assert is_transient(httpx2.ReadTimeout("timed out"))
    assert is_transient(httpx.RemoteProtocolError("peer closed connection"))
    assert not is_transient(ValueError("not a transport error"))


def test_a_hang_past_the_timeout_fails_the_endpoint_after_bounded_requests(openai_stub, tmp_path: Path) -> None:
    openai_stub.set_script({"delay_s": 10.0})
    cfg = config(openai_stub, request_timeout_s=0.4, max_retries=1)
    endpoint, transcript, meter = EndpointState(cfg.label()), Transcript(tmp_path / "t.jsonl"), Meter()
    start = time.monotonic()
    with pytest.raises(ServiceFailed, match="failed 2 requests in a row; last: APITimeoutError") as info:
        invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg, transcript, CallMeta(agent="x"),
                            endpoint=endpoint, on_request=meter)
    assert time.monotonic() - start < 4
    assert info.value.service == "local:tiny-model" and openai_stub.base_url in info.value.reason
    assert len(openai_stub.requests) == 2 and (meter.total.calls, meter.total.failed_calls) == (2, 2)
    assert [(r.try_number, r.response) for r in transcript.records()] == [(1, None), (2, None)]
    assert all("Timeout" in (r.error or "") for r in transcript.records())
    # another agent sharing the endpoint pays nothing for it
    with pytest.raises(ServiceFailed):
        invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg, endpoint=endpoint)
    assert len(openai_stub.requests) == 2


def test_a_bad_request_fails_only_that_request(openai_stub) -> None:
    openai_stub.set_script({"status": 400}, {"content": "never reached"})
    cfg = config(openai_stub)
    endpoint = EndpointState(cfg.label())
    with pytest.raises(LLMCallError, match=r"request failed: .*\(HTTP 400\)") as info:
        invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg, endpoint=endpoint)
    assert info.value.status == 400 and endpoint.failure is None
    assert len(openai_stub.requests) == 1


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_refused_key_or_model_during_a_run_fails_the_endpoint_at_once(openai_stub, status: int) -> None:
    openai_stub.set_script({"status": status})
    cfg = config(openai_stub)
    endpoint = EndpointState(cfg.label())
    with pytest.raises(ServiceFailed, match=f"refused the request: .*HTTP {status}"):
        invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg, endpoint=endpoint)
    assert len(openai_stub.requests) == 1 and endpoint.failure is not None


def test_retries_are_bounded_by_max_retries(openai_stub) -> None:
    openai_stub.set_script({"status": 502})
    cfg = config(openai_stub, max_retries=2)
    with pytest.raises(ServiceFailed, match="failed 3 requests"):
        invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg)
    assert len(openai_stub.requests) == 3


def test_output_cap_and_options_are_sent_as_each_api_wants(openai_stub) -> None:
    cfg = config(openai_stub, max_tokens=512, temperature=0.2, reasoning_effort="low")
    invoke_with_retries(build_chat_model(cfg), MESSAGES, cfg)
    compatible = openai_stub.requests[-1]
    assert compatible["max_tokens"] == 512 and "max_completion_tokens" not in compatible
    assert (compatible["temperature"], compatible["reasoning_effort"]) == (0.2, "low")
    env = {"OPENAI_BASE_URL": openai_stub.base_url, "OPENAI_API_KEY": "sk-test"}
    reasoning = parse_llm_spec("openai:gpt-5-mini", env=env, max_tokens=512, temperature=0.2, reasoning_effort="low")
    invoke_with_retries(build_chat_model(reasoning), MESSAGES, reasoning)
    sent = openai_stub.requests[-1]
    assert sent["max_completion_tokens"] == 512 and "max_tokens" not in sent
    assert sent["reasoning_effort"] == "low" and "temperature" not in sent
    assert request_options(reasoning)[1] == ["temperature 0.2 not sent: gpt-5-mini accepts only its default"]
    plain = parse_llm_spec("openai:gpt-4o-mini", env=env, reasoning_effort="high")
    invoke_with_retries(build_chat_model(plain), MESSAGES, plain)
    assert "reasoning_effort" not in openai_stub.requests[-1]
    assert "not a reasoning model" in request_options(plain)[1][0]


def test_a_user_chat_model_runs_under_our_retries_and_timeout(openai_stub) -> None:
    user_model = ChatOpenAI(model="tiny-model", base_url=openai_stub.base_url, api_key="k", max_retries=6)
    cfg = config(openai_stub, max_retries=1, request_timeout_s=0.4)
    adopted, notes = adopt_chat_model(user_model, cfg)
    assert user_model.max_retries == 6 and user_model.root_client.max_retries == 6  # the user's object is untouched
    assert "max_retries=0" in notes[0] and "0.4 s" in notes[0]
    openai_stub.set_script({"status": 500})
    with pytest.raises(ServiceFailed, match="failed 2 requests"):
        invoke_with_retries(adopted, MESSAGES, cfg)
    assert len(openai_stub.requests) == 2  # 1 + our one retry, none of its six stacked on top
    openai_stub.set_script({"delay_s": 10.0})
    start = time.monotonic()
    with pytest.raises(ServiceFailed, match="APITimeoutError"):
        invoke_with_retries(adopted, MESSAGES, cfg)
    assert time.monotonic() - start < 4  # our 0.4 s, not the client's default of 600 s


def test_llm_agent_end_to_end_over_http(openai_stub, tmp_path: Path) -> None:
    openai_stub.set_script(
        {"status": 429, "headers": {"Retry-After": "0"}},
        {"content": "I will write a fused kernel."},
        {"content": f"```python\n{GOOD}```\nSTRUCTURE: fused\nPRINCIPLES: none"},
    )
    transcript = Transcript(tmp_path / "transcript.jsonl")
    agent = LLMAgent("llm-0", config(openai_stub), transcript=transcript)
    [draft] = agent.propose(task())
    assert draft.source == GOOD and draft.principle_ids == []
    assert draft.llm_usage is not None and draft.llm_usage.total_tokens == 36
    assert (agent.last_usage.calls, agent.last_usage.failed_calls) == (3, 1)
    assert [(r.attempt, r.tries, r.status) for r in transcript.records()] == [(0, 1, 429), (0, 2, None), (1, 1, None)]
    repair_request = openai_stub.requests[2]["messages"]
    assert repair_request[-2] == {"role": "assistant", "content": "I will write a fused kernel."}
    assert "no code found" in repair_request[-1]["content"]


def test_an_answer_cut_at_the_token_limit_gets_a_repair_turn_asking_for_a_shorter_one(openai_stub) -> None:
    truncated = f"Here is my plan, explained at length.\n```python\n{GOOD[: len(GOOD) // 2]}"
    openai_stub.set_script(
        {"content": truncated, "finish_reason": "length"},
        {"content": f"```python\n{GOOD}```\nSTRUCTURE: fused"},
    )
    agent = LLMAgent("llm-0", config(openai_stub, max_tokens=300))
    [draft] = agent.propose(task())
    assert draft.source == GOOD
    repair = openai_stub.requests[1]["messages"][-1]["content"]
    assert "cut off at the output-token limit (300 tokens)" in repair
    assert "Answer again, shorter" in repair
    assert draft.notes and "cut off" in draft.notes[0]


def test_a_refused_request_ends_the_proposal_without_retiring_the_endpoint(openai_stub) -> None:
    openai_stub.set_script({"status": 400}, {"content": f"```python\n{GOOD}```"})
    agent = LLMAgent("llm-0", config(openai_stub))
    assert agent.propose(task()) == []
    assert "HTTP 400" in agent.last_errors[-1] and agent.last_usage.failed_calls == 1
    [draft] = agent.propose(task())  # the next turn asks again
    assert draft.source == GOOD
