"""Profiler evidence for accepted candidates: the roofline path always, Nsight Compute where it works.

* :func:`roofline_evidence` — achieved bandwidth and FLOP rate against the device's ceilings;
* :func:`parse_ncu_csv`, :func:`ncu_evidence` — ``ncu --csv`` output to metrics and a one-line
  bottleneck statement ("memory-bound at 0.62 of DRAM peak; L2 hit 31%; top stall: long scoreboard");
* :func:`profile_candidate` — ncu over a separate process (:mod:`egg.profile.target`), falling
  back to the roofline with a note saying why.
"""

from egg.profile.evidence import Evidence, Stall, roofline_evidence
from egg.profile.ncu import METRICS, KernelMetrics, NcuFailed, ncu_evidence, parse_ncu_csv
from egg.profile.runner import find_ncu, ncu_command, profile_candidate, run_ncu

__all__ = [
    "METRICS",
    "Evidence",
    "KernelMetrics",
    "NcuFailed",
    "Stall",
    "find_ncu",
    "ncu_command",
    "ncu_evidence",
    "parse_ncu_csv",
    "profile_candidate",
    "roofline_evidence",
    "run_ncu",
]
