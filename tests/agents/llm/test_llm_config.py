from __future__ import annotations

from pathlib import Path

import pytest

from agents.llm.config import DUMMY_API_KEY, parse_llm_spec, scripted_config
from egg.errors import EggInputError


def test_none_disables_llm() -> None:
    cfg = parse_llm_spec("none", env={})
    assert cfg.provider == "none" and not cfg.enabled


def test_openai_uses_key_from_env_and_default_endpoint() -> None:
    cfg = parse_llm_spec("openai:gpt-4o-mini", env={"OPENAI_API_KEY": "sk-test"})
    assert (cfg.provider, cfg.model, cfg.base_url) == ("openai", "gpt-4o-mini", None)
    assert cfg.api_key is not None and cfg.api_key.get_secret_value() == "sk-test"
    assert "sk-test" not in repr(cfg)  # secrets never reach logs
    assert (cfg.request_timeout_s, cfg.max_retries, cfg.streaming) == (120.0, 4, False)


def test_egg_variables_win_over_openai_variables() -> None:
    env = {
        "EGG_LLM_BASE_URL": "https://egg.example/v1",
        "OPENAI_BASE_URL": "https://openai.example/v1",
        "EGG_LLM_API_KEY": "egg-key",
        "OPENAI_API_KEY": "openai-key",
    }
    cfg = parse_llm_spec("vllm:Qwen/Qwen2.5-Coder-7B", env=env)
    assert cfg.provider == "compatible" and cfg.provider_name == "vllm"
    assert cfg.model == "Qwen/Qwen2.5-Coder-7B"
    assert cfg.base_url == "https://egg.example/v1"
    assert cfg.api_key is not None and cfg.api_key.get_secret_value() == "egg-key"
    assert cfg.label() == "vllm:Qwen/Qwen2.5-Coder-7B"


def test_local_endpoint_without_key_gets_dummy_key_and_model_keeps_its_tag() -> None:
    cfg = parse_llm_spec("ollama:llama3:8b", env={"OPENAI_BASE_URL": "http://localhost:11434/v1"})
    assert cfg.model == "llama3:8b"
    assert cfg.api_key is not None and cfg.api_key.get_secret_value() == DUMMY_API_KEY


def test_overrides_set_call_behaviour() -> None:
    cfg = parse_llm_spec(
        "openai:m", env={"OPENAI_API_KEY": "k"}, request_timeout_s=5, max_retries=1, streaming=True
    )
    assert (cfg.request_timeout_s, cfg.max_retries, cfg.streaming) == (5, 1, True)


def test_replay_needs_an_existing_file(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    log.write_text('{"response": "x"}\n')
    cfg = parse_llm_spec(f"replay:{log}", env={})
    assert cfg.provider == "replay" and cfg.replay_path == log
    with pytest.raises(EggInputError, match="replay file .*missing.jsonl does not exist"):
        parse_llm_spec(f"replay:{tmp_path / 'missing.jsonl'}", env={})


@pytest.mark.parametrize("spec", ["", "gpt-4o", "openai:", ":model", "scripted", "a b:c", "none:x"])
def test_bad_specs_are_one_line_errors(spec: str) -> None:
    with pytest.raises(EggInputError) as info:
        parse_llm_spec(spec, env={"OPENAI_API_KEY": "k"})
    message = str(info.value)
    assert message.startswith("--llm: expected none, replay:FILE or PROVIDER:MODEL, got")
    assert "\n" not in message


def test_compatible_provider_needs_base_url() -> None:
    with pytest.raises(EggInputError, match="needs a base URL .*EGG_LLM_BASE_URL or OPENAI_BASE_URL"):
        parse_llm_spec("vllm:some-model", env={"EGG_LLM_API_KEY": "k"})


def test_remote_endpoint_without_key_is_an_error() -> None:
    with pytest.raises(EggInputError, match="no API key"):
        parse_llm_spec("openai:gpt-4o", env={})
    with pytest.raises(EggInputError, match="no API key"):
        parse_llm_spec("together:m", env={"EGG_LLM_BASE_URL": "https://api.together.xyz/v1"})


def test_scripted_is_built_in_code() -> None:
    cfg = scripted_config(["a", "b"], max_retries=0)
    assert cfg.provider == "scripted" and cfg.script == ["a", "b"] and cfg.max_retries == 0


def test_a_chat_model_object_cannot_be_rebuilt_from_its_spec() -> None:
    # what config.json records for egg.optimize(..., llm=ChatOpenAI(...)); a CLI --resume cannot rebuild it
    with pytest.raises(EggInputError, match="chat model object passed to egg.optimize"):
        parse_llm_spec("python:ChatOpenAI:gpt-4o-mini", env={})


def test_options_reach_the_config() -> None:
    from agents.llm.config import option_overrides
    from egg.config import LLMOptions

    options = LLMOptions(timeout_s=7, max_retries=0, temperature=0.1, max_tokens=99, reasoning_effort="low",
                         streaming=True)
    cfg = parse_llm_spec("openai:o4-mini", env={"OPENAI_API_KEY": "k"}, **option_overrides(options))
    assert (cfg.request_timeout_s, cfg.max_retries, cfg.temperature, cfg.max_tokens, cfg.reasoning_effort,
            cfg.streaming, cfg.checks_finish_reason) == (7, 0, 0.1, 99, "low", True, True)
    assert cfg.url == "https://api.openai.com/v1"
