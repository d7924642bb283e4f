"""``--llm`` parsing: which chat model backs the LLM agents, and how calls behave.

Accepted specs::

    none                 no LLM agents
    openai:MODEL         OpenAI (or OPENAI_BASE_URL / EGG_LLM_BASE_URL if set)
    PROVIDER:MODEL       any OpenAI-compatible endpoint (vLLM, llama.cpp, Ollama, ...);
                         needs EGG_LLM_BASE_URL or OPENAI_BASE_URL
    replay:FILE          replay the ``response`` of each JSONL line of FILE, in order

``python:CLASS[:MODEL]`` names a chat model object handed to ``egg.optimize(..., llm=model)``: it
is recorded in ``config.json`` and reports, but cannot be rebuilt from the command line.
``scripted`` (in-memory responses) exists for tests and is only constructed in code. The model
name is everything after the first colon, so ``ollama:llama3:8b`` keeps its tag. How requests
are made (timeout, retries, temperature, max tokens, reasoning effort, streaming) comes from
:class:`egg.config.LLMOptions`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from pydantic import BaseModel, Field, SecretStr

from egg.config import LLMOptions
from egg.errors import EggInputError

Provider = Literal["none", "openai", "compatible", "replay", "scripted", "python"]
_DEFAULTS = LLMOptions()

BASE_URL_VARS = ("EGG_LLM_BASE_URL", "OPENAI_BASE_URL")
API_KEY_VARS = ("EGG_LLM_API_KEY", "OPENAI_API_KEY")
# Local servers (llama.cpp, vLLM, Ollama) ignore the key, but the OpenAI client refuses to start
# without one.
DUMMY_API_KEY = "egg-local-no-key"
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
_USAGE = "expected none, replay:FILE or PROVIDER:MODEL"


class LLMConfig(BaseModel):
    """How the LLM agents reach a model. ``max_retries`` counts retries after the first try."""

    provider: Provider
    model: str | None = None
    provider_name: str | None = None  # what the user wrote before the colon (for logs/reports)
    base_url: str | None = None
    api_key: SecretStr | None = None
    replay_path: Path | None = None
    script: list[str] | None = None  # provider "scripted" only
    python_label: str | None = None  # provider "python": CLASS[:MODEL] of the user's chat model
    request_timeout_s: float = _DEFAULTS.timeout_s
    max_retries: int = Field(default=_DEFAULTS.max_retries, ge=0)
    retry_initial_s: float = 1.0  # first backoff; doubles per retry, plus jitter
    retry_max_s: float = 30.0  # cap on a single backoff wait
    temperature: float | None = None  # None: the server's default (some models reject others)
    max_tokens: int | None = _DEFAULTS.max_tokens
    reasoning_effort: str | None = None
    streaming: bool = False
    # OpenAI-protocol models end every answer with a finish_reason; a stream without one was cut
    checks_finish_reason: bool = False

    @property
    def enabled(self) -> bool:
        return self.provider != "none"

    def label(self) -> str:
        """The spec as a user would write it (no secrets)."""
        if self.provider == "replay":
            return f"replay:{self.replay_path}"
        if self.provider in ("none", "scripted"):
            return self.provider
        if self.provider == "python":
            return f"python:{self.python_label}"
        return f"{self.provider_name or self.provider}:{self.model}"

    @property
    def url(self) -> str:
        """The endpoint's base URL as the client uses it."""
        return (self.base_url or "https://api.openai.com/v1").rstrip("/")


def option_overrides(options: LLMOptions) -> dict[str, object]:
    """:class:`LLMOptions` as :class:`LLMConfig` fields."""
    return {
        "request_timeout_s": options.timeout_s,
        "max_retries": options.max_retries,
        "temperature": options.temperature,
        "max_tokens": options.max_tokens,
        "reasoning_effort": options.reasoning_effort,
        "streaming": options.streaming,
    }


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def is_local_url(url: str) -> bool:
    return (urlparse(url).hostname or "") in _LOCAL_HOSTS


def parse_llm_spec(
    spec: str, env: Mapping[str, str] | None = None, **overrides: object
) -> LLMConfig:
    """Parse an ``--llm`` string into an :class:`LLMConfig`; ``overrides`` set the other fields.

    Raises :class:`EggInputError` (one line) for a malformed spec, a missing replay file, a
    missing base URL for a non-OpenAI provider, or a missing key for a remote endpoint.
    """
    env = os.environ if env is None else env
    text = (spec or "").strip()
    if text == "none":
        return LLMConfig(provider="none", **overrides)  # type: ignore[arg-type]
    provider, sep, rest = text.partition(":")
    provider, rest = provider.strip().lower(), rest.strip()
    if not sep or not provider or not rest or not provider.replace("-", "").replace("_", "").isalnum():
        raise EggInputError(f"--llm: {_USAGE}, got {spec!r}")
    if provider == "replay":
        path = Path(rest).expanduser()
        if not path.is_file():
            raise EggInputError(f"--llm: replay file {path} does not exist")
        return LLMConfig(provider="replay", replay_path=path, **overrides)  # type: ignore[arg-type]
    if provider in ("none", "scripted"):
        raise EggInputError(f"--llm: {_USAGE}, got {spec!r}")
    if provider == "python":
        raise EggInputError(
            f"--llm {text}: this run used a chat model object passed to egg.optimize; it cannot be "
            "rebuilt from the command line (name an endpoint with --llm PROVIDER:MODEL instead)"
        )
    base_url = _first(env, BASE_URL_VARS)
    if provider != "openai" and base_url is None:
        raise EggInputError(
            f"--llm {text}: an OpenAI-compatible provider needs a base URL "
            f"(set {' or '.join(BASE_URL_VARS)}, e.g. http://127.0.0.1:8000/v1)"
        )
    key = _first(env, API_KEY_VARS)
    if key is None:
        if base_url is not None and is_local_url(base_url):
            key = DUMMY_API_KEY
        else:
            raise EggInputError(f"--llm {text}: no API key (set {' or '.join(API_KEY_VARS)})")
    return LLMConfig(
        provider="openai" if provider == "openai" else "compatible",
        provider_name=provider,
        model=rest,
        base_url=base_url,
        api_key=SecretStr(key),
        checks_finish_reason=True,
        **overrides,  # type: ignore[arg-type]
    )


def scripted_config(responses: list[str], **overrides: object) -> LLMConfig:
    """A config whose chat model answers with ``responses`` in order (tests only)."""
    return LLMConfig(provider="scripted", script=list(responses), **overrides)  # type: ignore[arg-type]
