"""Analysis of a reference program: its ops, their classes and costs, fusion candidates and the
H200 roofline. Read by the agents and by principle retrieval."""

from egg.analysis.analyze import analyze_module, analyze_problem
from egg.analysis.models import FusionGroup, OpNode, ProblemAnalysis, TensorSpec
from egg.analysis.roofline import H200_ROOFLINE

__all__ = [
    "H200_ROOFLINE",
    "FusionGroup",
    "OpNode",
    "ProblemAnalysis",
    "TensorSpec",
    "analyze_module",
    "analyze_problem",
]
