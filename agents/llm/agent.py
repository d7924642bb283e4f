"""LLMAgent: the Agent that asks a chat model for a candidate.

One proposal is one exchange: the stage/focus prompt, then up to ``repair_turns`` follow-ups when
the answer is unusable (no code, no ModelNew, wrong constructor, no kernel), each carrying the
precise parse error. Only answers that pass parsing become Drafts; whether they are correct and
fast is the harness's job.
"""

from __future__ import annotations

import structlog
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from agents.llm.chat import build_chat_model, invoke_with_retries, usage_of
from agents.llm.config import LLMConfig
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
    ) -> None:
        self.name = name
        self.cfg = cfg
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

        Call failures are not swallowed: AgentExhausted (replay ran out), EggInputError (bad key
        or model name) and LLMCallError (retries spent) reach the graph, which decides.
        """
        usage = self.last_usage = TokenUsage()  # first: a failure below must not recount the last turn
        messages: list[BaseMessage] = build_messages(task)
        known = [p.id for p in task.principles]
        errors: list[str] = []
        for attempt in range(self.repair_turns + 1):
            meta = CallMeta(
                agent=self.name, stage=task.stage, focus=task.focus, round=task.round, attempt=attempt
            )
            reply = invoke_with_retries(self.model, messages, self.cfg, self.transcript, meta)
            usage = self.last_usage = usage + (usage_of(reply) or TokenUsage(calls=1))
            answer = message_text(reply)
            result = parse_answer(answer, task.problem_source, task.backend, known)
            if result.ok:
                return [self._draft(task, result.source, result, errors, usage)]
            assert result.error is not None
            errors.append(result.error)
            log.info(
                "llm_agent.malformed_answer", agent=self.name, round=task.round,
                attempt=attempt, error=result.error,
            )
            messages = [*messages, AIMessage(content=answer), build_repair_message(task, result.error)]
        self.last_errors = [f"malformed answer (after {self.repair_turns} repair turns): {e}" for e in errors]
        log.warning(
            "llm_agent.gave_up", agent=self.name, round=task.round, repair_turns=self.repair_turns,
            last_error=errors[-1],
        )
        return []

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
