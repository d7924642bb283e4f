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
