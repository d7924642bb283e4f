"""One configuration object for a run: agents, backend, device, budgets, packs, evaluation.

Everything a run needs to be reproduced is here and is written to ``RUN_DIR/config.json``;
``egg optimize --resume RUN_DIR`` reads it back, so a resumed run uses the same settings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from egg.errors import EggInputError
from egg.vocabulary import Backend


class Budget(BaseModel):
    """Limits that stop a run; whichever is reached first ends it (finalize still runs)."""

    max_candidates: int = Field(default=24, ge=1, description="evaluated candidates, both stages")
    max_llm_calls: int = Field(default=40, ge=0)
    max_tokens: int = Field(default=400_000, ge=0, description="LLM tokens, input + output")
    max_wall_s: float = Field(default=1800.0, gt=0)
    stage1_rounds: int = Field(default=2, ge=1, description="R: design rounds in stage 1")
    stage2_rounds: int = Field(default=2, ge=0, description="refinement rounds in stage 2")
    designers: int = Field(default=2, ge=1, description="N: LLM designer agents fanned out per round")
    top_k: int = Field(default=2, ge=1, description="stage-1 candidates refined in stage 2")


def cache_root() -> Path:
    """EGG's cache directory: ``EGG_CACHE_DIR``, default ``~/.cache/egg`` (optimized modules, the
    transition memory)."""
    return Path(os.environ.get("EGG_CACHE_DIR", Path.home() / ".cache" / "egg"))


def default_budget(llm: str) -> Budget:
    """The budget a run gets when the user names none.

    Expert agents alone (``llm == "none"``) offer every structural variant in stage-1 round 1 and
    have nothing new in later rounds, and their tuners order configs by heuristic, so a second
    refinement round and a second lineage mostly re-measure near-identical kernels. Their default
    is therefore one round each, the best structure refined, 8 candidates: about a minute per
    problem on an H200 (BENCHMARKS.md), well inside issue 5's three minutes. LLM runs keep the
    wider default, where later rounds bring new code.
    """
    if llm == "none":
        return Budget(max_candidates=8, stage1_rounds=1, stage2_rounds=1, top_k=1)
    return Budget()


_BUDGET_KEYS = {
    "candidates": "max_candidates",
    "llm_calls": "max_llm_calls",
    "tokens": "max_tokens",
    "wall": "max_wall_s",
    "rounds": "stage1_rounds",
    "stage1_rounds": "stage1_rounds",
    "stage2_rounds": "stage2_rounds",
    "designers": "designers",
    "top_k": "top_k",
}


def parse_budget(spec: str | None, base: Budget | None = None) -> Budget:
    """``--budget candidates=12,wall=600s,llm_calls=20`` -> Budget (one-line errors)."""
    budget = (base or Budget()).model_copy()
    if not spec:
        return budget
    values = budget.model_dump()
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, raw = part.partition("=")
        field = _BUDGET_KEYS.get(key.strip())
        if not sep or field is None:
            raise EggInputError(
                f"--budget: expected KEY=VALUE with KEY in {', '.join(sorted(_BUDGET_KEYS))}, got {part!r}"
            )
        raw = raw.strip()
        match = re.fullmatch(r"(\d+(?:\.\d+)?)(s|m|min)?", raw)
        if not match:
            raise EggInputError(f"--budget: {key}: expected a number, got {raw!r}")
        number = float(match.group(1)) * (60 if match.group(2) in ("m", "min") else 1)
        values[field] = number if field == "max_wall_s" else int(number)
    try:
        return Budget.model_validate(values)
    except ValueError as exc:
        raise EggInputError(f"--budget: {' '.join(str(exc).split())}") from None


ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class LLMOptions(BaseModel):
    """How LLM requests are made: ``--llm-*`` flags, else ``EGG_LLM_*`` variables, else these defaults.

    Resolved once when a run starts and written to ``config.json``, so a resumed run asks the same
    way. ``max_tokens`` caps each answer (None: not sent, the server's own limit applies);
    ``temperature`` and ``reasoning_effort`` are not sent unless set.
    """

    model_config = ConfigDict(extra="forbid")  # a misspelt option is an error, not ignored

    timeout_s: float = Field(default=120.0, gt=0, description="seconds one HTTP request may take")
    max_retries: int = Field(default=4, ge=0, description="retries of a failed request (429, 5xx, timeouts)")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=16384, ge=1, description="output tokens per answer")
    reasoning_effort: ReasoningEffort | None = None
    streaming: bool = False


# option -> (flag, environment variable); README (*LLM configuration*) lists the same table
LLM_OPTION_SOURCES: dict[str, tuple[str, str]] = {
    "timeout_s": ("--llm-timeout", "EGG_LLM_TIMEOUT"),
    "max_retries": ("--llm-retries", "EGG_LLM_MAX_RETRIES"),
    "temperature": ("--llm-temperature", "EGG_LLM_TEMPERATURE"),
    "max_tokens": ("--llm-max-tokens", "EGG_LLM_MAX_TOKENS"),
    "reasoning_effort": ("--llm-reasoning-effort", "EGG_LLM_REASONING_EFFORT"),
    "streaming": ("--llm-stream", "EGG_LLM_STREAM"),
}
_UNSET = {"", "default", "unset"}
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _option_value(name: str, raw: str, origin: str) -> Any:
    text = raw.strip().lower()
    if name in ("temperature", "reasoning_effort") and text in _UNSET:
        return None
    if name == "max_tokens" and text in _UNSET | {"0", "none"}:
        return None  # 0 or none: send no limit
    if name == "streaming":
        if text in _TRUE | _FALSE:
            return text in _TRUE
        raise EggInputError(f"{origin}: expected on or off, got {raw!r}")
    if name == "timeout_s":
        match = re.fullmatch(r"(\d+(?:\.\d+)?)(s|m|min)?", text)
        if not match:
            raise EggInputError(f"{origin}: expected seconds (e.g. 120 or 2m), got {raw!r}")
        return float(match.group(1)) * (60 if match.group(2) in ("m", "min") else 1)
    return raw.strip()


def llm_options(
    flags: Mapping[str, str | None] | None = None, env: Mapping[str, str] | None = None
) -> LLMOptions:
    """Resolve :class:`LLMOptions`: a flag given (not None) wins over its variable, which wins over
    the default. One-line errors name the flag or variable and what was expected."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for name, (flag, var) in LLM_OPTION_SOURCES.items():
        flag_value = (flags or {}).get(name)
        if flag_value is not None:
            values[name], origins[name] = _option_value(name, str(flag_value), flag), flag
        elif env.get(var, "").strip():
            values[name], origins[name] = _option_value(name, env[var], var), var
    try:
        return LLMOptions.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else ""
        raise EggInputError(f"{origins.get(name, name)}: {error['msg']}, got {values.get(name)!r}") from None


class RunConfig(BaseModel):
    llm: str = "none"  # none | PROVIDER:MODEL | replay:FILE | python:CLASS[:MODEL] | scripted (tests)
    llm_options: LLMOptions = Field(default_factory=LLMOptions)
    backend: Backend = Backend.TRITON
    device: str = "auto"
    budget: Budget = Field(default_factory=Budget, description="default: default_budget(llm)")
    principles: list[str] = Field(default_factory=list, description="extra pack paths, in order")
    shapes: str | None = None  # shape sets each candidate is checked on (None: every declared set)
    strict_fp32: bool = False  # cuDNN TF32 off for reference, baselines and candidates (PyTorch leaves it on)
    allow_tf32: bool = False  # TF32 on for matmuls and convolutions (as a problem's ALLOW_TF32)
    match_eager: bool = False  # floating outputs against eager only (no exact route: egg.evaluate.anchor)
    trials: int = 5
    timing_runs: int = 100
    timeout_s: float = 300.0
    seed: int = 0
    expert_seeds: bool = True  # with an LLM: expert agents add a first candidate in stage 1
    principle_token_budget: int = 1500
    context_token_budget: int = 1200
    # the transition memory (egg/memory): None = the cache directory's memory.sqlite
    memory: str | None = Field(default=None, description="transition memory file (None: the cache directory's)")
    use_memory: bool = Field(default=True, description="--no-memory: neither read nor write the memory")
    read_memory: bool = Field(default=True, description="--memory-record-only: record every evaluated candidate "
                              "and read nothing (the agents decide as with --no-memory)")
    memory_token_budget: int = 400
    # profiler evidence for the stage winners on a GPU: ncu where it works (auto), or the roofline only
    profile: Literal["auto", "roofline"] = "auto"

    @model_validator(mode="before")
    @classmethod
    def _budget_follows_llm(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("budget") is None:
            data = {**data, "budget": default_budget(str(data.get("llm") or "none"))}
        return data

    def pack_paths(self) -> list[Path]:
        return [Path(p) for p in self.principles]
