"""The capture tests share ``capture_helpers`` (imported by module name: the suite runs with
``--import-mode=importlib``, so this folder is put on ``sys.path`` here)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
