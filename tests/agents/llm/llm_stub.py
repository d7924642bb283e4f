"""A real OpenAI-compatible HTTP server on 127.0.0.1 with scripted behaviour, for the LLM tests.

Each POST /v1/chat/completions consumes the next scripted :class:`Reply` (the last one repeats);
GET /v1/models answers with :attr:`StubOpenAI.models` (or ``models_status``, or a delay).
Requests are recorded so tests can count retries. Slow replies wait on an event that the fixture
sets at teardown, so a test never hangs on a sleeping handler. The server speaks HTTP/1.0, so a
response ends when the connection closes: ``cut=True`` closes a stream half-way, as a crashed or
restarted server would.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


@dataclass
class Reply:
    status: int = 200
    content: str = "ok"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    usage: dict[str, int] | None = field(default_factory=lambda: dict(USAGE))
    finish_reason: str = "stop"
    cut: bool = False  # streaming only: send half the answer, then close the connection


class StubOpenAI:
    def __init__(self) -> None:
        self.script: list[Reply] = [Reply()]
        self.requests: list[dict[str, Any]] = []
        self.model_requests = 0
        self.models: list[str] | None = ["tiny-model"]  # None: no /models route (404)
        self.models_status = 200
        self.models_delay_s = 0.0
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.server.block_on_close = False  # teardown must not wait on a sleeping handler
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def set_script(self, *replies: dict[str, Any]) -> None:
        """Replies as keyword dicts of :class:`Reply`, consumed in order (the last repeats)."""
        self.script = [Reply(**r) for r in replies]

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") != "/v1/models":
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with stub._lock:
                    stub.model_requests += 1
                if stub.models_delay_s and stub.stop.wait(stub.models_delay_s):
                    return
                try:
                    if stub.models is None or stub.models_status != 200:
                        status = 404 if stub.models is None else stub.models_status
                        self._json(status, {"error": {"message": f"scripted {status}", "type": "stub"}})
                    else:
                        data = [{"id": m, "object": "model", "created": 0, "owned_by": "stub"} for m in stub.models]
                        self._json(200, {"object": "list", "data": data})
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                reply = stub.next_reply(body)
                if reply.delay_s and stub.stop.wait(reply.delay_s):
                    return
                try:
                    if reply.status != 200:
                        self._json(
                            reply.status,
                            {"error": {"message": f"scripted {reply.status}", "type": "stub"}},
                            reply.headers,
                        )
                    elif body.get("stream"):
                        self._sse(body, reply)
                    else:
                        self._json(200, _completion(body, reply), reply.headers)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, body: dict[str, Any], reply: Reply) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                words = reply.content.split(" ")
                pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
                if reply.cut:
                    pieces = pieces[: max(1, len(pieces) // 2)]
                for i, piece in enumerate(pieces):
                    delta: dict[str, Any] = {"content": piece}
                    if i == 0:
                        delta["role"] = "assistant"
                    self._event(_chunk(body, [{"index": 0, "delta": delta, "finish_reason": None}]))
                if reply.cut:
                    self.connection.shutdown(socket.SHUT_RDWR)  # mid-body: no finish_reason, no [DONE]
                    return
                self._event(_chunk(body, [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]))
                if (body.get("stream_options") or {}).get("include_usage") and reply.usage:
                    self._event({**_chunk(body, []), "usage": reply.usage})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _event(self, obj: Any) -> None:
                self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
                self.wfile.flush()

        return Handler


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "stub"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content},
                "finish_reason": reply.finish_reason,
            }
        ],
    }
    if reply.usage:
        out["usage"] = reply.usage
    return out


def _chunk(body: dict[str, Any], choices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": body.get("model", "stub"),
        "choices": choices,
    }


@contextmanager
def serving() -> Iterator[StubOpenAI]:
    stub = StubOpenAI()
    stub.thread.start()
    try:
        yield stub
    finally:
        stub.stop.set()
        stub.server.shutdown()
        stub.server.server_close()
        stub.thread.join(timeout=5)


@pytest.fixture
def openai_stub() -> Iterator[StubOpenAI]:
    with serving() as stub:
        yield stub


@pytest.fixture
def dead_url() -> str:
    """A loopback URL where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
