"""The run transcript: every LLM exchange appended to ``RUN_DIR/transcript.jsonl``.

One JSON object per line, written as soon as the exchange ends, so a crashed run still leaves
everything it paid for. The ``response`` field is what :mod:`agents.llm.replay` reads back, which
makes any transcript a replay file. Every failed request has a line of its own (``error``,
``status`` when the server sent one, ``try_number``, ``latency_s`` of that request, ``response``
null), so a run's cost can be audited request by request; replay and the resume cache skip them.
A successful line says how many requests its exchange took (``tries``) and why the answer ended
(``finish_reason``, when the server said).
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, Field

from egg.vocabulary import Focus, Stage

TRANSCRIPT_NAME = "transcript.jsonl"

# Agents of one run may call from several graph threads; one lock keeps lines whole.
_write_lock = threading.Lock()


class CallMeta(BaseModel):
    """Who made a call and why: copied into the transcript line and the logs."""

    agent: str
    stage: Stage | None = None
    focus: Focus | None = None
    round: int = 0
    attempt: int = 0  # 0: the first answer; 1..: repair turns


class TranscriptMessage(BaseModel):
    role: str
    content: str


class TranscriptRecord(BaseModel):
    ts: str
    agent: str
    stage: Stage | None = None
    focus: Focus | None = None
    round: int = 0
    attempt: int = 0
    tries: int = 1  # HTTP requests this exchange took so far (1 = no transient error)
    messages: list[TranscriptMessage] = Field(default_factory=list)
    response: str | None = None
    usage: dict[str, int] | None = None
    latency_s: float = 0.0
    error: str | None = None  # failed request lines only
    status: int | None = None  # HTTP status of a failed request, when there was a response
    try_number: int | None = None  # failed request lines: which request of the exchange (1-based)
    finish_reason: str | None = None  # why the answer ended (stop, length, ...), when known


_OPTIONAL = ("error", "status", "try_number", "finish_reason")
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def message_text(message: BaseMessage) -> str:
    """The text of a message; multi-part content (a list of blocks) is joined."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


def to_transcript_messages(messages: list[BaseMessage]) -> list[TranscriptMessage]:
    return [
        TranscriptMessage(role=_ROLES.get(m.type, m.type), content=message_text(m)) for m in messages
    ]


def make_record(
    meta: CallMeta,
    messages: list[BaseMessage],
    *,
    response: str | None,
    usage: dict[str, int] | None,
    started: float,
    tries: int,
    error: str | None = None,
    status: int | None = None,
    try_number: int | None = None,
    finish_reason: str | None = None,
) -> TranscriptRecord:
    return TranscriptRecord(
        ts=datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        agent=meta.agent,
        stage=meta.stage,
        focus=meta.focus,
        round=meta.round,
        attempt=meta.attempt,
        tries=tries,
        messages=to_transcript_messages(messages),
        response=response,
        usage=usage,
        latency_s=round(time.monotonic() - started, 3),
        error=error,
        status=status,
        try_number=try_number,
        finish_reason=finish_reason,
    )


class Transcript:
    """Append-only JSONL file of exchanges."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def in_run_dir(cls, run_dir: str | Path) -> Transcript:
        return cls(Path(run_dir) / TRANSCRIPT_NAME)

    def append(self, record: TranscriptRecord) -> None:
        data: dict[str, Any] = record.model_dump(mode="json")
        for key in _OPTIONAL:  # present only when they say something
            if data.get(key) is None:
                data.pop(key, None)
        line = json.dumps(data, ensure_ascii=False)
        with _write_lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    def records(self) -> list[TranscriptRecord]:
        """Read back every line (for reports and tests)."""
        if not self.path.is_file():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return [TranscriptRecord.model_validate_json(line) for line in lines if line.strip()]
