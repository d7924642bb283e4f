"""A local KernelBench checkout, read the way KernelBench reads it.

KernelBench keeps problems in ``KernelBench/level{N}/{ID}_{Name}.py`` and takes a problem's id
from the filename prefix (``int(file_name.split("_")[0])``, see KernelBench's
``src/kernelbench/dataset.py``). Generated kernels are named by its scripts
``level_{L}_problem_{ID}_sample_{S}_kernel.py`` (``scripts/eval_from_generations.py``).

Nothing here is vendored: the user points ``--root`` at their own checkout. There is no skip list:
a problem that cannot run is attempted and reported as a failure.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from egg.errors import EggInputError

GENERATION_RE = re.compile(r"^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")


class KBProblem(BaseModel):
    """One problem file of a level."""

    level: int
    problem_id: int
    name: str  # the filename, as KernelBench's Problem.name ("19_ReLU.py")
    path: Path

    @property
    def stem(self) -> str:
        return Path(self.name).stem


def level_dir(root: str | Path, level: int) -> Path:
    """``ROOT/KernelBench/level{N}`` or ``ROOT/level{N}`` (one-line errors otherwise)."""
    root = Path(root)
    if level < 1:
        raise EggInputError(f"--level: expected a level >= 1, got {level}")
    if not root.is_dir():
        raise EggInputError(f"--root {root}: no such directory (expected a KernelBench checkout)")
    for candidate in (root / "KernelBench" / f"level{level}", root / f"level{level}"):
        if candidate.is_dir():
            return candidate
    raise EggInputError(
        f"--root {root}: no level{level} directory (looked for {root}/KernelBench/level{level} and {root}/level{level})"
    )


def list_problems(root: str | Path, level: int) -> list[KBProblem]:
    """Every problem of a level, sorted by id. Files without an integer id prefix are ignored."""
    folder = level_dir(root, level)
    found: dict[int, KBProblem] = {}
    for path in sorted(folder.glob("*.py")):
        head = path.name.split("_")[0]
        if not head.isdigit():
            continue
        problem_id = int(head)
        if problem_id in found:
            raise EggInputError(
                f"{folder}: problem id {problem_id} is used by both {found[problem_id].name} and {path.name}"
            )
        found[problem_id] = KBProblem(level=level, problem_id=problem_id, name=path.name, path=path.resolve())
    if not found:
        raise EggInputError(f"{folder}: no problem files named {{ID}}_{{Name}}.py")
    return [found[i] for i in sorted(found)]


def parse_ids(spec: str) -> list[int]:
    """``"1-20,35"`` -> [1, ..., 20, 35] (sorted, unique; one-line errors)."""
    ids: set[int] = set()
    parts = [p.strip() for p in spec.split(",")]
    if not any(parts):
        raise EggInputError(f"--ids: expected ids or ranges like 1-20,35, got {spec!r}")
    for part in parts:
        match = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not match:
            raise EggInputError(f"--ids: expected an id or a range like 1-20, got {part!r} in {spec!r}")
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        if low < 1 or high < low:
            raise EggInputError(f"--ids: {part!r} is not a range of ids >= 1 (low-high, low <= high)")
        ids.update(range(low, high + 1))
    return sorted(ids)


def select_problems(problems: list[KBProblem], ids: str | None = None, limit: int | None = None) -> list[KBProblem]:
    """The problems named by ``--ids`` (all when None), then the first ``--limit`` of them."""
    by_id = {p.problem_id: p for p in problems}
    if ids:
        wanted = parse_ids(ids)
        missing = [i for i in wanted if i not in by_id]
        if missing:
            shown = ", ".join(map(str, missing[:10])) + (f" (+{len(missing) - 10} more)" if len(missing) > 10 else "")
            level = problems[0].level if problems else "?"
            raise EggInputError(f"--ids: no level{level} problem with id {shown}")
        chosen = [by_id[i] for i in wanted]
    else:
        chosen = list(problems)
    if limit is not None:
        if limit < 1:
            raise EggInputError(f"--limit: expected an integer >= 1, got {limit}")
        chosen = chosen[:limit]
    return chosen


def find_generations(candidates: str | Path, level: int) -> dict[int, dict[int, Path]]:
    """``DIR/level_{L}_problem_{ID}_sample_{S}_kernel.py`` files of one level: {id: {sample: path}}."""
    folder = Path(candidates)
    if not folder.is_dir():
        raise EggInputError(f"--candidates {folder}: no such directory")
    found: dict[int, dict[int, Path]] = {}
    for path in sorted(folder.iterdir()):
        match = GENERATION_RE.match(path.name)
        if match and int(match.group(1)) == level and path.is_file():
            found.setdefault(int(match.group(2)), {})[int(match.group(3))] = path.resolve()
    if not found:
        raise EggInputError(
            f"--candidates {folder}: no files named level_{level}_problem_{{ID}}_sample_{{S}}_kernel.py"
        )
    return found


def generation_name(level: int, problem_id: int, sample_id: int) -> str:
    return f"level_{level}_problem_{problem_id}_sample_{sample_id}_kernel.py"
