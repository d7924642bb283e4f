# EGG expert candidate for nanogpt_tril.py (agents.expert: loop-level IR + templates, no LLM)
# structure: torch keeps aten.bmm; max, sum over 1024 x 98304 rows, persistent (rows in registers), with 1 store(s)
# variant: fused: library ops stay torch calls, the ops around them are fused
#   _egg_red1_amax_sum_bmm_1_in: PERSISTENT=True XBLOCK=4 RBLOCK=1024 num_warps=8 EVICT_STREAM='evict_first' EVICT_REUSE='' ONLINE_MAX='row'
# principles: algorithm-structure/keep-library-gemm, algorithm-structure/fuse-reduction-with-neighbours, tiling/fp32-accumulators, memory/masked-loads-neutral-other, tiling/one-pass-row-limit, parallel-mapping/one-row-per-program
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "ONLINE_MAX": "row", "PERSISTENT": true, "RBLOCK": 1024, "XBLOCK": 4, "num_warps": 8}, "kernel": "_egg_red1_amax_sum_bmm_1_in", "template": "reduction"}], "shape_set": "default", "specialised": ["default"], "variant": "fused", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


"""nanoGPT's slow-path ``CausalSelfAttention`` core (``model.py``, the branch without flash): ``att
= (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))``, ``att.masked_fill(self.bias[:, :, :T,
:T] == 0, float('-inf'))`` with a registered ``tril`` buffer, ``F.softmax``, ``att @ v`` (dropout
off: eval). q/k/v [batch, heads, seq, head_dim]."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
HEADS = 12
SEQ = 1024
HEAD_DIM = 64
BLOCK_SIZE = 1024
SHAPES = {"small": {"BATCH": 2, "HEADS": 2, "SEQ": 6, "HEAD_DIM": 8, "BLOCK_SIZE": 8}}


class Model(nn.Module):
    def __init__(self, block_size: int) -> None:
        super().__init__()
        self.register_buffer(
            "bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        )

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return att @ v


# ---- kernels ----


def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_red1_amax_sum_bmm_1_in(b_bias_ptr, bmm_ptr, bmm_1_in_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: amax, sum_1, bmm_1_in"""
    xnumel = 98304
    rnumel = 1024
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    # persistent: the whole reduced extent of XBLOCK rows sits in registers, read once
    rindex = tl.arange(0, RBLOCK)[None, :]
    i1 = (xindex) % 1024
    tmp2 = tl.load(b_bias_ptr + (rindex + 1024*i1))
    tmp3 = (tmp2 == 0.0)
    tmp4 = tl.load(bmm_ptr + (rindex + 1024*xindex), eviction_policy="evict_first")
    tmp5 = (tmp4 * 0.125)
    tmp6 = tl.where(tmp3, float("-inf"), tmp5)
    tmp7 = tl.max(tmp6, 1)[:, None]
    tmp8 = tl.sum((tmp6 != tmp6).to(tl.int32), 1)[:, None] > 0
    tmp9 = tl.where(tmp8, float("nan"), tmp7)
    tmp10 = (tmp6 - tmp9)
    tmp11 = tl.exp(tmp10)
    tmp12 = tl.sum(tmp11, 1)[:, None]
    tmp13 = (tmp11 / tmp12)
    tl.store(bmm_1_in_ptr + (rindex + 1024*xindex), tmp13.to(tl.float32))


_egg_red1_amax_sum_bmm_1_in_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red1_amax_sum_bmm_1_in_launch(b_bias, bmm):
    """reduction: amax, sum_1, bmm_1_in"""
    global _egg_red1_amax_sum_bmm_1_in_launch_k0
    bmm_1_in = torch.empty_strided((96, 1024, 1024), (1048576, 1024, 1), dtype=torch.float32, device=b_bias.device)
    if _egg_red1_amax_sum_bmm_1_in_launch_k0 is not None and _egg_red1_amax_sum_bmm_1_in_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(b_bias, bmm, bmm_1_in):
        _egg_red1_amax_sum_bmm_1_in_launch_k0[1][(24576, 1, 1)](b_bias, bmm, bmm_1_in, 4, 1024)
    elif b_bias.device.type == "cuda" and _egg_aligned(b_bias, bmm, bmm_1_in):
        _egg_red1_amax_sum_bmm_1_in_launch_k0 = (torch.cuda.current_device(), _egg_red1_amax_sum_bmm_1_in[(24576,)](
            b_bias, bmm, bmm_1_in,
            XBLOCK=4, RBLOCK=1024, num_warps=8,
        ))
    else:
        _egg_red1_amax_sum_bmm_1_in[(24576,)](
            b_bias, bmm, bmm_1_in,
            XBLOCK=4, RBLOCK=1024, num_warps=8,
        )
    return (bmm_1_in,)


# ---- the candidate ----


class ModelNew(Model):
    """library ops stay torch calls, the ops around them are fused: 1 Triton kernel launch(es) per call"""

    def __init__(self, block_size: int):
        super().__init__(block_size)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        self._egg_owners = (self,)

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((8, 12, 1024, 64), torch.float32, (8, 12, 1024, 64), torch.float32, (8, 12, 1024, 64), torch.float32, )."""
    owners = self._egg_owners
    b_bias = owners[0].bias
    q = inputs[0]
    k = inputs[1]
    v = inputs[2]
    if (q.shape != (8, 12, 1024, 64) or q.dtype != torch.float32) or (k.shape != (8, 12, 1024, 64) or k.dtype != torch.float32) or (v.shape != (8, 12, 1024, 64) or v.dtype != torch.float32):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((q.shape, q.dtype)) + str((k.shape, k.dtype)) + str((v.shape, v.dtype)))
    if q.stride() != (786432, 65536, 64, 1):
        q = torch.empty_strided((8, 12, 1024, 64), (786432, 65536, 64, 1), dtype=q.dtype, device=q.device).copy_(q)
    if k.stride() != (786432, 65536, 64, 1):
        k = torch.empty_strided((8, 12, 1024, 64), (786432, 65536, 64, 1), dtype=k.dtype, device=k.device).copy_(k)
    if v.stride() != (786432, 65536, 64, 1):
        v = torch.empty_strided((8, 12, 1024, 64), (786432, 65536, 64, 1), dtype=v.dtype, device=v.device).copy_(v)
    _dev = q.device
    bmm = torch.ops.aten.bmm.default(q.view((96, 1024, 64)), k.as_strided((96, 64, 1024), (65536, 1, 64), k.storage_offset()))
    bmm_1_in, = _egg_red1_amax_sum_bmm_1_in_launch(b_bias, bmm)
    bmm_1 = torch.ops.aten.bmm.default(bmm_1_in, v.view((96, 1024, 64)))
    return bmm_1.view((8, 12, 1024, 64))
