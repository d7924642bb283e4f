"""The one analysis of a reference program, computed from its canonical graph (``egg.capture``):
its ops, their classes and costs, the patterns it contains, fusion candidates and the H200
roofline. Read by the agents, the LLM prompts, principle retrieval and the report."""

from egg.analysis.analyze import analyze_captured, analyze_module, analyze_problem
from egg.analysis.models import FusionGroup, OpNode, PatternMatch, ProblemAnalysis, TensorSpec
from egg.analysis.patterns import find_patterns
from egg.analysis.roofline import H200_ROOFLINE

__all__ = [
    "H200_ROOFLINE",
    "FusionGroup",
    "OpNode",
    "PatternMatch",
    "ProblemAnalysis",
    "TensorSpec",
    "analyze_captured",
    "analyze_module",
    "analyze_problem",
    "find_patterns",
]
