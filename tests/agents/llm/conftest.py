"""The local OpenAI-protocol server (``llm_stub``) as fixtures for the LLM tests.

The suite imports tests with ``--import-mode=importlib``, so this folder is put on ``sys.path``
for the stub module; ``tests/cli`` and ``tests/test_api.py`` import the same fixtures from it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from llm_stub import dead_url, openai_stub  # noqa: E402,F401 - fixtures
