"""Run configuration: the default budget follows the agents, and --budget overrides field by field."""

from __future__ import annotations

import pytest

from egg.config import Budget, RunConfig, default_budget, parse_budget
from egg.errors import EggInputError


def test_expert_runs_default_to_a_small_budget_and_llm_runs_to_the_wide_one():
    expert, llm = RunConfig().budget, RunConfig(llm="openai:gpt-x").budget
    assert (expert.max_candidates, expert.stage1_rounds, expert.stage2_rounds, expert.top_k) == (8, 1, 1, 1)
    assert llm == Budget()
    assert llm.max_candidates > expert.max_candidates and llm.stage1_rounds > expert.stage1_rounds


def test_an_explicit_budget_is_kept_and_overrides_apply_on_the_agents_default():
    assert RunConfig(budget=Budget(max_candidates=3)).budget.max_candidates == 3
    b = parse_budget("candidates=12,wall=2m", default_budget("none"))
    assert (b.max_candidates, b.max_wall_s, b.stage2_rounds) == (12, 120.0, 1)
    assert parse_budget(None, default_budget("openai:x")) == Budget()


def test_a_bad_budget_is_a_one_line_error():
    with pytest.raises(EggInputError, match="--budget"):
        parse_budget("candidates=lots")


def test_llm_options_come_from_flags_then_environment_then_defaults():
    from egg.config import LLMOptions, llm_options

    assert llm_options({}, {}) == LLMOptions()
    assert (LLMOptions().timeout_s, LLMOptions().max_tokens, LLMOptions().streaming) == (120.0, 16384, False)
    env = {"EGG_LLM_TIMEOUT": "2m", "EGG_LLM_TEMPERATURE": "0.2", "EGG_LLM_STREAM": "on", "EGG_LLM_MAX_TOKENS": "0"}
    got = llm_options({"temperature": "0.7", "streaming": None}, env)
    assert (got.timeout_s, got.temperature, got.streaming, got.max_tokens) == (120.0, 0.7, True, None)
    assert llm_options({"reasoning_effort": "high", "max_retries": "1"}, {}).model_dump(
        include={"reasoning_effort", "max_retries"}) == {"reasoning_effort": "high", "max_retries": 1}


@pytest.mark.parametrize(("flags", "env", "named"), [
    ({"timeout_s": "soon"}, {}, "--llm-timeout: expected seconds"),
    ({}, {"EGG_LLM_STREAM": "maybe"}, "EGG_LLM_STREAM: expected on or off"),
    ({}, {"EGG_LLM_REASONING_EFFORT": "extreme"}, "EGG_LLM_REASONING_EFFORT: Input should be"),
    ({"max_tokens": "-5"}, {}, "--llm-max-tokens: Input should be greater than or equal to 1"),
])
def test_a_bad_llm_option_is_a_one_line_error_naming_its_source(flags, env, named):
    from egg.config import llm_options

    with pytest.raises(EggInputError) as info:
        llm_options(flags, env)
    assert str(info.value).startswith(named) and "\n" not in str(info.value)
