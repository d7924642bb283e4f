"""The one thing every LLM agent of a run shares about its endpoint: whether it has failed for good.

The first agent whose request fails past its retries (or is refused: 401/403/404) marks the
endpoint down; every later request of any agent stops before it is sent, so a dead endpoint costs
one agent's retries, not N times that.
"""

from __future__ import annotations

import threading

import structlog

from agents.protocol import ServiceFailed

log = structlog.get_logger(__name__)


class EndpointState:
    def __init__(self, service: str) -> None:
        self.service = service  # the --llm label; agents carry the same string as ``service``
        self.failure: str | None = None
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise :class:`ServiceFailed` if the endpoint is down (before sending a request)."""
        if self.failure is not None:
            raise ServiceFailed(self.service, self.failure)

    def fail(self, reason: str) -> ServiceFailed:
        """Mark the endpoint down (the first reason wins) and return the error to raise."""
        with self._lock:
            if self.failure is None:
                self.failure = reason
                log.error("llm.endpoint_down", llm=self.service, reason=reason)
        return ServiceFailed(self.service, self.failure)
