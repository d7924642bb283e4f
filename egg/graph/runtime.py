"""What graph nodes need beyond the state: agents, the harness, packs, budgets, the run directory.

The runtime is built once per process (a resumed run builds a new one) and is closed over by the
nodes; nothing in it is checkpointed. :func:`run_agent_job` is the one place where an agent's
drafts become evaluated candidates, for both stages.

An agent leaves the run when it is exhausted (a replay ran out), when it raises an unexpected
error, or when the service it uses fails for good (:class:`agents.protocol.ServiceFailed`): then
every agent naming that ``service`` stops with it, and the run goes on with the others (the
expert agents), finishing with what it has.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from agents.protocol import (
    Agent,
    AgentExhausted,
    AgentTask,
    Attempt,
    Draft,
    PrincipleRef,
    ServiceFailed,
    TokenUsage,
)
from egg.config import RunConfig
from egg.device import DeviceFacts, default_facts
from egg.evaluate.harness import INFRASTRUCTURE, EvalOptions
from egg.executor import Executor
from egg.executor.spread import map_ordered
from egg.graph.experience import experience_for, remember, roofline_for, strategies_for
from egg.graph.records import (
    CandidateRecord,
    find_verdict,
    index_verdict,
    make_record,
    read_source,
    source_sha,
    write_draft,
)
from egg.memory import TransitionMemory
from egg.vocabulary import Backend, Focus, Stage
from principles import Decisions, Facts, PackSet, decide, retrieve

log = structlog.get_logger(__name__)

ProgressFn = Callable[[dict[str, Any]], None]


@dataclass
class Runtime:
    run_dir: Path
    config: RunConfig
    problem_path: Path
    problem_source: str
    harness: Executor  # the local Harness or the Ray executor: the same verdicts
    packs: PackSet
    designers: list[Agent]
    tuners: dict[Focus, list[Agent]]
    progress: ProgressFn = lambda event: None
    analysis: dict[str, Any] = field(default_factory=dict)  # set by the analyze node
    baseline: dict[str, Any] = field(default_factory=dict)  # the analyze node's reference-only timing
    started: float = field(default_factory=time.monotonic)
    usage: TokenUsage = field(default_factory=TokenUsage)
    evaluations: int = 0  # harness runs in this process (cache hits excluded)
    reserved: int = 0  # candidates counted against the budget, in this process
    prior_candidates: int = 0  # candidates already in the checkpoint when this process started
    exhausted: set[str] = field(default_factory=set)
    failed_services: dict[str, str] = field(default_factory=dict)  # service -> why it failed
    device: DeviceFacts = field(default_factory=default_facts)  # what the run tunes for
    allow_tf32: bool = False  # the problem's ALLOW_TF32: which peak the roofline evidence uses
    memory: TransitionMemory | None = None  # None: --no-memory
    run_id: str = ""  # this run in the memory
    memory_since: str | None = None  # when the run first started: later observations are not read
    problem_name: str = ""  # the problem file's name (the run directory holds a copy named problem.py)
    memory_recorded: int = 0  # observations this process added
    memory_errors: list[str] = field(default_factory=list)
    _earlier: dict[str, list[Any]] = field(default_factory=dict)  # stage -> the memory as of memory_since
    _decisions: Decisions | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- agents ----------------------------------------------------------------------------------
    def agent(self, name: str) -> Agent:
        for agent in [*self.designers, *(a for group in self.tuners.values() for a in group)]:
            if agent.name == name:
                return agent
        raise KeyError(name)

    def active(self, agent: Agent) -> bool:
        """Whether ``agent`` still takes part: not exhausted, and its service (if any) not failed."""
        service = getattr(agent, "service", None)
        return agent.name not in self.exhausted and (service is None or service not in self.failed_services)

    # -- budgets ---------------------------------------------------------------------------------
    def candidate_limit(self, stage: Stage | None = None) -> int:
        """Candidates the budget allows by the end of ``stage``. Stage 1 leaves ``top_k`` (one
        refinement of each structure stage 2 keeps) where stage 2 has rounds: a problem with as many
        structural variants as the budget has candidates (a convolution's four, under KernelBench
        sweeps' ``candidates=4``) otherwise spent it all on structures and was never tuned."""
        b = self.config.budget
        if stage is Stage.ALGORITHM_DESIGN and b.stage2_rounds > 0:
            return max(1, b.max_candidates - b.top_k)
        return b.max_candidates

    def _left(self, stage: Stage | None) -> int:
        return max(0, self.candidate_limit(stage) - self.prior_candidates - self.reserved)

    def candidates_left(self, stage: Stage | None = None) -> int:
        with self._lock:
            return self._left(stage)

    def _limit_reason(self, stage: Stage | None) -> str:
        b, limit = self.config.budget, self.candidate_limit(stage)
        if limit < b.max_candidates:
            return (f"stage 1's share of the candidate budget reached ({limit} of {b.max_candidates}; "
                    f"{b.max_candidates - limit} kept for stage 2)")
        return f"candidate budget reached ({b.max_candidates})"

    def over_budget(self, stage: Stage | None = None) -> str | None:
        b = self.config.budget
        if not self._left(stage):
            return self._limit_reason(stage)
        if self.usage.calls >= b.max_llm_calls and self.uses_llm:  # every request sent, failed ones too
            return f"LLM call budget reached ({b.max_llm_calls})"
        if self.usage.total_tokens >= b.max_tokens and self.uses_llm:
            return f"token budget reached ({b.max_tokens})"
        if time.monotonic() - self.started >= b.max_wall_s:
            return f"wall-time budget reached ({b.max_wall_s:g} s)"
        return None

    @property
    def uses_llm(self) -> bool:
        return self.config.llm != "none"

    def reserve(self, stage: Stage | None = None) -> bool:
        with self._lock:
            if not self._left(stage):
                return False
            self.reserved += 1
            return True

    # -- context ---------------------------------------------------------------------------------
    def principles_for(self, stage: Stage, focus: Focus, analysis: dict[str, Any]) -> list[PrincipleRef]:
        chosen = retrieve(
            self.packs,
            stage=stage,
            focus=focus,
            op_classes=analysis.get("op_classes", []),
            bottleneck=analysis.get("bottleneck"),
            token_budget=self.config.principle_token_budget,
        )
        return [PrincipleRef(id=p.id, text=p.text) for p in chosen]

    def decisions(self) -> Decisions | None:
        """The packs' decisions for this problem on this run's device (once the analysis exists)."""
        if not self.analysis:
            return None
        with self._lock:
            if self._decisions is None:
                self._decisions = decide(self.packs, Facts.from_analysis(self.analysis, self.device))
            return self._decisions

    def eval_options(self) -> EvalOptions:
        c = self.config
        return EvalOptions(
            device="cuda" if self.harness.device == "cuda" else "cpu",
            timeout_s=c.timeout_s,
            trials=c.trials,
            timing_runs=c.timing_runs,
            shapes=c.shapes,
            seed=c.seed,
            strict_fp32=c.strict_fp32,
            allow_tf32=c.allow_tf32,
            match_eager=c.match_eager,
            # The GPU-time split is a profiler session per candidate: 4-6 s on the H200 (2026-12-01),
            # more than the rest of the judge's overhead. Optimisation runs skip it (the kernel
            # ablation still proves the kernels do the work); `egg eval` and re-scoring report it.
            gpu_time_split=False,
        )


def build_task(rt: Runtime, job: dict[str, Any], stage: Stage, analysis: dict[str, Any]) -> AgentTask:
    focus = Focus(job["focus"])
    parent = None
    if job.get("parent_id"):
        parent = Draft(
            agent="parent",
            stage=Stage.ALGORITHM_DESIGN,
            focus=Focus.STRUCTURE,
            source=read_source(rt.run_dir, job["parent_id"]),
            structure=job.get("parent_structure") or "",
            id=job["parent_id"],
        )
    return AgentTask(
        problem_path=str(rt.problem_path),
        problem_source=rt.problem_source,
        problem_description=analysis.get("description", ""),
        stage=stage,
        focus=focus,
        backend=Backend(rt.config.backend),
        principles=rt.principles_for(stage, focus, analysis),
        stage_summary=job.get("stage_summary"),
        history=job.get("history"),
        parent=parent,
        feedback=job.get("feedback", []),
        experience=experience_for(rt, stage.value, focus.value),
        evidence=job.get("parent_evidence"),
        round=job["round"],
        agent_name=job["agent"],
        decisions=rt.decisions(),
        strategies=strategies_for(rt, stage.value, focus.value),
        tuning_strategies=strategies_for(rt, Stage.HARDWARE_TUNING.value) if stage is Stage.ALGORITHM_DESIGN else [],
        attempts=[Attempt.model_validate(a) for a in job.get("attempts", [])],
    )


def evaluate_draft(rt: Runtime, candidate_id: str, draft: Draft, round_no: int) -> CandidateRecord:
    """Archive the draft and evaluate it, reusing the verdict of an identical earlier source."""
    draft.id = candidate_id
    path = write_draft(rt.run_dir, candidate_id, draft)
    sha = source_sha(draft.source)
    cached = find_verdict(rt.run_dir, sha)
    if cached is not None and cached[1].stage_failed == INFRASTRUCTURE:
        cached = None  # no judge reached a verdict on that source: judge it now
    if cached is not None:
        earlier, verdict = cached
        log.info("graph.verdict_reused", candidate=candidate_id, of=earlier)
        record = make_record(candidate_id, draft, round_no, verdict, reused=earlier if earlier != candidate_id else None,
                             baseline=rt.baseline)
    else:
        verdict = rt.harness.evaluate(rt.problem_path, path, rt.eval_options(), path.parent)
        with rt._lock:
            rt.evaluations += 1
        index_verdict(rt.run_dir, candidate_id, sha)
        record = make_record(candidate_id, draft, round_no, verdict, reused=None, baseline=rt.baseline)
    evidence = roofline_for(rt, verdict)
    if evidence is not None:
        record.evidence, record.evidence_source = evidence.statement, evidence.source
    # A reused verdict is no new evidence (the memory has the first one); an infrastructure
    # failure is no evidence about the kernel at all.
    if cached is None and verdict.stage_failed != INFRASTRUCTURE:
        remember(rt, record, draft, verdict)
    rt.progress({"event": "candidate", "record": record})
    return record


def _count_spent(rt: Runtime, agent: Agent, drafts: list[Draft], out: dict[str, Any]) -> None:
    """Add this turn's LLM usage to the run's budget and to the checkpointed state: the agent's own
    tally when it keeps one (``last_usage``: calls whose answers yielded no draft count too),
    else what its drafts carry."""
    spent = getattr(agent, "last_usage", None)
    if not isinstance(spent, TokenUsage):
        spent = sum((d.llm_usage for d in drafts if d.llm_usage is not None), TokenUsage())
    if spent.calls:
        with rt._lock:
            rt.usage = rt.usage + spent
        out["llm_usage"].append(spent.model_dump())


def run_agent_job(rt: Runtime, job: dict[str, Any], stage: Stage, analysis: dict[str, Any]) -> dict[str, Any]:
    """One agent's turn: propose drafts, evaluate each within the budget, return state updates."""
    name = job["agent"]
    out: dict[str, Any] = {"candidates": [], "failures": [], "stop_reasons": [], "llm_usage": [],
                           "service_failures": []}
    agent = rt.agent(name)
    stop = rt.over_budget(stage)
    if stop or not rt.active(agent):
        if stop:
            out["stop_reasons"].append(stop)
        return out
    task = build_task(rt, job, stage, analysis)
    rt.progress({"event": "agent", "agent": name, "stage": stage.value, "round": job["round"]})
    try:
        drafts = agent.propose(task)
    except ServiceFailed as exc:
        _count_spent(rt, agent, [], out)
        with rt._lock:
            first = exc.service not in rt.failed_services
            rt.failed_services.setdefault(exc.service, exc.reason)
        if first:  # the agents that meet the same dead service afterwards add nothing new
            log.warning("graph.service_failed", service=exc.service, agent=name, reason=exc.reason)
            reason = f"--llm {exc.service} failed; every agent using it stopped: {exc.reason}"
            out["service_failures"].append({"service": exc.service, "reason": exc.reason, "agent": name,
                                            "stage": stage.value, "round": job["round"]})
            out["failures"].append({"agent": name, "stage": stage.value, "round": job["round"], "reasons": [reason]})
            out["stop_reasons"].append(f"LLM endpoint failed ({exc.service})")
        return out
    except AgentExhausted as exc:
        rt.exhausted.add(name)
        out["stop_reasons"].append(f"{name}: {exc or 'no more answers'}")
        _count_spent(rt, agent, [], out)
        return out
    except Exception as exc:  # noqa: BLE001 - an unexpected error in one agent must not end the run
        _count_spent(rt, agent, [], out)
        rt.exhausted.add(name)
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:400]
        log.warning("graph.agent_failed", agent=name, error=reason)
        out["failures"].append({"agent": name, "stage": stage.value, "round": job["round"],
                                "reasons": [f"agent failed and was retired from this run: {reason}"]})
        return out
    _count_spent(rt, agent, drafts, out)
    if not drafts:
        errors = list(getattr(agent, "last_errors", []) or [])
        out["failures"].append(
            {"agent": name, "stage": stage.value, "round": job["round"],
             "reasons": errors or ["the agent produced no usable candidate"]}
        )
        return out
    prefix = "s1" if stage is Stage.ALGORITHM_DESIGN else "s2"
    # Ids and budget are settled in draft order first; then the drafts are evaluated side by side,
    # as many at once as the executor has workers, and recorded in draft order.
    batch: list[tuple[str, Draft]] = []
    for index, draft in enumerate(drafts):
        if not rt.reserve(stage):
            out["stop_reasons"].append(rt._limit_reason(stage))
            break
        if job.get("parent_id") and not draft.parent_id:
            draft.parent_id = job["parent_id"]
        lineage = f"-p{source_sha(job['parent_id'])[:6]}" if job.get("parent_id") else ""
        batch.append((f"{prefix}r{job['round']}-{name}-{index}{lineage}", draft))
    records = map_ordered(lambda item: evaluate_draft(rt, item[0], item[1], job["round"]), batch,
                          rt.harness.capacity)
    out["candidates"].extend(record.model_dump(mode="json") for record in records)
    return out
