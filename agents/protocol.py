"""The one Agent protocol: what the graph hands an agent and what the agent returns.

LLM agents and (later) expert agents both implement :class:`Agent`, so the graph never needs to
know which kind it is talking to. Everything here is a pydantic model because it crosses the
graph/agent boundary and is persisted in run state.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from egg.vocabulary import Backend, Focus, Stage
from principles import Decisions


class PrincipleRef(BaseModel):
    """A retrieved optimisation principle, already selected to fit the prompt budget."""

    id: str
    text: str


class TokenUsage(BaseModel):
    """Token counts summed over one or more LLM requests.

    ``calls`` counts every request sent (failed and timed-out ones too: a provider may bill them),
    ``failed_calls`` those that got no answer. Tokens are what the server reported.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    calls: int = 0
    failed_calls: int = 0

    def __add__(self, other: TokenUsage | None) -> TokenUsage:
        if other is None:
            return self
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            calls=self.calls + other.calls,
            failed_calls=self.failed_calls + other.failed_calls,
        )


class Draft(BaseModel):
    """A candidate source an agent proposes; the harness, not the agent, decides if it is good."""

    agent: str
    stage: Stage
    focus: Focus
    source: str
    structure: str  # one line: the structure chosen (what is fused, which algorithm/mapping)
    principle_ids: list[str] = Field(default_factory=list)
    # Set by the graph once the draft becomes a candidate, so a stage-2 child can name its parent.
    id: str | None = None
    parent_id: str | None = None
    notes: list[str] = Field(default_factory=list)
    llm_usage: TokenUsage | None = None


class StrategyScore(BaseModel):
    """The transition memory on one local strategy for this stage and focus, on problems like this
    one (expert agents order their moves by it; LLM agents read ``experience`` instead)."""

    direction: str
    strategy: str  # "variant fused", "reduction.XBLOCK=4", ... (egg.memory.directions)
    score: float  # expected log-gain per attempt
    attempts: int
    failure_rate: float


class Attempt(BaseModel):
    """A candidate this run evaluated: what an agent needs to react to it without parsing prose."""

    id: str
    agent: str
    stage: str
    source_sha256: str
    accepted: bool
    stage_failed: str | None = None
    reasons: list[str] = Field(default_factory=list)
    parent_id: str | None = None


class AgentTask(BaseModel):
    """What the graph hands an agent for one round."""

    problem_path: str
    problem_source: str
    problem_description: str  # analysis.describe(): shapes and dtypes spelled out
    stage: Stage
    focus: Focus
    backend: Backend
    principles: list[PrincipleRef] = Field(default_factory=list)
    stage_summary: str | None = None  # context manager's summary of stage 1 (stage 2 only)
    history: str | None = None  # compressed attempt history: errors de-duplicated, best so far
    parent: Draft | None = None  # stage 2: the candidate to refine
    feedback: list[str] = Field(default_factory=list)  # harness reasons for earlier attempts
    experience: str | None = None  # the transition memory's strategies for this stage and focus
    evidence: str | None = None  # stage 2: the profiler's bottleneck statement for the parent
    round: int = 0
    agent_name: str
    # What the principle packs decided for this problem and device (expert agents read it).
    decisions: Decisions | None = None
    strategies: list[StrategyScore] = Field(default_factory=list)  # the memory's, best first; [] without
    # Stage 1 only: the memory's stage-2 moves (every focus) on problems like this one, best first;
    # the expert designer starts its structures from the configs that paid off (agents.expert.warm_start)
    tuning_strategies: list[StrategyScore] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)  # this run's evaluated candidates so far


class AgentExhausted(Exception):
    """The agent can produce nothing more (e.g. a replay file ran out).

    The graph ends the run cleanly with the candidates it already has.
    """


class ServiceFailed(Exception):
    """The service behind an agent (an LLM endpoint) failed in a way retries cannot fix.

    Every agent whose ``service`` attribute names the same service stops with it, so a dead
    endpoint is paid for once; the run finishes with what it has and its report says so.
    """

    def __init__(self, service: str, reason: str) -> None:
        super().__init__(f"{service}: {reason}")
        self.service = service
        self.reason = reason


@runtime_checkable
class Agent(Protocol):
    name: str

    def propose(self, task: AgentTask) -> list[Draft]:
        """Return zero or more drafts for ``task``; raise AgentExhausted when out of answers."""
        ...
