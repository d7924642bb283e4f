# EGG expert candidate for short_seq_attention.py (agents.expert: loop-level IR + templates, no LLM)
# structure: torch keeps aten.bmm; pointwise kernel over 16777216 elements writing 1 output(s); pointwise kernel over 16777216 elements writing 1 output(s), tiled 32 x 64 over a transposed access; max, sum over 256 x 262144 rows, persistent (rows in registers), with 1 store(s)
# variant: fused: library ops stay torch calls, the ops around them are fused
#   _egg_poi0_bmm_in: XBLOCK=1024 num_warps=4 EVICT_STREAM='evict_first' EVICT_REUSE=''
#   _egg_poi1_bmm_in: XBLOCK=64 num_warps=4 EVICT_STREAM='evict_first' EVICT_REUSE='' YBLOCK=32
#   _egg_red3_amax_sum_bmm_1_in: PERSISTENT=True XBLOCK=16 RBLOCK=256 num_warps=8 EVICT_STREAM='evict_first' EVICT_REUSE='' ONLINE_MAX='row'
# principles: algorithm-structure/keep-library-gemm, algorithm-structure/fuse-elementwise-chain, parallel-mapping/flat-index-for-elementwise, tiling/power-of-two-blocks-with-masks, memory/eviction-hints, parallel-mapping/fill-the-machine-in-waves, memory/transpose-via-tiles, algorithm-structure/fuse-reduction-with-neighbours, tiling/fp32-accumulators, memory/masked-loads-neutral-other, tiling/one-pass-row-limit, parallel-mapping/one-row-per-program
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "XBLOCK": 1024, "num_warps": 4}, "kernel": "_egg_poi0_bmm_in", "template": "pointwise"}, {"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "XBLOCK": 64, "YBLOCK": 32, "num_warps": 4}, "kernel": "_egg_poi1_bmm_in", "template": "pointwise"}, {"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "ONLINE_MAX": "row", "PERSISTENT": true, "RBLOCK": 256, "XBLOCK": 16, "num_warps": 8}, "kernel": "_egg_red3_amax_sum_bmm_1_in", "template": "reduction"}], "shape_set": "default", "specialised": ["default"], "variant": "fused", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


"""Attention for short sequences: softmax(Q K^T / sqrt(d)) V, non-causal, q/k/v [B, H, S, D] bf16.

Where it occurs: encoders with short, fixed-length inputs, in training and inference: BERT and
sentence-embedding models (256 tokens), ViT/CLIP/SigLIP image encoders (197 or 257 patch
tokens), Whisper's and rerankers' short windows; also the per-chunk attention of many
multimodal pipelines. The reference is the unfused attention a model writes by hand, with
upcast scores as in GPT-2's ``reorder_and_upcast_attn`` and Stable Diffusion's
``upcast_attention``: fp32 scores matmul, scale, fp32 softmax, bf16 probabilities, value matmul.
It materialises the [B, H, S, S] score and probability matrices. (Scores rounded to bf16 before
the softmax, as in plain bf16 eager attention, are off by up to ~1.5% at these logit sizes, more
than the bf16 tolerance against the fp32 scores a fused kernel keeps; bf16 probabilities, as a
flash-attention kernel feeds its P @ V MMA, are within it.)

Sizes that matter: 64 sequences x 16 heads x 256 tokens x head_dim 64 (production; BERT-large /
ViT-L shaped). S <= 256 means a whole row of scores fits in one program, so no online softmax is
needed. The ``vit`` set is ViT-B/16 at 224 px (197 tokens, 12 heads); the ``odd`` set uses 197
tokens and head_dim 80. Queries and keys have std 1.5, so scaled scores have std ~2.25 and the
rows are peaked as in trained models.

Character: at production the four q/k/v/out tensors are 134 MB while the fused FLOPs are
4 * B * H * S^2 * D = 17.2 GFLOP: memory bound once fused (the reference also writes and reads
the 268 MB fp32 score matrix and a bf16 copy of it).

Bytes moved at production: q, k, v read and out written (compulsory traffic),
4 x 33.6 MB = 134.2 MB.
"""

import torch
import torch.nn as nn

