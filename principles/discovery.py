"""Finding packs: built-ins, installed entry points, explicit paths.

Load order (later wins on a shared principle id or pack name):

1. built-ins: every directory under ``principles/builtin/`` with a ``pack.yaml``, by name;
2. entry points of group ``egg.principles``, sorted by entry-point name. An entry point's value
   is a path (``str`` / ``os.PathLike``), a callable returning one, or a list of either, e.g.
   ``[project.entry-points."egg.principles"] mypack = "mypkg:pack_path"``;
3. ``--principles PATH`` arguments, in the order given.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

import structlog

from egg.errors import EggInputError
from principles.loader import LoadedPack, load_pack
from principles.packset import PackSet

log = structlog.get_logger(__name__)

ENTRY_POINT_GROUP = "egg.principles"
BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"


def builtin_pack_paths() -> list[Path]:
    """Directories of the built-in packs, sorted by name."""
    return sorted(p for p in BUILTIN_DIR.iterdir() if (p / "pack.yaml").is_file())


def _as_paths(value: Any, ep: EntryPoint, depth: int = 0) -> list[Path]:
    if isinstance(value, (str, os.PathLike)):
        return [Path(value)]
    if callable(value) and depth == 0:
        try:
            result = value()
        except Exception as exc:  # noqa: BLE001 - third-party code; report it as one line
            raise EggInputError(
                f"entry point {ENTRY_POINT_GROUP}:{ep.name} ({ep.value}): calling it failed: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        return _as_paths(result, ep, depth + 1)
    if isinstance(value, (list, tuple)):
        return [p for item in value for p in _as_paths(item, ep, depth + 1)]
    raise EggInputError(
        f"entry point {ENTRY_POINT_GROUP}:{ep.name} ({ep.value}): expected a path or a callable "
        f"returning a path, got {type(value).__name__}"
    )


def entry_point_pack_paths() -> list[Path]:
    """Pack paths advertised by installed distributions, sorted by entry-point name."""
    seen: set[tuple[str, str]] = set()
    paths: list[Path] = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
        if (ep.name, ep.value) in seen:  # the same distribution found twice on sys.path
            continue
        seen.add((ep.name, ep.value))
        try:
            value = ep.load()
        except Exception as exc:  # noqa: BLE001 - an entry point may fail in any way
            raise EggInputError(
                f"entry point {ENTRY_POINT_GROUP}:{ep.name} ({ep.value}): cannot load: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        paths.extend(_as_paths(value, ep))
    return paths


def load_packs(
    paths: Sequence[str | Path] = (),
    *,
    builtins: bool = True,
    entry_points: bool = True,
) -> PackSet:
    """Built-ins, then entry-point packs, then ``paths`` (in order); later packs override earlier."""
    loaded: list[LoadedPack] = []
    if builtins:
        loaded += [load_pack(p, origin="builtin") for p in builtin_pack_paths()]
    if entry_points:
        loaded += [load_pack(p, origin="entry_point") for p in entry_point_pack_paths()]
    loaded += [load_pack(p, origin="path") for p in paths]
    packs = PackSet(loaded)
    log.debug("principles.loaded", packs=[f"{v.name}@{v.version}" for v in packs.versions()])
    return packs

