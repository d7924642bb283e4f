"""The chat models behind the LLM agents: built from an :class:`LLMConfig`, or adopted from the user.

Retries are ours alone (:func:`agents.llm.chat.invoke_with_retries`), so every chat model runs with
its client's own retries switched off: ``max_retries=0`` on the ones we build, and on a *copy* of
a user's ``ChatOpenAI`` (``root_client.with_options(max_retries=0, ...)``, the user's object is
left as it was). The request timeout is ours too unless the user's model sets one.

What is sent follows what each API wants:

* OpenAI: the output cap as ``max_completion_tokens`` (``max_tokens`` is deprecated there and
  refused by reasoning models); ``reasoning_effort`` only to reasoning models (o-series, gpt-5,
  gpt-oss), and no temperature other than the default to those (they refuse it);
* OpenAI-compatible servers (vLLM, SGLang, Ollama, llama.cpp): ``max_tokens``, which all of them
  read; Chat Completions only (never the Responses API); ``reasoning_effort`` when the user set it
  (the preflight checks that the server accepts it).

Options not sent are returned by :func:`request_notes`, for the log and the report.
"""

from __future__ import annotations

import re
from typing import Any

import structlog
from langchain_core.language_models import BaseChatModel

from agents.llm.config import LLMConfig
from agents.llm.replay import ReplayChatModel

log = structlog.get_logger(__name__)

_REASONING_MODEL = re.compile(r"^(o\d|gpt-5|gpt-oss)", re.I)


def is_reasoning_model(model: str | None) -> bool:
    return bool(model and _REASONING_MODEL.match(model.rsplit("/", 1)[-1]))


def request_options(cfg: LLMConfig) -> tuple[dict[str, Any], list[str]]:
    """The optional request fields sent for ``cfg`` and one note per option the user set but that
    is not sent (with the reason)."""
    sent: dict[str, Any] = {}
    notes: list[str] = []
    reasoning = is_reasoning_model(cfg.model)
    if cfg.temperature is not None:
        if cfg.provider == "openai" and reasoning and cfg.temperature != 1:
            notes.append(f"temperature {cfg.temperature:g} not sent: {cfg.model} accepts only its default")
        else:
            sent["temperature"] = cfg.temperature
    if cfg.reasoning_effort is not None:
        if cfg.provider == "openai" and not reasoning:
            notes.append(f"reasoning effort {cfg.reasoning_effort} not sent: {cfg.model} is not a reasoning model")
        else:
            sent["reasoning_effort"] = cfg.reasoning_effort
    if cfg.max_tokens is not None:
        sent["max_completion_tokens" if cfg.provider == "openai" else "max_tokens"] = cfg.max_tokens
    return sent, notes


def build_chat_model(cfg: LLMConfig) -> BaseChatModel:
    """Build the chat model ``cfg`` describes (``none`` and ``python`` have none: ValueError)."""
    if cfg.provider in ("none", "python"):
        raise ValueError(f"--llm {cfg.label()}: there is no chat model to build")
    if cfg.provider == "replay":
        assert cfg.replay_path is not None
        return ReplayChatModel.from_file(cfg.replay_path)
    if cfg.provider == "scripted":
        return ReplayChatModel.from_responses(cfg.script or [])
    # Imported here: langchain_openai is heavy and replay/scripted runs never need it.
    from langchain_openai import ChatOpenAI

    sent, notes = request_options(cfg)
    for note in notes:
        log.warning("llm.option_not_sent", llm=cfg.label(), note=note)
    fields: dict[str, Any] = {
        "model": cfg.model or "",
        "base_url": cfg.base_url,
        "api_key": cfg.api_key,
        "timeout": cfg.request_timeout_s,
        "max_retries": 0,
        "temperature": sent.get("temperature"),
        "reasoning_effort": sent.get("reasoning_effort"),
        "stream_usage": True,  # servers send usage in the last chunk only when asked
    }
    if cfg.provider == "openai":
        fields["max_tokens"] = sent.get("max_completion_tokens")  # sent as max_completion_tokens
    else:
        # ChatOpenAI renames max_tokens to max_completion_tokens, which older vLLM/Ollama ignore
        fields["extra_body"] = {"max_tokens": sent["max_tokens"]} if "max_tokens" in sent else None
        fields["use_responses_api"] = False
    return ChatOpenAI(**fields)


def _is_chat_openai(model: BaseChatModel) -> bool:
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:  # pragma: no cover - langchain-openai is a dependency
        return False
    return isinstance(model, BaseChatOpenAI)


def chat_model_label(model: BaseChatModel) -> str:
    """``CLASS[:MODEL]``: how reports name a user's chat model."""
    name = next(
        (v for attr in ("model_name", "model", "model_id") if isinstance(v := getattr(model, attr, None), str) and v),
        None,
    )
    return f"{type(model).__name__}:{name}" if name else type(model).__name__


def adopt_chat_model(model: BaseChatModel, cfg: LLMConfig) -> tuple[BaseChatModel, list[str]]:
    """A copy of the user's ``model`` that runs under our retry and timeout policy, and notes
    saying what was changed (for the report)."""
    label = chat_model_label(model)
    if _is_chat_openai(model):
        own = model.request_timeout  # type: ignore[attr-defined]
        timeout = own if own is not None else cfg.request_timeout_s
        update: dict[str, Any] = {"max_retries": 0, "request_timeout": timeout}
        for root, leaf in (("root_client", "client"), ("root_async_client", "async_client")):
            client = getattr(model, root, None)
            if client is not None:
                update[root] = client.with_options(max_retries=0, timeout=timeout)
                update[leaf] = update[root].chat.completions
        copy = model.model_copy(update=update)
        where = "its own" if own is not None else "EGG's default, the model set none"
        return copy, [
            f"{label}: its client's retries are off (a copy with max_retries=0); EGG retries "
            f"{cfg.max_retries} times; request timeout {timeout} s ({where})"
        ]
    if "max_retries" in type(model).model_fields:
        return model.model_copy(update={"max_retries": 0}), [
            f"{label}: max_retries=0 on a copy; EGG retries {cfg.max_retries} times; its own timeout applies"
        ]
    return model, [f"{label}: used as given (it has no retry setting to switch off); its own timeout applies"]


def is_openai_protocol(model: BaseChatModel) -> bool:
    """Whether ``model`` speaks OpenAI Chat Completions (answers end with a finish_reason)."""
    return _is_chat_openai(model)
