"""The one place that builds chat models and calls them.

The OpenAI client's own retries are switched off (``max_retries=0``): :func:`invoke_with_retries`
retries with tenacity instead, so which errors are retried, how long we wait and every attempt
are explicit and logged. Only transient failures are retried (429, 5xx, connection errors and
timeouts); a 400/401/404 will not get better by asking again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import httpx
import openai
import structlog
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, message_chunk_to_message
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from agents.llm.cache import CACHED_MARK
from agents.llm.config import LLMConfig
from agents.llm.replay import ReplayChatModel
from agents.llm.transcript import CallMeta, Transcript, make_record, message_text
from agents.protocol import AgentExhausted, TokenUsage
from egg.errors import EggInputError

log = structlog.get_logger(__name__)


class LLMCallError(RuntimeError):
    """A chat call failed for good: a non-transient error, or transient ones past max_retries."""

    def __init__(self, message: str, *, tries: int, transient: bool) -> None:
        super().__init__(" ".join(message.split()))
        self.tries = tries
        self.transient = transient


def build_chat_model(cfg: LLMConfig) -> BaseChatModel:
    """Build the chat model ``cfg`` describes (``none`` has no model: ValueError)."""
    if cfg.provider == "none":
        raise ValueError("--llm none: there is no chat model to build")
    if cfg.provider == "replay":
        assert cfg.replay_path is not None
        return ReplayChatModel.from_file(cfg.replay_path)
    if cfg.provider == "scripted":
        return ReplayChatModel.from_responses(cfg.script or [])
    # Imported here: langchain_openai is heavy and replay/scripted runs never need it.
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=cfg.model or "",
        base_url=cfg.base_url,
        api_key=cfg.api_key,
        timeout=cfg.request_timeout_s,
        max_retries=0,
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
        stream_usage=True,  # servers send usage in the last chunk only when asked
    )


def is_transient(exc: BaseException) -> bool:
    """True for failures that may succeed on a retry."""
    if isinstance(exc, (openai.RateLimitError, openai.InternalServerError)):
        return True
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    # A stream can break mid-body outside the OpenAI client's error mapping.
    return isinstance(exc, (httpx.TimeoutException, httpx.TransportError))


def _retry_after_s(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        return float(headers.get("retry-after", ""))
    except ValueError:
        return None


def _wait_strategy(cfg: LLMConfig) -> Callable[[RetryCallState], float]:
    """Exponential backoff with full jitter, never shorter than a server's Retry-After."""

    def wait(state: RetryCallState) -> float:
        ceiling = min(cfg.retry_max_s, cfg.retry_initial_s * 2 ** (state.attempt_number - 1))
        delay = random.uniform(0, ceiling)
        exc = state.outcome.exception() if state.outcome else None
        after = _retry_after_s(exc)
        if after is not None:
            delay = max(delay, min(after, cfg.retry_max_s))
        return delay

    return wait


def describe_error(exc: BaseException) -> str:
    """One line: the exception type, HTTP status if any, and message."""
    status = getattr(exc, "status_code", None)
    # langchain-openai re-raises openai errors as subclasses; the openai name is the one users know.
    name = next(
        (c.__name__ for c in type(exc).__mro__ if c.__module__.split(".")[0] == "openai"),
        type(exc).__name__,
    )
    text = " ".join(str(exc).split()) or name
    prefix = name + (f" (HTTP {status})" if status else "")
    return f"{prefix}: {text}"[:500]


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


def _stream(model: BaseChatModel, messages: list[BaseMessage]) -> AIMessage:
    chunks = None
    for chunk in model.stream(messages):
        chunks = chunk if chunks is None else chunks + chunk
    if chunks is None:
        return AIMessage(content="")
    message = message_chunk_to_message(chunks)
    assert isinstance(message, AIMessage)
    return message


def invoke_with_retries(
    model: BaseChatModel,
    messages: list[BaseMessage],
    cfg: LLMConfig,
    transcript: Transcript | None = None,
    meta: CallMeta | None = None,
) -> AIMessage:
    """Call ``model`` once, retrying transient failures; record the exchange in ``transcript``.

    Raises :class:`AgentExhausted` unchanged (replay ran out), :class:`EggInputError` when the
    endpoint rejects our credentials or model name (the user must fix the flag), and
    :class:`LLMCallError` for any other failure.
    """
    meta = meta or CallMeta(agent="llm")
    bound = log.bind(agent=meta.agent, round=meta.round, attempt=meta.attempt, llm=cfg.label())
    started = time.monotonic()
    tries = 0

    def once() -> AIMessage:
        nonlocal tries
        tries += 1
        t0 = time.monotonic()
        try:
            result = _stream(model, messages) if cfg.streaming else model.invoke(messages)
        except AgentExhausted:
            raise
        except Exception as exc:
            bound.warning(
                "llm.try_failed",
                tries=tries,
                transient=is_transient(exc),
                error=describe_error(exc),
                latency_s=round(time.monotonic() - t0, 3),
            )
            raise
        assert isinstance(result, AIMessage)
        bound.info("llm.try_ok", tries=tries, latency_s=round(time.monotonic() - t0, 3))
        return result

    retrying = Retrying(
        stop=stop_after_attempt(cfg.max_retries + 1),
        wait=_wait_strategy(cfg),
        retry=retry_if_exception(is_transient),
        reraise=True,
    )
    try:
        message = retrying(once)
    except AgentExhausted:
        raise
    except Exception as exc:
        error = describe_error(exc)
        if transcript is not None:
            transcript.append(
                make_record(
                    meta, messages, response=None, usage=None, started=started, tries=tries,
                    error=error,
                )
            )
        bound.error("llm.call_failed", tries=tries, error=error)
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError,
                            openai.NotFoundError)):
            raise EggInputError(f"--llm {cfg.label()}: endpoint rejected the request: {error}") from exc
        raise LLMCallError(
            f"--llm {cfg.label()}: call failed after {tries} tries: {error}",
            tries=tries,
            transient=is_transient(exc),
        ) from exc
    usage = usage_of(message)
    # An answer served by the resume cache is already in the transcript: do not write it twice.
    if transcript is not None and not message.response_metadata.get(CACHED_MARK):
        transcript.append(
            make_record(
                meta,
                messages,
                response=message_text(message),
                usage=usage.model_dump(exclude={"calls"}) if usage else None,
                started=started,
                tries=tries,
            )
        )
    bound.info(
        "llm.call_ok",
        tries=tries,
        latency_s=round(time.monotonic() - started, 3),
        **(usage.model_dump(exclude={"calls"}) if usage else {}),
    )
    return message
