"""The evaluation harness: is this candidate correct, and how much faster is it?"""

from egg.evaluate.harness import EvalOptions, Harness, evaluate_candidate
from egg.evaluate.verdict import TimingStats, TrialResult, Verdict

__all__ = ["EvalOptions", "Harness", "TimingStats", "TrialResult", "Verdict", "evaluate_candidate"]
