"""The preflight against a real OpenAI-compatible HTTP server on 127.0.0.1 (llm_stub), and a dead port."""

from __future__ import annotations

import time

import pytest

from agents.llm.config import LLMConfig, parse_llm_spec
from agents.llm.preflight import PROBE_TOKENS, preflight
from egg.errors import EggInputError


def config(url: str, **overrides: object) -> LLMConfig:
    fields: dict[str, object] = dict(retry_initial_s=0.01, retry_max_s=0.05, max_retries=2, request_timeout_s=0.5)
    fields.update(overrides)
    return parse_llm_spec("local:tiny-model", env={"EGG_LLM_BASE_URL": url}, **fields)


def one_line(exc: pytest.ExceptionInfo[EggInputError]) -> str:
    message = str(exc.value)
    assert "\n" not in message and message.startswith("--llm local:tiny-model: ")
    return message


def test_a_listed_model_needs_no_completion(openai_stub) -> None:
    spent = preflight(config(openai_stub.base_url))
    assert openai_stub.model_requests == 1 and openai_stub.requests == []
    assert spent.calls == 0


def test_options_the_server_might_refuse_are_tried_once(openai_stub) -> None:
    spent = preflight(config(openai_stub.base_url, temperature=0.3, reasoning_effort="low"))
    [probe] = openai_stub.requests
    assert (probe["max_tokens"], probe["temperature"], probe["reasoning_effort"]) == (PROBE_TOKENS, 0.3, "low")
    assert (spent.calls, spent.total_tokens) == (1, 18)  # a real request: it counts
    openai_stub.set_script({"status": 400})
    with pytest.raises(EggInputError) as info:
        preflight(config(openai_stub.base_url, reasoning_effort="high"))
    assert "refused the request options {'reasoning_effort': 'high'}" in one_line(info)


def test_a_server_without_a_models_route_gets_a_one_token_request(openai_stub) -> None:
    openai_stub.models = None
    spent = preflight(config(openai_stub.base_url))
    assert len(openai_stub.requests) == 1 and spent.calls == 1


def test_connection_refused_names_the_url(dead_url: str) -> None:
    with pytest.raises(EggInputError) as info:
        preflight(config(dead_url))
    message = one_line(info)
    assert f"cannot reach {dead_url}" in message and "refused" in message.lower()


def test_a_bad_key_names_the_url_and_the_variables(openai_stub) -> None:
    openai_stub.models_status = 401
    with pytest.raises(EggInputError) as info:
        preflight(config(openai_stub.base_url))
    message = one_line(info)
    assert f"{openai_stub.base_url} rejected the API key" in message and "EGG_LLM_API_KEY" in message
    assert openai_stub.model_requests == 1  # a 401 is not retried


def test_an_unknown_model_names_the_models_served(openai_stub) -> None:
    openai_stub.models = ["other-model", "third-model"]
    openai_stub.set_script({"status": 404})
    with pytest.raises(EggInputError) as info:
        preflight(config(openai_stub.base_url))
    message = one_line(info)
    assert f"model 'tiny-model' is not served at {openai_stub.base_url}" in message
    assert "models served there: other-model, third-model" in message


def test_a_hang_past_the_timeout_is_reported_in_bounded_time(openai_stub) -> None:
    openai_stub.models_delay_s = 10.0
    start = time.monotonic()
    with pytest.raises(EggInputError) as info:
        preflight(config(openai_stub.base_url))
    assert time.monotonic() - start < 3
    assert f"{openai_stub.base_url} did not answer within 0.5 s" in one_line(info)
    assert openai_stub.model_requests == 1  # a server that hangs is not asked again


def test_a_busy_server_is_retried(openai_stub) -> None:
    openai_stub.models = None
    openai_stub.set_script({"status": 429, "headers": {"Retry-After": "0"}}, {"status": 503}, {"content": "OK"})
    spent = preflight(config(openai_stub.base_url))
    assert len(openai_stub.requests) == 3 and (spent.calls, spent.failed_calls) == (3, 2)
