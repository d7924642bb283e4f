"""Graph state: JSON-able TypedDicts, so checkpoints are plain and a run can resume from them.

Subgraphs have narrow input/output schemas. Each stage's subgraph receives no ``candidates`` from
the parent and returns only the candidates it created, so the parent's ``operator.add`` reducer
never sees an item twice; stage 2 gets stage 1's results as ``parents`` instead.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict


class RunState(TypedDict, total=False):
    problem_path: str
    analysis: dict[str, Any]
    baseline: dict[str, Any]
    candidates: Annotated[list[dict[str, Any]], operator.add]
    failures: Annotated[list[dict[str, Any]], operator.add]  # agent attempts that yielded no candidate
    stage1_summary: dict[str, Any]
    stage2_summary: dict[str, Any]
    parents: list[str]  # stage-1 candidate ids refined in stage 2
    parent_records: list[dict[str, Any]]  # stage-1 records, handed to stage 2 (not via the reducer)
    stop_reasons: Annotated[list[str], operator.add]
    # TokenUsage of each agent turn that called an LLM: the checkpoint, not the process, remembers
    # what was spent, so a resumed run's budgets and report count earlier calls too
    llm_usage: Annotated[list[dict[str, Any]], operator.add]
    # a service (LLM endpoint) that failed for good: {"service", "reason", "agent", "stage", "round"}
    service_failures: Annotated[list[dict[str, Any]], operator.add]
    best_id: str | None


class StageInput(TypedDict, total=False):
    problem_path: str
    analysis: dict[str, Any]
    baseline: dict[str, Any]
    stage1_summary: dict[str, Any]
    parents: list[str]
    parent_records: list[dict[str, Any]]


class StageOutput(TypedDict, total=False):
    candidates: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    stop_reasons: list[str]
    llm_usage: list[dict[str, Any]]
    service_failures: list[dict[str, Any]]


class StageState(StageInput, total=False):
    round: int
    candidates: Annotated[list[dict[str, Any]], operator.add]
    failures: Annotated[list[dict[str, Any]], operator.add]
    stop_reasons: Annotated[list[str], operator.add]
    llm_usage: Annotated[list[dict[str, Any]], operator.add]
    service_failures: Annotated[list[dict[str, Any]], operator.add]
    done: bool


class AgentJob(TypedDict, total=False):
    """The payload of one ``Send``: which agent works on what, with its context already built."""

    agent: str
    focus: str
    round: int
    parent_id: str | None
    history: str | None
    feedback: list[str]
    stage_summary: str | None
    parent_evidence: str | None  # the profiler's statement for the parent (stage 2)
    attempts: list[dict[str, Any]]  # agents.protocol.Attempt of everything evaluated so far
