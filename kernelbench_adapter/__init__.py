"""Run EGG on a local KernelBench checkout, or re-score KernelBench generations with EGG's harness.

Public API::

    from kernelbench_adapter import run_suite, rescore_suite

    report = run_suite(root, level=1, out="runs/kb-l1", config=RunConfig(...), ids="1-20,35")
    report = rescore_suite(root, level=1, candidates="runs/other-agent", out="runs/kb-rescore")
    report.metrics.vs_eager.fast_p["1.0"]

Both write ``OUT/results.json`` (KernelBench's eval_results.json shape) and ``OUT/suite.json``
(:class:`SuiteReport`) after every problem. See README.md in this package.
"""

from kernelbench_adapter.dataset import KBProblem, list_problems, parse_ids, select_problems
from kernelbench_adapter.metrics import (
    THRESHOLDS,
    BaselineMetrics,
    SuiteMetrics,
    fast_p,
    geometric_mean_speedup_correct_only,
    suite_metrics,
)
from kernelbench_adapter.rescore import rescore_suite
from kernelbench_adapter.results import SampleResult
from kernelbench_adapter.store import SuiteReport
from kernelbench_adapter.suite import run_suite

__all__ = [
    "THRESHOLDS",
    "BaselineMetrics",
    "KBProblem",
    "SampleResult",
    "SuiteMetrics",
    "SuiteReport",
    "fast_p",
    "geometric_mean_speedup_correct_only",
    "list_problems",
    "parse_ids",
    "rescore_suite",
    "run_suite",
    "select_problems",
    "suite_metrics",
]
