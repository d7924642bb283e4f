"""``egg optimize --llm PROVIDER:MODEL`` against a real OpenAI-protocol server on 127.0.0.1 (llm_stub).

Through the CLI's entry point (``egg.cli.main.main``), with the real judge on CPU: the exit status,
the one-line errors, and what the report and transcript say about every request.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from egg.cli.main import main

FIXTURES = Path(__file__).parents[1] / "fixtures"
PROBLEM = FIXTURES / "problems" / "add_relu.py"
GOOD = (FIXTURES / "candidates" / "add_relu_triton.py").read_text()
SMALL_RUN = ["--device", "cpu", "--shapes", "small", "--trials", "2", "--budget", "designers=1,rounds=1,stage2_rounds=0"]


def optimize(out: Path, *flags: str) -> int:
    return main(["optimize", str(PROBLEM), "--llm", "local:tiny-model", "--out", str(out), *SMALL_RUN, *flags])


def transcript(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "transcript.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("case", ["401", "404", "refused", "hang"])
def test_an_endpoint_that_cannot_be_used_is_a_one_line_error_before_any_work(case, openai_stub, dead_url, tmp_path,
                                                                            monkeypatch, capsys):
    url = dead_url if case == "refused" else openai_stub.base_url
    monkeypatch.setenv("EGG_LLM_BASE_URL", url)
    if case == "401":
        openai_stub.models_status = 401
    elif case == "404":
        openai_stub.models = ["other-model"]
        openai_stub.set_script({"status": 404})
    elif case == "hang":
        openai_stub.models_delay_s = 10.0
    out = tmp_path / "run"
    assert optimize(out, "--llm-timeout", "0.5") == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no progress line, no table
    [line] = captured.err.splitlines()
    assert line.startswith("egg: error: --llm local:tiny-model: ") and url in line
    expected = {"401": "rejected the API key", "404": "model 'tiny-model' is not served at",
                "refused": "cannot reach", "hang": "did not answer within 0.5 s"}[case]
    assert expected in line
    assert not out.exists()  # nothing was started


def test_retries_a_truncated_answer_and_a_cut_stream_then_accepts_a_correct_kernel(openai_stub, tmp_path,
                                                                                   monkeypatch, capsys):
    monkeypatch.setenv("EGG_LLM_BASE_URL", openai_stub.base_url)
    answer = f"STRUCTURE: one fused kernel\n```python\n{GOOD}\n```\nPRINCIPLES: none"
    openai_stub.set_script(
        {"status": 429, "headers": {"Retry-After": "1"}},  # busy: wait as told, then ask again
        {"content": answer[: len(answer) // 2], "finish_reason": "length"},  # cut at the token limit
        {"content": answer, "cut": True},  # the connection drops mid-body
        {"content": answer},
    )
    out = tmp_path / "run"
    assert optimize(out, "--no-expert-seeds", "--llm-stream", "on", "--llm-max-tokens", "400") == 0
    stdout = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert report["best"]["agent"] == "llm-designer-1" and report["llm_failure"] is None
    usage = report["llm_usage"]
    assert (usage["calls"], usage["failed_calls"], usage["successful_calls"]) == (4, 2, 2)
    assert usage["total_tokens"] == 36 and usage["model"] == "local:tiny-model"
    requests = openai_stub.requests
    assert all(r["stream"] and r["max_tokens"] == 400 for r in requests)
    assert "Answer again, shorter" in requests[2]["messages"][-1]["content"]  # the repair turn
    lines = transcript(out)
    assert [(line.get("status"), line.get("finish_reason")) for line in lines] == [
        (429, None), (None, "length"), (None, None), (None, "stop")]
    assert "RateLimitError" in lines[0]["error"] and "StreamCut" in lines[2]["error"]
    assert "llm local:tiny-model: 4 requests (2 answered, 2 failed), 36 tokens" in stdout
    assert "evaluated," not in stdout  # stdout is no terminal: no progress line


def test_an_endpoint_that_dies_mid_run_stops_every_llm_agent_and_exits_3(openai_stub, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EGG_LLM_BASE_URL", openai_stub.base_url)
    openai_stub.set_script({"status": 500})  # the preflight's model list works; every completion fails
    out = tmp_path / "run"
    status = main(["optimize", str(PROBLEM), "--llm", "local:tiny-model", "--out", str(out), "--device", "cpu",
                   "--shapes", "small", "--trials", "2", "--budget", "designers=2,rounds=1,stage2_rounds=1",
                   "--llm-retries", "1"])
    assert status == 3
    report = json.loads((out / "report.json").read_text())
    # one agent paid for the dead endpoint (1 request + 1 retry); the other designer and the three
    # tuners sent nothing
    assert len(openai_stub.requests) == 2 and report["llm_usage"]["calls"] == 2
    assert openai_stub.base_url in report["llm_failure"] and "failed 2 requests in a row" in report["llm_failure"]
    assert any("LLM part of the run failed" in n for n in report["notes"])
    # the run finished with what the expert agents found
    assert report["best"] is not None and report["best"]["agent"].startswith("expert")
    assert {c["agent"] for c in report["candidates"]} == {report["best"]["agent"]}
    assert "(the LLM part of the run failed)" in capsys.readouterr().out


def test_resume_asks_the_way_the_run_did(tmp_path, capsys):
    assert main(["optimize", "--resume", str(tmp_path), "--llm-timeout", "5"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == "egg: error: --resume RUN_DIR asks the LLM the way the run did (its config.json): give no --llm-timeout"


def test_kernelbench_checks_the_endpoint_once_before_the_suite(dead_url, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EGG_LLM_BASE_URL", dead_url)
    out = tmp_path / "suite"
    assert main(["kernelbench", "--root", str(tmp_path), "--level", "1", "--llm", "local:tiny-model",
                 "--out", str(out), "--device", "cpu"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("egg: error: --llm local:tiny-model: ") and f"cannot reach {dead_url}" in line
    assert not out.exists()
