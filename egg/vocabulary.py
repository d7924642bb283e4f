"""The fixed vocabulary shared by analysis, principle packs, agents and reports.

Everything that classifies work (operator classes, stages, focuses, bottlenecks) uses these
enums, so a principle pack, the analysis of a problem and an agent's task always speak the same
words. Values are the strings users write in YAML packs and see in reports.
"""

from __future__ import annotations

from enum import Enum


class OpClass(str, Enum):
    """Operator classes. A problem is described by the set of classes its forward uses."""

    ELEMENTWISE = "elementwise"  # pointwise math on one or more same-shape tensors
    BROADCAST = "broadcast"  # pointwise with broadcasting (bias add, scale by a vector)
    REDUCTION = "reduction"  # sum/mean/max/min/argmax/argmin/prod/norms over a dim
    NORMALIZATION = "normalization"  # layer/RMS/group/instance/batch norm
    SOFTMAX = "softmax"  # softmax, log-softmax, logsumexp
    SCAN = "scan"  # cumsum, cumprod and other prefix scans
    MATMUL = "matmul"  # mm, bmm, linear, matmul, einsum contractions
    CONV = "conv"  # convolutions and transposed convolutions
    POOLING = "pooling"  # max/avg pooling
    LOSS = "loss"  # cross-entropy, MSE, KL, hinge, ...
    INDEXING = "indexing"  # gather/scatter/index_select/embedding/masking/cat/slicing
    ATTENTION = "attention"  # scaled dot-product attention
    OTHER = "other"  # anything the analysis cannot place


class Stage(str, Enum):
    ALGORITHM_DESIGN = "algorithm_design"
    HARDWARE_TUNING = "hardware_tuning"


class Focus(str, Enum):
    STRUCTURE = "structure"  # stage 1: what to fuse, which algorithm
    PARALLEL_MAPPING = "parallel_mapping"  # stage 2: work per program, grid shape
    TILING = "tiling"  # stage 2: block shapes, warps, stages
    MEMORY = "memory"  # stage 2: access patterns, caching hints


class Bottleneck(str, Enum):
    MEMORY = "memory"
    COMPUTE = "compute"
    LATENCY = "latency"  # too little work to fill the GPU: launch and latency bound


class Backend(str, Enum):
    TRITON = "triton"
    CUDA = "cuda"


STAGE_FOCUSES: dict[Stage, tuple[Focus, ...]] = {
    Stage.ALGORITHM_DESIGN: (Focus.STRUCTURE,),
    Stage.HARDWARE_TUNING: (Focus.PARALLEL_MAPPING, Focus.TILING, Focus.MEMORY),
}
