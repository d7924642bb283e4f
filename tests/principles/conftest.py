"""Fixtures for principle-pack tests: writing small packs into tmp_path."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

GOOD_PACK: dict[str, Any] = {
    "name": "test-pack",
    "version": "0.1.0",
    "description": "A pack written by the tests.",
    "principles": [
        {
            "id": "test-pack/first-rule",
            "stage": "hardware_tuning",
            "focus": "memory",
            "applies_to": ["reduction"],
            "bottleneck": "memory",
            "text": "Held-out advice about reductions and memory. It does not apply to matmuls.",
        },
        {
            "id": "test-pack/second-rule",
            "stage": "algorithm_design",
            "focus": "structure",
            "applies_to": ["elementwise", "broadcast"],
            "text": "Held-out advice about fusing elementwise chains. It hurts when nothing fuses.",
        },
    ],
}


def good_pack() -> dict[str, Any]:
    return copy.deepcopy(GOOD_PACK)


@pytest.fixture
def pack_data() -> dict[str, Any]:
    """A fresh, valid pack as a dict, to mutate into an invalid one."""
    return good_pack()


@pytest.fixture
def write_pack(tmp_path: Path) -> Callable[..., Path]:
    """write_pack(data, as_dir=True, files={relpath: text}) -> the pack directory (or .yaml file)."""

    def write(data: dict[str, Any] | str, *, as_dir: bool = True, name: str | None = None,
              files: dict[str, str] | None = None) -> Path:
        label = name or (data.get("name") if isinstance(data, dict) else None) or "pack"
        root = tmp_path / label
        root.mkdir(parents=True, exist_ok=True)
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
        for rel, content in (files or {}).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(content)
        if as_dir:
            (root / "pack.yaml").write_text(text)
            return root
        path = root / f"{label}.yaml"
        path.write_text(text)
        return path

    return write
