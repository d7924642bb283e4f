from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from agents.llm.chat import invoke_with_retries
from agents.llm.models import build_chat_model
from agents.llm.cache import CACHED_MARK
from agents.llm.config import parse_llm_spec, scripted_config
from agents.llm.replay import ReplayChatModel
from agents.llm.transcript import CallMeta, Transcript
from agents.protocol import AgentExhausted
from egg.errors import EggInputError


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_responses_come_back_in_order_then_exhaust(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "r.jsonl",
        [
            json.dumps({"response": "first", "agent": "ignored", "usage": {
                "input_tokens": 3, "output_tokens": 2, "total_tokens": 5}}),
            "",
            json.dumps({"response": "second"}),
        ],
    )
    model = build_chat_model(parse_llm_spec(f"replay:{path}", env={}))
    assert isinstance(model, ReplayChatModel) and model.remaining == 2
    first = model.invoke([HumanMessage(content="q")])
    assert first.content == "first"
    assert first.usage_metadata is not None and first.usage_metadata["total_tokens"] == 5
    assert model.invoke("q").content == "second"
    with pytest.raises(AgentExhausted, match="all 2 recorded answers used"):
        model.invoke("q")


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("not json", "not a JSON object"),
        ("[1, 2]", "not a JSON object"),
        ('{"prompt": "x"}', 'no "response" string field'),
        ('{"response": null}', 'no "response" string field'),
    ],
)
def test_bad_line_is_one_line_error_with_line_number(tmp_path: Path, line: str, why: str) -> None:
    path = write_lines(tmp_path / "bad.jsonl", [json.dumps({"response": "ok"}), line])
    with pytest.raises(EggInputError) as info:
        ReplayChatModel.from_file(path)
    assert str(info.value).startswith(f"{path}:2: {why}")
    assert "\n" not in str(info.value)


def test_exhaustion_passes_through_invoke_with_retries(tmp_path: Path) -> None:
    cfg = parse_llm_spec(f"replay:{write_lines(tmp_path / 'r.jsonl', [])}", env={})
    transcript = Transcript(tmp_path / "transcript.jsonl")
    with pytest.raises(AgentExhausted):
        invoke_with_retries(build_chat_model(cfg), [HumanMessage(content="q")], cfg, transcript,
                            CallMeta(agent="a"))
    assert transcript.records() == []  # running out is not an exchange


def test_answers_from_the_resume_cache_are_not_recorded_twice(tmp_path: Path) -> None:
    model = FakeMessagesListChatModel(
        responses=[AIMessage(content="old", response_metadata={CACHED_MARK: True}), AIMessage(content="new")]
    )
    transcript = Transcript(tmp_path / "transcript.jsonl")
    cfg = scripted_config([])
    for _ in range(2):
        invoke_with_retries(model, [HumanMessage(content="q")], cfg, transcript, CallMeta(agent="a"))
    assert [r.response for r in transcript.records()] == ["new"]