BATCH = 64
HEADS = 16
SEQ = 256
HEAD_DIM = 64
DTYPE = "bfloat16"
SHAPES = {
    "small": {"BATCH": 1, "HEADS": 2, "SEQ": 8, "HEAD_DIM": 16, "DTYPE": "float32"},
    "odd": {"BATCH": 2, "HEADS": 3, "SEQ": 197, "HEAD_DIM": 80},
    "vit": {"BATCH": 64, "HEADS": 12, "SEQ": 197},
}


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scale = q.shape[-1] ** -0.5
        scores = torch.matmul(q.float(), k.float().transpose(-2, -1)) * scale
        probs = torch.softmax(scores, dim=-1).to(q.dtype)
        return torch.matmul(probs, v)


# ---- kernels ----


def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_poi0_bmm_in(q_ptr, bmm_in_ptr, XBLOCK: tl.constexpr):
    """pointwise: bmm_in"""
    xnumel = 16777216
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)
    tmp1 = tl.load(q_ptr + (xindex), eviction_policy="evict_first").to(tl.float32)
    tl.store(bmm_in_ptr + (xindex), tmp1.to(tl.float32))


_egg_poi0_bmm_in_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi0_bmm_in_launch(q):
    """pointwise: bmm_in"""
    global _egg_poi0_bmm_in_launch_k0
    bmm_in = torch.empty_strided((1024, 256, 64), (16384, 64, 1), dtype=torch.float32, device=q.device)
    if _egg_poi0_bmm_in_launch_k0 is not None and _egg_poi0_bmm_in_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(q, bmm_in):
        _egg_poi0_bmm_in_launch_k0[1][(16384, 1, 1)](q, bmm_in, 1024)
    elif q.device.type == "cuda" and _egg_aligned(q, bmm_in):
        _egg_poi0_bmm_in_launch_k0 = (torch.cuda.current_device(), _egg_poi0_bmm_in[(16384,)](
            q, bmm_in,
            XBLOCK=1024, num_warps=4,
        ))
    else:
        _egg_poi0_bmm_in[(16384,)](
            q, bmm_in,
            XBLOCK=1024, num_warps=4,
        )
    return (bmm_in,)

