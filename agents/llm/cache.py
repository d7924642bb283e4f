"""Answers already received in this run, replayed on resume instead of asking the model again.

``egg optimize --resume`` re-executes only the graph tasks that had not finished; an LLM agent in
such a task asks the same question it asked before the interruption. This wrapper answers from
``RUN_DIR/transcript.jsonl`` when the exact same messages were already answered (first in, first
out per question), and asks the wrapped model otherwise. Answers served from the cache are marked
in ``response_metadata`` so they are not written to the transcript a second time, and carry the
usage recorded with them: the interrupted task's spending never reached the checkpoint, so the
resumed task counts it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import defaultdict, deque
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages import AIMessageChunk
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

from agents.llm.transcript import to_transcript_messages

CACHED_MARK = "egg_cached"


def messages_key(messages: list[dict[str, str]]) -> str:
    canonical = json.dumps([[m["role"], m["content"]] for m in messages], ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class CachedChatModel(BaseChatModel):
    inner: BaseChatModel
    transcript_path: Path
    _answers: dict[str, deque[tuple[str, UsageMetadata | None]]] = PrivateAttr(
        default_factory=lambda: defaultdict(deque)
    )
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    hits: int = 0

    def model_post_init(self, context: Any) -> None:
        if not self.transcript_path.is_file():
            return
        for line in self.transcript_path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            if record.get("error") or record.get("response") is None:
                continue
            usage = record.get("usage")
            keys = ("input_tokens", "output_tokens", "total_tokens")
            meta = UsageMetadata(**{k: int(usage.get(k, 0)) for k in keys}) if isinstance(usage, dict) else None  # type: ignore[typeddict-item]
            self._answers[messages_key(record["messages"])].append((record["response"], meta))

    @property
    def answered(self) -> int:
        """How many answers the transcript holds (consumed from a replay file, for one)."""
        return sum(len(q) for q in self._answers.values())

    def _cached(self, messages: list[BaseMessage]) -> tuple[str, UsageMetadata | None] | None:
        key = messages_key([m.model_dump() for m in to_transcript_messages(messages)])
        with self._lock:
            queue = self._answers.get(key)
            cached = queue.popleft() if queue else None
            if cached is not None:
                self.hits += 1
        return cached

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        cached = self._cached(messages)
        if cached is not None:
            text, usage = cached
            chunk = AIMessageChunk(content=text, usage_metadata=usage, response_metadata={CACHED_MARK: True})
            yield ChatGenerationChunk(message=chunk)
            return
        for chunk in self.inner.stream(messages, stop=stop, **kwargs):
            yield ChatGenerationChunk(message=chunk)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        cached = self._cached(messages)
        if cached is not None:
            text, usage = cached
            message = AIMessage(content=text, usage_metadata=usage, response_metadata={CACHED_MARK: True})
            return ChatResult(generations=[ChatGeneration(message=message)])
        return ChatResult(generations=[ChatGeneration(message=self.inner.invoke(messages, stop=stop, **kwargs))])

    @property
    def _llm_type(self) -> str:
        return "egg-resume-cache"
