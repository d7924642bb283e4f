"""The transition memory on disk: one SQLite file shared by every run (and by concurrent ones).

Each evaluated candidate is one :class:`Observation`: the problem kind it was evaluated on, the
move it made (direction, strategy, the direction it moved from), and what the judge said
(accepted, gain over its starting point, cost in seconds). Statistics (gains, failure rates,
costs of directions, strategies and transitions) are computed from observations when they are
read (:mod:`egg.memory.retrieve`), so two runs writing at once can never leave a count half
updated: SQLite in WAL mode serialises the writers, each observation is one transaction, and a
``(run_id, candidate_id)`` key makes a resumed run or a re-import add nothing twice.

Export and import are JSON (``egg memory export|import``), so a team can pool its experience.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel, Field, ValidationError

from egg import __version__
from egg.config import cache_root
from egg.device import DeviceFacts
from egg.errors import EggInputError

log = structlog.get_logger(__name__)

FORMAT = "egg-memory"
FORMAT_VERSION = 1
BUSY_TIMEOUT_MS = 30_000  # a writer waits this long for another run's transaction to finish

_SCHEMA = """
CREATE TABLE IF NOT EXISTS observations (
    run_id TEXT NOT NULL,
    candidate_id TEXT NOT NULL,
    problem TEXT NOT NULL,
    problem_sha TEXT NOT NULL,
    op_classes TEXT NOT NULL,
    bottleneck TEXT,
    patterns TEXT NOT NULL,
    dtypes TEXT NOT NULL,
    device TEXT NOT NULL,
    anchors TEXT,
    stage TEXT NOT NULL,
    focus TEXT NOT NULL,
    direction TEXT NOT NULL,
    strategy TEXT NOT NULL,
    from_direction TEXT NOT NULL,
    principle_ids TEXT NOT NULL,
    accepted INTEGER NOT NULL,
    stage_failed TEXT,
    gain REAL,
    speedup_vs_eager REAL,
    seconds REAL,
    evidence TEXT,
    created TEXT NOT NULL,
    egg_version TEXT NOT NULL,
    PRIMARY KEY (run_id, candidate_id)
);
CREATE INDEX IF NOT EXISTS observations_by_direction ON observations (stage, focus, direction);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_LIST_COLUMNS = ("op_classes", "patterns", "dtypes", "principle_ids")
# Columns added after a memory file could already exist: (name, SQL type), added on open.
_LATER_COLUMNS = (("anchors", "TEXT"),)


def default_memory_path() -> Path:
    """Where runs keep their experience unless told otherwise: under the cache directory
    (EGG_CACHE_DIR), in a folder of its own (SQLite keeps its -wal and -shm files beside it)."""
    return cache_root() / "memory" / "memory.sqlite"


def anchor_of(op: dict[str, Any]) -> str | None:
    """What kind of heavy computation an analysed op is, finer than its op class: a 3-D transposed
    convolution and a 2-D one share the class ``conv`` and little else (on the H200 a channels-last
    layout won on 2-D convolutions and lost 30x on a transposed one, 2026-12-04). None for the rest."""
    if op.get("op_class") == "conv":
        args, shapes = op.get("args") or {}, op.get("input_shapes") or []
        # aten.convolution always has a stride per spatial dim; else the input's rank ([N, C, *spatial])
        dims = len(args.get("stride") or ()) or max(len(shapes[0]) - 2 if shapes else 2, 1)
        name = f"{'conv_transpose' if args.get('transposed') else 'conv'}{dims}d"
        if len(shapes) > 1 and shapes[1] and all(k == 1 for k in shapes[1][2:]):
            name += "-1x1"  # a pointwise convolution is a GEMM
        if (args.get("groups") or 1) > 1:
            name += "-grouped"
        return name
    if op.get("op_class") == "matmul":
        shapes = op.get("input_shapes") or []
        batched = any(len(s) > 2 for s in shapes if s) and not str(op.get("target", "")).startswith("aten.addmm")
        return "bmm" if batched else "matmul"
    return None