@triton.jit
def _egg_poi1_bmm_in(k_ptr, bmm_in_1_ptr, XBLOCK: tl.constexpr, YBLOCK: tl.constexpr):
    """pointwise: bmm_in_1"""
    xnumel = 16777216
    # a [YBLOCK, XBLOCK] tile of the flat index yindex * 256 + xinner: the transposed access
    # walks yindex with stride 1, the contiguous ones walk xinner, so both use whole sectors
    pid = tl.program_id(0)
    yindex = (pid // 4) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    xinner = (pid % 4) * XBLOCK + tl.arange(0, XBLOCK)[None, :]
    i1 = (yindex) % 64
    i2 = (yindex) // 64
    tmp3 = tl.load(k_ptr + (64*xinner + i1 + 16384*i2), eviction_policy="evict_first").to(tl.float32)
    tl.store(bmm_in_1_ptr + (xinner + 256*yindex), tmp3.to(tl.float32))


_egg_poi1_bmm_in_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi1_bmm_in_launch(k):
    """pointwise: bmm_in_1"""
    global _egg_poi1_bmm_in_launch_k0
    bmm_in_1 = torch.empty_strided((1024, 64, 256), (16384, 256, 1), dtype=torch.float32, device=k.device)
    if _egg_poi1_bmm_in_launch_k0 is not None and _egg_poi1_bmm_in_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(k, bmm_in_1):
        _egg_poi1_bmm_in_launch_k0[1][(8192, 1, 1)](k, bmm_in_1, 64, 32)
    elif k.device.type == "cuda" and _egg_aligned(k, bmm_in_1):
        _egg_poi1_bmm_in_launch_k0 = (torch.cuda.current_device(), _egg_poi1_bmm_in[(8192,)](
            k, bmm_in_1,
            XBLOCK=64, YBLOCK=32, num_warps=4,
        ))
    else:
        _egg_poi1_bmm_in[(8192,)](
            k, bmm_in_1,
            XBLOCK=64, YBLOCK=32, num_warps=4,
        )
    return (bmm_in_1,)

@triton.jit
def _egg_red3_amax_sum_bmm_1_in(bmm_ptr, bmm_1_in_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: amax, sum_1, bmm_1_in"""
    xnumel = 262144
    rnumel = 256
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    # persistent: the whole reduced extent of XBLOCK rows sits in registers, read once
    rindex = tl.arange(0, RBLOCK)[None, :]
    tmp1 = tl.load(bmm_ptr + (rindex + 256*xindex), eviction_policy="evict_first")
    tmp2 = (tmp1 * 0.125)
    tmp3 = tl.max(tmp2, 1)[:, None]
    tmp4 = tl.sum((tmp2 != tmp2).to(tl.int32), 1)[:, None] > 0
    tmp5 = tl.where(tmp4, float("nan"), tmp3)
    tmp6 = (tmp2 - tmp5)
    tmp7 = tl.exp(tmp6)
    tmp8 = tl.sum(tmp7, 1)[:, None]
    tmp9 = (tmp7 / tmp8)
    tmp10 = tmp9.to(tl.bfloat16).to(tl.float32)
    tl.store(bmm_1_in_ptr + (rindex + 256*xindex), tmp10.to(tl.bfloat16))


_egg_red3_amax_sum_bmm_1_in_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red3_amax_sum_bmm_1_in_launch(bmm):
    """reduction: amax, sum_1, bmm_1_in"""
    global _egg_red3_amax_sum_bmm_1_in_launch_k0
    bmm_1_in = torch.empty_strided((1024, 256, 256), (65536, 256, 1), dtype=torch.bfloat16, device=bmm.device)
    if _egg_red3_amax_sum_bmm_1_in_launch_k0 is not None and _egg_red3_amax_sum_bmm_1_in_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(bmm, bmm_1_in):
        _egg_red3_amax_sum_bmm_1_in_launch_k0[1][(16384, 1, 1)](bmm, bmm_1_in, 16, 256)
    elif bmm.device.type == "cuda" and _egg_aligned(bmm, bmm_1_in):
        _egg_red3_amax_sum_bmm_1_in_launch_k0 = (torch.cuda.current_device(), _egg_red3_amax_sum_bmm_1_in[(16384,)](
            bmm, bmm_1_in,
            XBLOCK=16, RBLOCK=256, num_warps=8,
        ))
    else:
        _egg_red3_amax_sum_bmm_1_in[(16384,)](
            bmm, bmm_1_in,
            XBLOCK=16, RBLOCK=256, num_warps=8,
        )
    return (bmm_1_in,)


# ---- the candidate ----


class ModelNew(Model):
    """library ops stay torch calls, the ops around them are fused: 3 Triton kernel launch(es) per call"""

    def __init__(self):
        super().__init__()
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        pass

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((64, 16, 256, 64), torch.bfloat16, (64, 16, 256, 64), torch.bfloat16, (64, 16, 256, 64), torch.bfloat16, )."""
    q = inputs[0]
    k = inputs[1]
    v = inputs[2]
    if (q.shape != (64, 16, 256, 64) or q.dtype != torch.bfloat16) or (k.shape != (64, 16, 256, 64) or k.dtype != torch.bfloat16) or (v.shape != (64, 16, 256, 64) or v.dtype != torch.bfloat16):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((q.shape, q.dtype)) + str((k.shape, k.dtype)) + str((v.shape, v.dtype)))
    if q.stride() != (262144, 16384, 64, 1):
        q = torch.empty_strided((64, 16, 256, 64), (262144, 16384, 64, 1), dtype=q.dtype, device=q.device).copy_(q)
    if k.stride() != (262144, 16384, 64, 1):
        k = torch.empty_strided((64, 16, 256, 64), (262144, 16384, 64, 1), dtype=k.dtype, device=k.device).copy_(k)
    if v.stride() != (262144, 16384, 64, 1):
        v = torch.empty_strided((64, 16, 256, 64), (262144, 16384, 64, 1), dtype=v.dtype, device=v.device).copy_(v)
    _dev = q.device
    bmm_in, = _egg_poi0_bmm_in_launch(q)
    bmm_in_1, = _egg_poi1_bmm_in_launch(k)
    bmm = torch.ops.aten.bmm.default(bmm_in, bmm_in_1)
    bmm_1_in, = _egg_red3_amax_sum_bmm_1_in_launch(bmm)
    bmm_1 = torch.ops.aten.bmm.default(bmm_1_in, v.view((1024, 256, 64)))
    return bmm_1.view((64, 16, 256, 64))
