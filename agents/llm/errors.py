"""What a failed chat request means: retry it, give up on this request, or give up on the endpoint.

* transient (:func:`is_transient`): 429, 5xx, connection errors, timeouts and streams cut
  mid-body; retried with backoff, and when the retries are spent the endpoint counts as down;
* rejections of the endpoint itself (:func:`rejects_endpoint`): 401, 403, 404 (a bad key, no
  access, an unknown model); asking again will not help, and no other request will do better;
* anything else (a 400 for one prompt, say) fails that one request only (:class:`LLMCallError`).

The installed ``openai`` (>= 3) is built on ``httpx2``, older ones on ``httpx``: transport errors
raised outside the client's own error mapping (a stream read after the response began) are
matched against whichever of the two is installed.
"""

from __future__ import annotations

import importlib

import openai

_TRANSIENT_STATUS = {408, 409, 425, 429}


def _transport_errors() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def _langchain_errors(*names: str) -> tuple[type[BaseException], ...]:
    # langchain-core >= 1.x classifies provider errors; older versions have none of these
    module = importlib.import_module("langchain_core.exceptions")
    return tuple(getattr(module, n) for n in names if hasattr(module, n))


TRANSPORT_ERRORS = _transport_errors()
_LC_TRANSIENT = _langchain_errors(
    "ModelRateLimitError", "ModelAPIError", "ModelConnectionError", "ModelTimeoutError"
)
_LC_REJECTS = _langchain_errors(
    "ModelAuthenticationError", "ModelPermissionDeniedError", "ModelNotFoundError"
)


class StreamCut(Exception):
    """A streamed answer ended without a finish_reason: the connection closed mid-body."""


class LLMCallError(RuntimeError):
    """One request failed for good without condemning the endpoint (e.g. a 400 for this prompt)."""

    def __init__(self, message: str, *, tries: int, status: int | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.tries = tries
        self.status = status


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException) -> bool:
    """True for failures that may succeed on a retry."""
    if isinstance(exc, StreamCut | openai.APIConnectionError):  # APIConnectionError includes timeouts
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500
    return isinstance(exc, TRANSPORT_ERRORS + _LC_TRANSIENT)


def rejects_endpoint(exc: BaseException) -> bool:
    """True when the endpoint refuses us as such: bad key (401), no access (403), no model (404)."""
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError | openai.NotFoundError):
        return True
    return isinstance(exc, _LC_REJECTS)


def retry_after_s(exc: BaseException | None) -> float | None:
    """A server's ``Retry-After`` in seconds (the numeric form), if it sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        return float(headers.get("retry-after", ""))
    except ValueError:
        return None


def _root_cause(exc: BaseException) -> BaseException:
    seen = {id(exc)}
    while (cause := exc.__cause__ or exc.__context__) is not None and id(cause) not in seen:
        seen.add(id(cause))
        exc = cause
    return exc


def describe_error(exc: BaseException) -> str:
    """One line: the exception type, HTTP status if any, message, and the underlying cause
    ("Connection error." alone does not say that the connection was refused)."""
    status = status_of(exc)
    # langchain-openai re-raises openai errors as subclasses; the openai name is the one users know.
    name = next(
        (c.__name__ for c in type(exc).__mro__ if c.__module__.split(".")[0] == "openai"),
        type(exc).__name__,
    )
    text = " ".join(str(exc).split()) or name
    root = _root_cause(exc)
    connection = isinstance(exc, (openai.APIConnectionError, *TRANSPORT_ERRORS))
    if connection and root is not exc and (detail := " ".join(str(root).split())) and detail not in text:
        text = f"{text} ({detail})"
    prefix = name + (f" (HTTP {status})" if status else "")
    return f"{prefix}: {text}"[:500]
