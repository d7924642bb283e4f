"""Transition memory (after HTAM): experience that carries across runs.

* :mod:`egg.memory.directions` — what move a candidate made: a global direction (stage x focus:
  "fuse the epilogue into a Triton matmul", "retile for tensor cores", "cut memory traffic") and
  the local strategy under it (a variant, a tuning value, the principles an LLM applied);
* :mod:`egg.memory.store` — the SQLite file (WAL, one transaction per write, concurrent runs
  safe), JSON export and import;
* :mod:`egg.memory.retrieve` — for a problem, directions and strategies ordered by the gains
  recorded on problems like it, transitions between directions, and the prompt section.
"""

from egg.memory.directions import DIRECTIONS, START, Move, classify, read_header
from egg.memory.retrieve import (
    DirectionStats,
    Stats,
    StrategyStats,
    TransitionStats,
    directions,
    render_experience,
    transitions,
    weight,
)
from egg.memory.store import Context, Observation, TransitionMemory, default_memory_path, open_memory

__all__ = [
    "DIRECTIONS",
    "START",
    "Context",
    "DirectionStats",
    "Move",
    "Observation",
    "Stats",
    "StrategyStats",
    "TransitionMemory",
    "TransitionStats",
    "classify",
    "default_memory_path",
    "open_memory",
    "directions",
    "read_header",
    "render_experience",
    "transitions",
    "weight",
]