class Context(BaseModel):
    """The kind of problem an observation was made on (what retrieval matches on)."""

    op_classes: list[str] = Field(default_factory=list)
    bottleneck: str | None = None
    patterns: list[str] = Field(default_factory=list)
    dtypes: list[str] = Field(default_factory=list)
    device: str = "unknown"
    anchors: list[str] | None = Field(default=None, description=(
        "the heavy ops' kinds (conv2d, conv_transpose3d, matmul, bmm, ...; see anchor_of); None on "
        "observations recorded before EGG kept them"))

    @classmethod
    def from_analysis(cls, analysis: dict[str, Any], device: DeviceFacts | str) -> Context:
        """``device``: the facts a run tunes for. A CPU run's observations are labelled apart from a
        GPU's (same tuning target, but only rejections are measured there), so they count as
        similar to them, not the same."""
        if isinstance(device, DeviceFacts):
            device = device.name if device.source == "device" else f"{device.name} (defaults, CPU run)"
        tensors = [*analysis.get("inputs", []), *analysis.get("parameters", []), *analysis.get("outputs", [])]
        return cls(
            op_classes=sorted(str(c) for c in analysis.get("op_classes", [])),
            bottleneck=analysis.get("bottleneck"),
            patterns=sorted({p["family"] for p in analysis.get("patterns") or []}),
            dtypes=sorted({t["dtype"] for t in tensors if t.get("is_tensor", True)}),
            device=device,
            anchors=sorted({a for op in analysis.get("ops") or [] if (a := anchor_of(op))}),
        )

    def line(self) -> str:
        anchors = f" ({'+'.join(self.anchors)})" if self.anchors else ""
        return (f"{'+'.join(self.op_classes) or '-'}{anchors} / {self.bottleneck or '-'} / "
                f"{'+'.join(self.patterns) or '-'} / {'+'.join(self.dtypes) or '-'} on {self.device}")


class Observation(BaseModel):
    """One evaluated candidate, as the memory keeps it."""

    run_id: str
    candidate_id: str
    problem: str  # the problem file's name
    problem_sha: str = Field(default="", description="sha256 of the problem's source: which problem it was")
    context: Context
    stage: str
    focus: str
    direction: str
    strategy: str
    from_direction: str
    principle_ids: list[str] = Field(default_factory=list)
    accepted: bool
    stage_failed: str | None = None
    gain: float | None = Field(default=None, description="speedup over the move's start (parent, or eager); "
                               "None when not accepted or timings are not comparable")
    speedup_vs_eager: float | None = None
    seconds: float | None = Field(default=None, description="what evaluating it cost")
    evidence: str | None = Field(default=None, description="the profiler's one-line bottleneck statement")
    created: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    egg_version: str = __version__


def _row(obs: Observation) -> dict[str, Any]:
    c = obs.context
    return {
        "run_id": obs.run_id, "candidate_id": obs.candidate_id, "problem": obs.problem, "problem_sha": obs.problem_sha,
        "op_classes": json.dumps(c.op_classes), "bottleneck": c.bottleneck, "patterns": json.dumps(c.patterns),
        "dtypes": json.dumps(c.dtypes), "device": c.device,
        "anchors": None if c.anchors is None else json.dumps(c.anchors), "stage": obs.stage, "focus": obs.focus,
        "direction": obs.direction, "strategy": obs.strategy, "from_direction": obs.from_direction,
        "principle_ids": json.dumps(obs.principle_ids), "accepted": int(obs.accepted),
        "stage_failed": obs.stage_failed, "gain": obs.gain, "speedup_vs_eager": obs.speedup_vs_eager,
        "seconds": obs.seconds, "evidence": obs.evidence, "created": obs.created, "egg_version": obs.egg_version,
    }


def _observation(row: sqlite3.Row) -> Observation:
    data = dict(row)
    lists = {k: json.loads(data.pop(k)) for k in _LIST_COLUMNS}
    anchors = data.pop("anchors", None)
    context = Context(op_classes=lists["op_classes"], bottleneck=data.pop("bottleneck"), patterns=lists["patterns"],
                      dtypes=lists["dtypes"], device=data.pop("device"),
                      anchors=None if anchors is None else json.loads(anchors))
    accepted = bool(data.pop("accepted"))
    return Observation(**data, context=context, principle_ids=lists["principle_ids"], accepted=accepted)


