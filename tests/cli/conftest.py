"""The CLI tests use the local OpenAI-protocol server of ``tests/agents/llm`` (``llm_stub``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "agents" / "llm"))

from llm_stub import dead_url, openai_stub  # noqa: E402,F401 - fixtures
