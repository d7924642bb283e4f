"""LLMAgent: the Agent that asks a chat model for a candidate.

One proposal is one exchange: the stage/focus prompt, then up to ``repair_turns`` follow-ups when
the answer is unusable (no code, no ModelNew, wrong constructor, no kernel), each carrying the
precise parse error; an answer cut off at the output-token limit (``finish_reason == "length"``)
gets a follow-up asking for a shorter one instead. Only answers that pass parsing become Drafts;
whether they are correct and fast is the harness's job.

A request that fails for this prompt only (a 400) ends the proposal with no draft; an endpoint
that is down raises :class:`ServiceFailed` (shared with every agent of the run).
"""

from __future__ import annotations

import structlog
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from agents.llm.chat import finish_reason, invoke_with_retries
from agents.llm.config import LLMConfig
from agents.llm.endpoint import EndpointState
from agents.llm.errors import LLMCallError
from agents.llm.models import build_chat_model
from agents.llm.parsing import ParseResult, parse_answer
from agents.llm.prompts import build_messages, build_repair_message
from agents.llm.transcript import CallMeta, Transcript, message_text
from agents.protocol import AgentTask, Draft, TokenUsage

log = structlog.get_logger(__name__)

DEFAULT_REPAIR_TURNS = 2


class LLMAgent:
    """An :class:`agents.protocol.Agent` backed by a chat model."""

    def __init__(
        self,
        name: str,
        cfg: LLMConfig,
        *,
        model: BaseChatModel | None = None,
        transcript: Transcript | None = None,
        repair_turns: int = DEFAULT_REPAIR_TURNS,
        endpoint: EndpointState | None = None,
    ) -> None:
        self.name = name
        self.cfg = cfg
        # Agents sharing an endpoint stop together when it fails (agents.protocol.ServiceFailed).
        self.endpoint = endpoint or EndpointState(cfg.label())
        self.service = self.endpoint.service
        # A prebuilt model wins; the factory shares one across agents so a replay file is
        # consumed in one global order.
        self.model = model if model is not None else build_chat_model(cfg)
        self.transcript = transcript
        self.repair_turns = repair_turns
        # Parse errors of the latest propose() that produced nothing: the graph reports them.
        self.last_errors: list[str] = []
        # What the latest propose() spent, kept up to date after every call: an answer that stayed
        # malformed, or a call that failed after earlier ones, still cost calls and tokens.
        self.last_usage = TokenUsage()

    def propose(self, task: AgentTask) -> list[Draft]:
        """One Draft, or [] when the answer is still malformed after the repair turns.

        AgentExhausted (replay ran out) and ServiceFailed (the endpoint is down) reach the graph,
        which decides; a request refused for this prompt alone ends this proposal with no draft.
        """
        self.last_usage = TokenUsage()  # first: a failure below must not recount the last turn
        self.last_errors = []
        messages: list[BaseMessage] = build_messages(task)
        known = [p.id for p in task.principles]
        errors: list[str] = []

        def spent(usage: TokenUsage) -> None:  # every request, as it ends
            self.last_usage = self.last_usage + usage

        for attempt in range(self.repair_turns + 1):
            meta = CallMeta(
                agent=self.name, stage=task.stage, focus=task.focus, round=task.round, attempt=attempt
            )
            try:
                reply = invoke_with_retries(self.model, messages, self.cfg, self.transcript, meta,
                                            endpoint=self.endpoint, on_request=spent)
            except LLMCallError as exc:
                self.last_errors = [*(f"earlier answer unusable: {e}" for e in errors), str(exc)]
                log.warning("llm_agent.request_failed", agent=self.name, round=task.round, error=str(exc))
                return []
            answer = message_text(reply)
            result = parse_answer(answer, task.problem_source, task.backend, known)
            if result.ok:
                return [self._draft(task, result.source, result, errors, self.last_usage)]
            assert result.error is not None
            cut = finish_reason(reply) == "length"
            error = self._cut_off(result.error) if cut else result.error
            errors.append(error)
            log.info(
                "llm_agent.malformed_answer", agent=self.name, round=task.round,
                attempt=attempt, error=error, cut_off=cut,
            )
            messages = [*messages, AIMessage(content=answer), build_repair_message(task, error, shorter=cut)]
        self.last_errors = self._malformed(errors)
        log.warning(
            "llm_agent.gave_up", agent=self.name, round=task.round, repair_turns=self.repair_turns,
            last_error=errors[-1],
        )
        return []

    def _malformed(self, errors: list[str]) -> list[str]:
        return [f"malformed answer (after {self.repair_turns} repair turns): {e}" for e in errors]

    def _cut_off(self, parse_error: str) -> str:
        limit = f" ({self.cfg.max_tokens} tokens)" if self.cfg.max_tokens else ""
        return f"the answer was cut off at the output-token limit{limit} before it was complete ({parse_error})"

    def _draft(
        self, task: AgentTask, source: str, result: ParseResult, errors: list[str], usage: TokenUsage
    ) -> Draft:
        notes = [f"repair turn {i + 1} after: {e}" for i, e in enumerate(errors)]
        return Draft(
            agent=self.name,
            stage=task.stage,
            focus=task.focus,
            source=source,
            structure=result.structure or "(not stated)",
            principle_ids=result.principle_ids,
            parent_id=task.parent.id if task.parent is not None else None,
            notes=notes,
            llm_usage=usage,
        )
