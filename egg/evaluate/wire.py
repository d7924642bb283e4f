"""Length-prefixed JSON over a stream socket: the only way the harness, judge and runner talk.

A frame is a 4-byte big-endian length, then that many bytes of UTF-8 JSON. Nothing is ever
pickled: a message from a candidate's process can only ever become a ``dict`` that the receiver
then validates against a pydantic schema (:mod:`egg.evaluate.messages`). A frame larger than the
receiver's limit, bytes that are not JSON, or a JSON value that is not an object are a
:class:`WireError`, and so is the peer closing the socket.
"""

from __future__ import annotations

import json
import select
import socket
import struct
import time
from typing import Any

MAX_FRAME = 8 * 1024 * 1024  # no honest message comes near this; a runner's limit is lower still
_HEADER = struct.Struct(">I")


class WireError(Exception):
    """The peer closed the connection or sent something that is not a valid frame."""


class WireTimeout(WireError):
    """Nothing arrived within the deadline."""


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":"), allow_nan=True).encode()
    if len(data) > MAX_FRAME:
        raise WireError(f"message of {len(data)} bytes exceeds the {MAX_FRAME}-byte frame limit")
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    left = n
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WireTimeout("timed out waiting for the peer")
            ready, _, _ = select.select([sock], [], [], remaining)
            if not ready:
                raise WireTimeout("timed out waiting for the peer")
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except (ConnectionError, OSError) as exc:
            raise WireError(f"connection lost: {exc}") from None
        if not chunk:
            raise WireError("the peer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def recv(sock: socket.socket, timeout: float | None = None, max_bytes: int = MAX_FRAME) -> dict[str, Any]:
    """The next message as a dict; :class:`WireTimeout` after ``timeout`` seconds (None: wait)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (length,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size, deadline))
    if length > max_bytes:
        raise WireError(f"frame of {length} bytes exceeds the {max_bytes}-byte limit")
    raw = _recv_exact(sock, length, deadline)
    try:
        message = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WireError(f"frame is not UTF-8 JSON ({exc})") from None
    if not isinstance(message, dict):
        raise WireError(f"frame is a JSON {type(message).__name__}, expected an object")
    return message


def readable(sock: socket.socket, timeout: float) -> bool:
    ready, _, _ = select.select([sock], [], [], max(0.0, timeout))
    return bool(ready)