def open_memory(path: str | Path | None, use: bool = True) -> tuple[TransitionMemory | None, str]:
    """The memory a run uses and a line for its report. A path the user named must open (else a
    one-line error); the default one failing leaves the run without memory, saying so."""
    if not use:
        return None, "transition memory off (--no-memory): nothing read from or written to it"
    target = Path(path) if path else default_memory_path()
    try:
        return TransitionMemory(target), f"transition memory: {target}"
    except EggInputError as exc:
        if path:
            raise
        log.warning("memory.unavailable", path=str(target), error=str(exc))
        return None, f"transition memory unavailable, the run went without it: {exc}"


class TransitionMemory:
    """A memory file. Every method opens its own connection, so threads and processes may share it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.executescript(_SCHEMA)
                have = {r["name"] for r in db.execute("PRAGMA table_info(observations)")}
                for name, kind in _LATER_COLUMNS:
                    if name not in have:  # a file written by an older EGG: its rows read back as unknown
                        try:
                            db.execute(f"ALTER TABLE observations ADD COLUMN {name} {kind}")
                        except sqlite3.OperationalError as exc:  # another run opening it added it first
                            if "duplicate column" not in str(exc):
                                raise
        except (OSError, sqlite3.Error) as exc:
            raise EggInputError(f"--memory {self.path}: cannot open the transition memory: {exc}") from None

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            db.row_factory = sqlite3.Row
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode = WAL")  # readers never block the writer, nor it them
            db.execute("PRAGMA synchronous = NORMAL")
            yield db
        finally:
            db.close()

    def record(self, observations: Iterable[Observation]) -> int:
        """Add observations in one transaction; returns how many were new (the rest were known)."""
        rows = [_row(o) for o in observations]
        if not rows:
            return 0
        columns = list(rows[0])
        sql = (f"INSERT OR IGNORE INTO observations ({', '.join(columns)}) "
               f"VALUES ({', '.join(':' + c for c in columns)})")
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")  # take the write lock now: no upgrade deadlock with another writer
            try:
                before = db.total_changes
                db.executemany(sql, rows)
                added = db.total_changes - before
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return added

    def observations(self, stage: str | None = None) -> list[Observation]:
        query, args = "SELECT * FROM observations", ()
        if stage is not None:
            query, args = query + " WHERE stage = ?", (stage,)
        with self._connect() as db:
            return [_observation(r) for r in db.execute(query + " ORDER BY created, run_id, candidate_id", args)]

    def count(self) -> int:
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM observations").fetchone()[0])

    def clear(self) -> int:
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            removed = db.execute("DELETE FROM observations").rowcount
            db.execute("COMMIT")
        return removed

    # -- sharing ----------------------------------------------------------------------------------
    def export(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": FORMAT_VERSION, "egg_version": __version__,
                "observations": [o.model_dump(mode="json") for o in self.observations()]}

    def import_file(self, path: str | Path) -> tuple[int, int]:
        """Add the observations of an exported file; returns (new, already present)."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise EggInputError(f"{path}: cannot read a memory export: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise EggInputError(f"{path}: not an EGG memory export (expected \"format\": \"{FORMAT}\")")
        if data.get("version") != FORMAT_VERSION:
            raise EggInputError(f"{path}: version: memory export version {data.get('version')!r} is not "
                                f"{FORMAT_VERSION}, the one this EGG reads")
        items = data.get("observations")
        if not isinstance(items, list):
            raise EggInputError(f"{path}: observations: expected a list")
        observations = []
        for index, item in enumerate(items):
            try:
                observations.append(Observation.model_validate(item))
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in (index, *err["loc"]))
                raise EggInputError(f"{path}: observations.{where}: {err['msg'].lower()}") from None
        added = self.record(observations)
        return added, len(observations) - added
