"""One configuration object for a run: agents, backend, device, budgets, packs, evaluation.

Everything a run needs to be reproduced is here and is written to ``RUN_DIR/config.json``;
``egg optimize --resume RUN_DIR`` reads it back, so a resumed run uses the same settings.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

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


class RunConfig(BaseModel):
    llm: str = "none"  # none | PROVIDER:MODEL | replay:FILE | scripted (tests)
    backend: Backend = Backend.TRITON
    device: str = "auto"
    budget: Budget = Field(default_factory=Budget, description="default: default_budget(llm)")
    principles: list[str] = Field(default_factory=list, description="extra pack paths, in order")
    shapes: str | None = None  # shape sets each candidate is checked on (None: default only)
    trials: int = 5
    timing_runs: int = 100
    timeout_s: float = 300.0
    seed: int = 0
    expert_seeds: bool = True  # with an LLM: expert agents add a first candidate in stage 1
    principle_token_budget: int = 1500
    context_token_budget: int = 1200

    @model_validator(mode="before")
    @classmethod
    def _budget_follows_llm(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("budget") is None:
            data = {**data, "budget": default_budget(str(data.get("llm") or "none"))}
        return data

    def pack_paths(self) -> list[Path]:
        return [Path(p) for p in self.principles]
