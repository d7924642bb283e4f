"""User principle packs written by tests (importable from any test: tests/conftest.py puts this
folder on ``sys.path``, as the suite imports tests with ``--import-mode=importlib``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def one_rule_pack(directory: Path, principle: str, applies_to: list[str], decision: dict[str, Any]) -> Path:
    """A user pack (``<name>/pack.yaml`` under ``directory``) of one principle ``<name>/<rule>``
    whose decision block is ``decision``; load it with ``principles.load_packs([path])``."""
    import yaml

    name = principle.split("/", 1)[0]
    root = directory / name
    root.mkdir(exist_ok=True)
    (root / "pack.yaml").write_text(yaml.safe_dump({
        "name": name, "version": "1.0.0", "description": f"A user's rule: {principle}.",
        "principles": [{"id": principle, "stage": "algorithm_design", "focus": "structure", "applies_to": applies_to,
                        "text": "A house rule.", "decisions": [decision]}]}, sort_keys=False))
    return root
