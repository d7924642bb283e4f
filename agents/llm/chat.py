"""The one place that calls chat models: one exchange, with retries, accounting and a transcript.

Retries are tenacity's here, never the client's (:mod:`agents.llm.models` switches those off), so
which errors are retried, how long we wait and every request are explicit and logged. What each
failure means is :mod:`agents.llm.errors`'. Every request is counted as it ends (``on_request``),
failed and timed-out ones too, and every failed request gets a transcript line of its own.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import structlog
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, message_chunk_to_message
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from agents.llm.cache import CACHED_MARK
from agents.llm.config import LLMConfig
from agents.llm.endpoint import EndpointState
from agents.llm.errors import (
    LLMCallError,
    StreamCut,
    describe_error,
    is_transient,
    rejects_endpoint,
    retry_after_s,
    status_of,
)
from agents.llm.transcript import CallMeta, Transcript, make_record, message_text
from agents.protocol import AgentExhausted, ServiceFailed, TokenUsage

log = structlog.get_logger(__name__)

RequestFn = Callable[[TokenUsage], None]


def wait_strategy(cfg: LLMConfig) -> Callable[[RetryCallState], float]:
    """Exponential backoff with full jitter, never shorter than a server's Retry-After."""

    def wait(state: RetryCallState) -> float:
        ceiling = min(cfg.retry_max_s, cfg.retry_initial_s * 2 ** (state.attempt_number - 1))
        delay = random.uniform(0, ceiling)
        exc = state.outcome.exception() if state.outcome else None
        after = retry_after_s(exc)
        if after is not None:
            delay = max(delay, min(after, cfg.retry_max_s))
        return delay

    return wait


def usage_of(message: AIMessage) -> TokenUsage | None:
    meta = message.usage_metadata
    if not meta:
        return None
    return TokenUsage(
        input_tokens=meta.get("input_tokens", 0),
        output_tokens=meta.get("output_tokens", 0),
        total_tokens=meta.get("total_tokens", 0),
        calls=1,
    )


def finish_reason(message: AIMessage) -> str | None:
    """Why the answer ended: Chat Completions' ``finish_reason``; the Responses API's
    ``incomplete`` status with ``max_output_tokens`` reads as ``length``."""
    meta = message.response_metadata or {}
    reason = meta.get("finish_reason")
    if reason is None and meta.get("status") == "incomplete":
        details = meta.get("incomplete_details") or {}
        reason = "length" if details.get("reason") == "max_output_tokens" else "incomplete"
    return reason if isinstance(reason, str) else None


def _stream(model: BaseChatModel, messages: list[BaseMessage], cfg: LLMConfig) -> AIMessage:
    chunks = None
    for chunk in model.stream(messages):
        chunks = chunk if chunks is None else chunks + chunk
    if chunks is None:
        message = AIMessage(content="")
    else:
        merged = message_chunk_to_message(chunks)
        assert isinstance(merged, AIMessage)
        message = merged
    # A server that closes the connection mid-answer ends the stream without an error: only the
    # missing finish_reason tells a cut answer from a complete one.
    if cfg.checks_finish_reason and not message.response_metadata.get(CACHED_MARK) and finish_reason(message) is None:
        raise StreamCut(f"the stream ended after {len(message_text(message))} characters without a finish_reason")
    return message


def invoke_with_retries(
    model: BaseChatModel,
    messages: list[BaseMessage],
    cfg: LLMConfig,
    transcript: Transcript | None = None,
    meta: CallMeta | None = None,
    *,
    endpoint: EndpointState | None = None,
    on_request: RequestFn | None = None,
) -> AIMessage:
    """One exchange with ``model``: requests until an answer, retrying transient failures.

    Raises :class:`AgentExhausted` unchanged (replay ran out); :class:`ServiceFailed` when the
    endpoint refuses us (401/403/404) or stays down past the retries (and marks ``endpoint``
    down, so no other agent pays for it again), or when ``endpoint`` was already down;
    :class:`LLMCallError` when only this request failed (a 400, say).
    """
    meta = meta or CallMeta(agent="llm")
    bound = log.bind(agent=meta.agent, round=meta.round, attempt=meta.attempt, llm=cfg.label())
    started = time.monotonic()
    tries = 0
    count = on_request or (lambda usage: None)

    def once() -> AIMessage:
        nonlocal tries
        if endpoint is not None:
            endpoint.check()
        tries += 1
        t0 = time.monotonic()
        try:
            result = _stream(model, messages, cfg) if cfg.streaming else model.invoke(messages)
        except (AgentExhausted, ServiceFailed):
            raise
        except Exception as exc:
            latency = round(time.monotonic() - t0, 3)
            count(TokenUsage(calls=1, failed_calls=1))
            error = describe_error(exc)
            if transcript is not None:
                record = make_record(meta, messages, response=None, usage=None, started=t0, tries=tries,
                                     error=error, status=status_of(exc), try_number=tries)
                transcript.append(record)
            # a retry is worth a warning; a final failure is logged once, by whoever handles it
            (bound.warning if is_transient(exc) else bound.info)(
                "llm.request_failed", tries=tries, transient=is_transient(exc), error=error, latency_s=latency
            )
            raise
        assert isinstance(result, AIMessage)
        count(usage_of(result) or TokenUsage(calls=1))
        bound.info("llm.request_ok", tries=tries, latency_s=round(time.monotonic() - t0, 3))
        return result

    retrying = Retrying(
        stop=stop_after_attempt(cfg.max_retries + 1),
        wait=wait_strategy(cfg),
        retry=retry_if_exception(is_transient),
        reraise=True,
    )
    try:
        message = retrying(once)
    except (AgentExhausted, ServiceFailed):
        raise
    except Exception as exc:
        error = describe_error(exc)
        bound.info("llm.call_failed", tries=tries, error=error)
        if rejects_endpoint(exc):
            reason = f"{cfg.url} refused the request: {error}"
        elif is_transient(exc):
            reason = f"{cfg.url} failed {tries} requests in a row; last: {error}"
        else:
            raise LLMCallError(f"--llm {cfg.label()}: request failed: {error}", tries=tries,
                               status=status_of(exc)) from exc
        if endpoint is not None:
            raise endpoint.fail(reason) from exc
        raise ServiceFailed(cfg.label(), reason) from exc
    usage = usage_of(message)
    # An answer served by the resume cache is already in the transcript: do not write it twice.
    if transcript is not None and not message.response_metadata.get(CACHED_MARK):
        transcript.append(
            make_record(
                meta,
                messages,
                response=message_text(message),
                usage=usage.model_dump(include={"input_tokens", "output_tokens", "total_tokens"}) if usage else None,
                started=started,
                tries=tries,
                finish_reason=finish_reason(message),
            )
        )
    bound.info(
        "llm.call_ok",
        tries=tries,
        latency_s=round(time.monotonic() - started, 3),
        **(usage.model_dump(include={"input_tokens", "output_tokens", "total_tokens"}) if usage else {}),
    )
    return message
