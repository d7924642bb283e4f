"""Patterns found by structure on the canonical graph, with algebraic normal forms.

``find_patterns(captured)`` lists the known computations in a graph (norms, softmax and its
relatives, cross-entropy, attention, rotary embeddings, GELU, gated MLPs, weight-only quantised
linears) however they were written: ``egg.analysis.patterns.forms`` recognises the usual
spellings of one value (rsqrt vs 1/sqrt, mean vs sum/n, x*x vs pow(x, 2), casts) without
rewriting anything. Matches are for reports, prompts and algorithm choices (online softmax for
long rows, Welford), never a precondition for fusion.
"""

from __future__ import annotations

from egg.analysis.models import PatternMatch
from egg.analysis.patterns.activations import find_gated_mlp, find_gelu
from egg.analysis.patterns.linear import find_weight_only_linear
from egg.analysis.patterns.norms import find_norms
from egg.analysis.patterns.rotary import find_rotary
from egg.analysis.patterns.softmax import find_attention, find_softmax_family
from egg.capture.model import CapturedGraph
from egg.vocabulary import OpClass

PATTERN_CLASSES: dict[str, OpClass] = {
    "rms_norm": OpClass.NORMALIZATION,
    "layer_norm": OpClass.NORMALIZATION,
    "group_norm": OpClass.NORMALIZATION,
    "batch_norm": OpClass.NORMALIZATION,
    "instance_norm": OpClass.NORMALIZATION,
    "norm": OpClass.NORMALIZATION,
    "softmax": OpClass.SOFTMAX,
    "log_softmax": OpClass.SOFTMAX,
    "logsumexp": OpClass.SOFTMAX,
    "cross_entropy": OpClass.LOSS,
    "attention": OpClass.ATTENTION,
}


def find_patterns(captured: CapturedGraph) -> list[PatternMatch]:
    """Every pattern in ``captured``'s graph, ordered by where it starts, without duplicates."""
    graph = captured.gm.graph
    names = {g.name: str(g.target) for g in captured.inputs if g.kind != "user_input"}
    softmaxes = find_softmax_family(graph, names)
    gelus = find_gelu(graph)
    by_name = {n.name: n for n in graph.nodes}
    gelu_ends = {by_name[m.nodes[-1]] for m in gelus if m.nodes}
    found = [
        *find_norms(graph, names),
        *softmaxes,
        *find_attention(graph, softmaxes),
        *find_rotary(graph, names),
        *gelus,
        *find_gated_mlp(graph, gelu_ends),
        *find_weight_only_linear(graph, names),
    ]
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    unique: dict[tuple[str, tuple[str, ...]], PatternMatch] = {}
    for match in found:
        unique.setdefault((match.family, tuple(match.nodes)), match)
    return sorted(unique.values(), key=lambda m: (order.get(m.nodes[0], 0) if m.nodes else 0, m.family))


__all__ = ["PATTERN_CLASSES", "PatternMatch", "find_patterns"]
