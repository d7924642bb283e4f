"""A chat model that replays recorded answers instead of calling a model.

``replay:FILE`` reads a JSONL file and answers each call with the ``response`` of the next line;
other fields are ignored, so a transcript EGG wrote (:mod:`agents.llm.transcript`) replays as is.
Lines recording a failed call (``error`` set, ``response`` null) are skipped: the original run got
no answer there either. The file is read once, up front, so a malformed line is reported before
any work starts. When the answers run out the model raises :class:`AgentExhausted`, which the
graph treats as a clean end of the run.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel, PrivateAttr

from agents.protocol import AgentExhausted
from egg.errors import EggInputError


class ReplayEntry(BaseModel):
    response: str
    usage: dict[str, int] | None = None
    line: int = 0


def load_replay(path: str | Path) -> list[ReplayEntry]:
    """Read the answers of a replay file; a bad line is a one-line error naming file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EggInputError(f"{path}: cannot read replay file ({exc.strerror})") from None
    entries: list[ReplayEntry] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise EggInputError(f"{path}:{lineno}: not a JSON object ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise EggInputError(f"{path}:{lineno}: not a JSON object (got {type(obj).__name__})")
        response = obj.get("response")
        if response is None and obj.get("error"):
            continue  # a failed call in an EGG transcript: nothing was answered
        if not isinstance(response, str):
            raise EggInputError(f'{path}:{lineno}: no "response" string field')
        usage = obj.get("usage")
        entries.append(
            ReplayEntry(
                response=response,
                usage=_clean_usage(usage),
                line=lineno,
            )
        )
    return entries


def _clean_usage(usage: Any) -> dict[str, int] | None:
    if not isinstance(usage, dict):
        return None
    keys = ("input_tokens", "output_tokens", "total_tokens")
    if not all(isinstance(usage.get(k), int) for k in keys):
        return None
    return {k: usage[k] for k in keys}


class ReplayChatModel(BaseChatModel):
    """Answers calls with recorded responses, in order; raises AgentExhausted when out."""

    entries: list[ReplayEntry]
    source: str = "<scripted>"
    _next: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayChatModel:
        return cls(entries=load_replay(path), source=str(path))

    @classmethod
    def from_responses(cls, responses: list[str]) -> ReplayChatModel:
        return cls(entries=[ReplayEntry(response=r, line=i + 1) for i, r in enumerate(responses)])

    @property
    def remaining(self) -> int:
        return len(self.entries) - self._next

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            if self._next >= len(self.entries):
                raise AgentExhausted(
                    f"replay {self.source}: all {len(self.entries)} recorded answers used"
                )
            entry = self.entries[self._next]
            self._next += 1
        usage = UsageMetadata(**entry.usage) if entry.usage else None  # type: ignore[typeddict-item]
        message = AIMessage(content=entry.response, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])

    @property
    def _llm_type(self) -> str:
        return "egg-replay"
