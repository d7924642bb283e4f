"""What the expert tunes for: the device kind, its SM count, and the packs' heuristic constants.

A :class:`Target` is what a template's ``default_config`` and ``render`` read instead of numbers
written into code: ``sm_count`` comes from the device (``egg.device``; the H200's 132 on a CPU
run), the constants from ``principles.decide`` (their defaults are the built-in packs' declared
values, the numbers the expert codegen was tuned with on the H200). ``credit(name)`` is the
principle behind a constant's current value, so a kernel that used the constant names it.

``as_target("cpu" | "cuda")`` gives the built-in defaults, so a template (or a test) called with a
bare device kind behaves exactly as before packs drove it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from egg.device import DeviceFacts, default_facts

# The constants the built-in templates read (declared, with their defaults, in principles/builtin).
PERSISTENT_ROW_MAX = "tiling/persistent-row-max"
POINTWISE_PROGRAMS_PER_SM = "parallel-mapping/pointwise-programs-per-sm"
REDUCTION_PROGRAMS_PER_SM = "parallel-mapping/reduction-programs-per-sm"
SPLIT_K_MIN_K = "algorithm-structure/split-k-min-k"
SPLIT_K_MIN_STEPS = "algorithm-structure/split-k-min-steps"
SPLIT_K_TARGET_WAVES = "algorithm-structure/split-k-target-waves"
K_PHASE_MAX_PERIOD = "algorithm-structure/k-phase-max-period"
SCALE_AFTER_DOT = "algorithm-structure/scale-after-dot"
REMEMBERED_CONFIGS = "algorithm-structure/remembered-configs"
DIRECT_LAUNCH = "parallel-mapping/direct-launch"
SCREEN_CONFIGS = "tiling/screen-configs"
FOLD_BATCH_MIN_WASTE = "tiling/fold-batch-min-waste"
PHASE_GEMM_STAGES = "tiling/output-phase-gemm-stages"
CHAIN_ACCUMULATORS = "algorithm-structure/chain-accumulators-per-thread"
SKIP_MASKED_BLOCKS = "algorithm-structure/skip-masked-blocks"
PASSES_WHOLE_K_MAX = "algorithm-structure/passes-whole-k-max"
SCREEN_SECONDS = "tiling/screen-seconds"
SCREEN_SPARES = "tiling/screen-spares"
CONV_GEMM_FIRST_MAX_K = "algorithm-structure/conv-gemm-first-max-k"
CONV_GEMM_REGISTER_SHARE = "algorithm-structure/conv-gemm-register-rounding-min-share"
SELECT_KEYS_PER_LANE = "algorithm-structure/order-statistic-keys-per-lane"
SELECT_TILE_MAX = "algorithm-structure/order-statistic-tile-max"
SELECT_KEPT_REDUCE = "algorithm-structure/order-statistic-kept-reductions"
SELECT_KEPT_STORE = "algorithm-structure/order-statistic-kept-stores"
SPLIT_MAX_ROWS_PER_SM = "algorithm-structure/split-reduction-max-rows-per-sm"
SPLIT_MIN_LENGTH = "algorithm-structure/split-reduction-min-length"
SPLIT_PROGRAMS_PER_SM = "algorithm-structure/split-reduction-programs-per-sm"


@dataclass(frozen=True)
class Target:
    kind: str = "cuda"  # "cuda" | "cpu": which heuristics (the interpreter wants few, large programs)
    sm_count: int = 132
    constants: Mapping[str, Any] = field(default_factory=dict)
    deciders: Mapping[str, str | None] = field(default_factory=dict)  # constant -> principle behind its value

    @property
    def cpu(self) -> bool:
        return self.kind == "cpu"

    def const(self, name: str) -> Any:
        if name not in self.constants:
            raise KeyError(f"no loaded pack declares the constant {name!r}")
        return self.constants[name]

    def credit(self, *names: str) -> list[str]:
        """The principles behind these constants' values (for a kernel's principle ids)."""
        return [p for n in names if (p := self.deciders.get(n))]


def target_from(kind: str, decisions: Any | None = None, device: DeviceFacts | None = None) -> Target:
    """The target for ``kind`` under ``decisions`` (a ``principles.Decisions``; None: built-in
    defaults). The SM count is the decisions' device facts', else ``device``'s, else the H200's."""
    if decisions is None:
        base = _builtin(kind)
        return base if device is None else Target(kind, device.sm_count, base.constants, base.deciders)
    sms = decisions.facts.sm_count or (device.sm_count if device is not None else default_facts().sm_count)
    return Target(kind=kind, sm_count=int(sms),
                  constants={n: c.value for n, c in decisions.constants.items()},
                  deciders={n: c.decided_by for n, c in decisions.constants.items()})


@functools.lru_cache(maxsize=4)
def _builtin(kind: str) -> Target:
    from principles import Facts, decide, load_packs

    facts = default_facts()
    packs = load_packs(entry_points=False)
    d = decide(packs, Facts(device=facts.name, sm_count=facts.sm_count, arch=facts.arch))
    return target_from(kind, d)


def as_target(device: str | Target) -> Target:
    """A Target as it is, or the built-in defaults for a bare ``"cpu"``/``"cuda"``."""
    return device if isinstance(device, Target) else _builtin("cpu" if device == "cpu" else "cuda")
