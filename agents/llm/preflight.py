"""One cheap request before any work: is the endpoint there, does it take our key, does it serve the model?

1. ``GET /models`` (free): a refused connection, a timeout, 401 or 403 is an error at once; a
   listing that names the model settles the question.
2. Otherwise (a model not listed, a server without the route) and whenever the user set request
   options the server might refuse (temperature, reasoning effort), a completion capped at
   :data:`PROBE_TOKENS` output tokens with those options: its 404 means the model is unknown, its
   400 that an option is refused. It is a real request and counts against the run's budgets.

Failures are :class:`EggInputError`: one line naming the ``--llm`` spec, the URL and what to fix
(exit 2, before a run directory exists). 429 and 5xx are retried like any request.
"""

from __future__ import annotations

from typing import Any

import openai
import structlog
from tenacity import Retrying, retry_if_exception, stop_after_attempt

from agents.llm.chat import wait_strategy
from agents.llm.config import LLMConfig
from agents.llm.errors import describe_error, is_transient
from agents.llm.models import request_options
from agents.protocol import TokenUsage
from egg.errors import EggInputError

log = structlog.get_logger(__name__)

PROBE_TOKENS = 16
_PROBE = [{"role": "user", "content": "Reply with the single word OK."}]


def openai_client(cfg: LLMConfig) -> openai.OpenAI:
    key = cfg.api_key.get_secret_value() if cfg.api_key is not None else None
    return openai.OpenAI(base_url=cfg.base_url, api_key=key, timeout=cfg.request_timeout_s, max_retries=0)


def _retrying(cfg: LLMConfig) -> Retrying:
    def busy(exc: BaseException) -> bool:  # a loading or rate-limited server; not a dead one
        return is_transient(exc) and not isinstance(exc, openai.APIConnectionError)

    return Retrying(stop=stop_after_attempt(cfg.max_retries + 1), wait=wait_strategy(cfg),
                    retry=retry_if_exception(busy), reraise=True)


def _fail(cfg: LLMConfig, exc: BaseException, what: str, listed: list[str] | None = None) -> EggInputError:
    head = f"--llm {cfg.label()}: {what}"
    error = describe_error(exc)
    if isinstance(exc, openai.APITimeoutError):
        return EggInputError(f"{head}: {cfg.url} did not answer within {cfg.request_timeout_s:g} s "
                             "(raise --llm-timeout / EGG_LLM_TIMEOUT if it is only slow)")
    if isinstance(exc, openai.APIConnectionError):
        return EggInputError(f"{head}: cannot reach {cfg.url}: {error} (is the server running? "
                             "check EGG_LLM_BASE_URL / OPENAI_BASE_URL)")
    if isinstance(exc, openai.AuthenticationError):
        return EggInputError(f"{head}: {cfg.url} rejected the API key: {error} (set EGG_LLM_API_KEY or OPENAI_API_KEY)")
    if isinstance(exc, openai.PermissionDeniedError):
        return EggInputError(f"{head}: {cfg.url} denied access to model {cfg.model!r}: {error}")
    if isinstance(exc, openai.NotFoundError):
        there = f"; models served there: {', '.join(listed[:10])}" if listed else ""
        return EggInputError(f"{head}: model {cfg.model!r} is not served at {cfg.url}: {error}{there}")
    return EggInputError(f"{head}: {cfg.url}: {error}")


def _listed_models(client: openai.OpenAI, cfg: LLMConfig) -> list[str] | None:
    """The model ids the server lists, or None when it has no such route (or lists nothing)."""
    try:
        page = _retrying(cfg)(client.models.list)
    except (openai.APIConnectionError, openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        raise _fail(cfg, exc, "preflight (GET /models)") from None
    except openai.APIError as exc:  # 404/405/500 from a server that does not list models
        log.info("llm.preflight_no_models_route", url=cfg.url, error=describe_error(exc))
        return None
    ids = [m.id for m in getattr(page, "data", None) or [] if getattr(m, "id", None)]
    return ids or None


def preflight(cfg: LLMConfig, client: openai.OpenAI | None = None, *, options: dict[str, Any] | None = None) -> TokenUsage:
    """Check that ``cfg``'s endpoint answers and serves its model; returns what it spent.

    ``client``: the OpenAI client to check with (a user's ChatOpenAI brings its own); ``options``:
    the optional request fields the agents will send (default: from ``cfg``).
    """
    client = (client or openai_client(cfg)).with_options(max_retries=0, timeout=cfg.request_timeout_s)
    if options is None:
        sent, _ = request_options(cfg)
        options = {k: v for k, v in sent.items() if k in ("temperature", "reasoning_effort")}
    listed = _listed_models(client, cfg)
    if listed is not None and cfg.model in listed and not options:
        log.info("llm.preflight_ok", url=cfg.url, model=cfg.model, checked="models list")
        return TokenUsage()
    # what the agents send: ChatOpenAI renames max_tokens for OpenAI and for a user's model alike
    cap = "max_completion_tokens" if cfg.provider in ("openai", "python") else "max_tokens"
    retrying = _retrying(cfg)
    try:
        reply = retrying(client.chat.completions.create, model=cfg.model or "", messages=_PROBE,
                         **{cap: PROBE_TOKENS}, **options)
    except openai.BadRequestError as exc:
        what = f"the server refused the request options {options}" if options else "a one-line test request was refused"
        raise _fail(cfg, exc, f"preflight: {what}") from None
    except openai.APIError as exc:
        raise _fail(cfg, exc, "preflight (a one-line test request)", listed) from None
    usage = getattr(reply, "usage", None)
    requests = int(retrying.statistics.get("attempt_number", 1))
    spent = TokenUsage(
        input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        output_tokens=getattr(usage, "completion_tokens", 0) or 0,
        total_tokens=getattr(usage, "total_tokens", 0) or 0,
        calls=requests,
        failed_calls=requests - 1,  # busy answers (429/5xx) retried before this one
    )
    log.info("llm.preflight_ok", url=cfg.url, model=cfg.model, checked="completion", **options)
    return spent


def preflight_setup(cfg: LLMConfig, model: Any) -> TokenUsage | None:
    """Preflight whatever can be checked: an endpoint we build, or a user's ChatOpenAI (through its
    own client, with the options it will send). Replays, scripted and other models: None."""
    if cfg.provider in ("openai", "compatible"):
        return preflight(cfg)
    root = getattr(model, "root_client", None)
    if cfg.provider == "python" and cfg.checks_finish_reason and isinstance(root, openai.OpenAI):
        options = {k: getattr(model, k, None) for k in ("temperature", "reasoning_effort")}
        return preflight(cfg, root, options={k: v for k, v in options.items() if v is not None})
    log.info("llm.preflight_skipped", llm=cfg.label(), reason="not an OpenAI-protocol endpoint")
    return None
