# EGG expert candidate for problem.py (agents.expert: loop-level IR + templates, no LLM)
# structure: torch keeps aten.bmm; max, sum over 1024 x 65536 rows, persistent (rows in registers), with 1 store(s)
# variant: fused: library ops stay torch calls, the ops around them are fused
#   _egg_red1_amax_sum_bmm_1_in: PERSISTENT=True XBLOCK=4 RBLOCK=1024 num_warps=8 EVICT_STREAM='evict_first' EVICT_REUSE='' ONLINE_MAX='row'
# principles: algorithm-structure/keep-library-gemm, algorithm-structure/fuse-reduction-with-neighbours, tiling/fp32-accumulators, memory/masked-loads-neutral-other, tiling/one-pass-row-limit, parallel-mapping/one-row-per-program
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "ONLINE_MAX": "row", "PERSISTENT": true, "RBLOCK": 1024, "XBLOCK": 4, "num_warps": 8}, "kernel": "_egg_red1_amax_sum_bmm_1_in", "template": "reduction"}], "shape_set": "default", "specialised": ["default", "small"], "variant": "fused", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


"""transformers' ``eager_attention_forward`` (modeling_llama, one KV head per query head): ``torch
.matmul(query, key.transpose(2, 3)) * scaling``, ``+ attention_mask`` (an additive 4-D causal mask
of 0 / ``finfo.min``), ``softmax(dim=-1, dtype=torch.float32).to(query.dtype)``, ``matmul(attn,
value)`` (the layer's ``transpose(1, 2).contiguous()`` after it is left out: a layout copy, not
masking)."""

import torch
import torch.nn as nn

BATCH = 2
HEADS = 32
SEQ = 1024
HEAD_DIM = 128
DTYPE = "bfloat16"
SHAPES = {"small": {"BATCH": 2, "HEADS": 2, "SEQ": 5, "HEAD_DIM": 8, "DTYPE": "float32"}}


class Model(nn.Module):
    def __init__(self, head_dim: int) -> None:
        super().__init__()
        self.scaling = head_dim**-0.5

    def forward(self, query, key, value, attention_mask):
        attn_weights = torch.matmul(query, key.transpose(2, 3)) * self.scaling
        attn_weights = attn_weights + attention_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
        return torch.matmul(attn_weights, value)


# ---- kernels ----


def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_red1_amax_sum_bmm_1_in(attention_mask_ptr, bmm_ptr, bmm_1_in_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: amax, sum_1, bmm_1_in"""
    xnumel = 65536
    rnumel = 1024
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    # persistent: the whole reduced extent of XBLOCK rows sits in registers, read once
    rindex = tl.arange(0, RBLOCK)[None, :]
    tmp1 = tl.load(bmm_ptr + (rindex + 1024*xindex), eviction_policy="evict_first").to(tl.float32)
    tmp2 = (tmp1 * 0.08838834764831845).to(tl.bfloat16).to(tl.float32)
    i3 = (xindex) % 1024
    i4 = (xindex) // 32768
    tmp5 = tl.load(attention_mask_ptr + (rindex + 1024*i3 + 1048576*i4)).to(tl.float32)
    tmp6 = (tmp2 + tmp5).to(tl.bfloat16).to(tl.float32)
    tmp7 = tl.max(tmp6, 1)[:, None]
    tmp8 = tl.sum((tmp6 != tmp6).to(tl.int32), 1)[:, None] > 0
    tmp9 = tl.where(tmp8, float("nan"), tmp7)
    tmp10 = (tmp6 - tmp9)
    tmp11 = tl.exp(tmp10)
    tmp12 = tl.sum(tmp11, 1)[:, None]
    tmp13 = (tmp11 / tmp12)
    tmp14 = tmp13.to(tl.bfloat16).to(tl.float32)
    tl.store(bmm_1_in_ptr + (rindex + 1024*xindex), tmp14.to(tl.bfloat16))


_egg_red1_amax_sum_bmm_1_in_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red1_amax_sum_bmm_1_in_launch(attention_mask, bmm):
    """reduction: amax, sum_1, bmm_1_in"""
    global _egg_red1_amax_sum_bmm_1_in_launch_k0
    bmm_1_in = torch.empty_strided((64, 1024, 1024), (1048576, 1024, 1), dtype=torch.bfloat16, device=attention_mask.device)
    if _egg_red1_amax_sum_bmm_1_in_launch_k0 is not None and _egg_red1_amax_sum_bmm_1_in_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(attention_mask, bmm, bmm_1_in):
        _egg_red1_amax_sum_bmm_1_in_launch_k0[1][(16384, 1, 1)](attention_mask, bmm, bmm_1_in, 4, 1024)
    elif attention_mask.device.type == "cuda" and _egg_aligned(attention_mask, bmm, bmm_1_in):
        _egg_red1_amax_sum_bmm_1_in_launch_k0 = (torch.cuda.current_device(), _egg_red1_amax_sum_bmm_1_in[(16384,)](
            attention_mask, bmm, bmm_1_in,
            XBLOCK=4, RBLOCK=1024, num_warps=8,
        ))
    else:
        _egg_red1_amax_sum_bmm_1_in[(16384,)](
            attention_mask, bmm, bmm_1_in,
            XBLOCK=4, RBLOCK=1024, num_warps=8,
        )
    return (bmm_1_in,)

@triton.jit
def _egg_red1_amax_sum_bmm_1_in_small(attention_mask_ptr, bmm_ptr, bmm_1_in_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: amax, sum_1, bmm_1_in"""
    xnumel = 20
    rnumel = 5
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    # persistent: the whole reduced extent of XBLOCK rows sits in registers, read once
    rindex = tl.arange(0, RBLOCK)[None, :]
    rmask = rindex < rnumel
    tmp1 = tl.load(bmm_ptr + (rindex + 5*xindex), rmask, other=0.0)
    tmp2 = (tmp1 * 0.3535533905932738)
    i3 = (xindex) % 5
    i4 = (xindex) // 10
    tmp5 = tl.load(attention_mask_ptr + (rindex + 5*i3 + 25*i4), rmask, other=0.0)
    tmp6 = (tmp2 + tmp5)
    tmp7 = tl.where(rmask, tmp6, float("-inf"))
    tmp8 = tl.max(tmp7, 1)[:, None]
    tmp9 = tl.sum((tmp7 != tmp7).to(tl.int32), 1)[:, None] > 0
    tmp10 = tl.where(tmp9, float("nan"), tmp8)
    tmp11 = (tmp6 - tmp10)
    tmp12 = tl.exp(tmp11)
    tmp13 = tl.where(rmask, tmp12, 0)
    tmp14 = tl.sum(tmp13, 1)[:, None]
    tmp15 = (tmp12 / tmp14)
    tl.store(bmm_1_in_ptr + (rindex + 5*xindex), tmp15.to(tl.float32), rmask)


_egg_red1_amax_sum_bmm_1_in_small_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red1_amax_sum_bmm_1_in_small_launch(attention_mask, bmm):
    """reduction: amax, sum_1, bmm_1_in"""
    global _egg_red1_amax_sum_bmm_1_in_small_launch_k0
    bmm_1_in = torch.empty_strided((4, 5, 5), (25, 5, 1), dtype=torch.float32, device=attention_mask.device)
    if _egg_red1_amax_sum_bmm_1_in_small_launch_k0 is not None and _egg_red1_amax_sum_bmm_1_in_small_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(attention_mask, bmm, bmm_1_in):
        _egg_red1_amax_sum_bmm_1_in_small_launch_k0[1][(20, 1, 1)](attention_mask, bmm, bmm_1_in, 1, 8)
    elif attention_mask.device.type == "cuda" and _egg_aligned(attention_mask, bmm, bmm_1_in):
        _egg_red1_amax_sum_bmm_1_in_small_launch_k0 = (torch.cuda.current_device(), _egg_red1_amax_sum_bmm_1_in_small[(20,)](
            attention_mask, bmm, bmm_1_in,
            XBLOCK=1, RBLOCK=8, num_warps=4,
        ))
    else:
        _egg_red1_amax_sum_bmm_1_in_small[(20,)](
            attention_mask, bmm, bmm_1_in,
            XBLOCK=1, RBLOCK=8, num_warps=4,
        )
    return (bmm_1_in,)


# ---- the candidate ----


class ModelNew(Model):
    """library ops stay torch calls, the ops around them are fused: 1 Triton kernel launch(es) per call"""

    def __init__(self, head_dim: int):
        super().__init__(head_dim)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        pass

    def forward(self, *inputs):
        return _EGG_SPECIALISED.get((inputs[0].shape, inputs[0].dtype, inputs[1].shape, inputs[1].dtype, inputs[2].shape, inputs[2].dtype, inputs[3].shape, inputs[3].dtype, ), _egg_forward_default)(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((2, 32, 1024, 128), torch.bfloat16, (2, 32, 1024, 128), torch.bfloat16, (2, 32, 1024, 128), torch.bfloat16, (2, 1, 1024, 1024), torch.bfloat16, )."""
    query = inputs[0]
    key = inputs[1]
    value = inputs[2]
    attention_mask = inputs[3]
    if (query.shape != (2, 32, 1024, 128) or query.dtype != torch.bfloat16) or (key.shape != (2, 32, 1024, 128) or key.dtype != torch.bfloat16) or (value.shape != (2, 32, 1024, 128) or value.dtype != torch.bfloat16) or (attention_mask.shape != (2, 1, 1024, 1024) or attention_mask.dtype != torch.bfloat16):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((query.shape, query.dtype)) + str((key.shape, key.dtype)) + str((value.shape, value.dtype)) + str((attention_mask.shape, attention_mask.dtype)))
    if query.stride() != (4194304, 131072, 128, 1):
        query = torch.empty_strided((2, 32, 1024, 128), (4194304, 131072, 128, 1), dtype=query.dtype, device=query.device).copy_(query)
    if key.stride() != (4194304, 131072, 128, 1):
        key = torch.empty_strided((2, 32, 1024, 128), (4194304, 131072, 128, 1), dtype=key.dtype, device=key.device).copy_(key)
    if value.stride() != (4194304, 131072, 128, 1):
        value = torch.empty_strided((2, 32, 1024, 128), (4194304, 131072, 128, 1), dtype=value.dtype, device=value.device).copy_(value)
    if attention_mask.stride() != (1048576, 1048576, 1024, 1):
        attention_mask = torch.empty_strided((2, 1, 1024, 1024), (1048576, 1048576, 1024, 1), dtype=attention_mask.dtype, device=attention_mask.device).copy_(attention_mask)
    _dev = query.device
    bmm = torch.ops.aten.bmm.default(query.view((64, 1024, 128)), key.as_strided((64, 128, 1024), (131072, 1, 128), key.storage_offset()))
    bmm_1_in, = _egg_red1_amax_sum_bmm_1_in_launch(attention_mask, bmm)
    bmm_1 = torch.ops.aten.bmm.default(bmm_1_in, value.view((64, 1024, 128)))
    return bmm_1.view((2, 32, 1024, 128))


def _egg_forward_small(self, inputs):
    """ModelNew.forward for the inputs ((2, 2, 5, 8), torch.float32, (2, 2, 5, 8), torch.float32, (2, 2, 5, 8), torch.float32, (2, 1, 5, 5), torch.float32, )."""
    query = inputs[0]
    key = inputs[1]
    value = inputs[2]
    attention_mask = inputs[3]
    if (query.shape != (2, 2, 5, 8) or query.dtype != torch.float32) or (key.shape != (2, 2, 5, 8) or key.dtype != torch.float32) or (value.shape != (2, 2, 5, 8) or value.dtype != torch.float32) or (attention_mask.shape != (2, 1, 5, 5) or attention_mask.dtype != torch.float32):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((query.shape, query.dtype)) + str((key.shape, key.dtype)) + str((value.shape, value.dtype)) + str((attention_mask.shape, attention_mask.dtype)))
    if query.stride() != (80, 40, 8, 1):
        query = torch.empty_strided((2, 2, 5, 8), (80, 40, 8, 1), dtype=query.dtype, device=query.device).copy_(query)
    if key.stride() != (80, 40, 8, 1):
        key = torch.empty_strided((2, 2, 5, 8), (80, 40, 8, 1), dtype=key.dtype, device=key.device).copy_(key)
    if value.stride() != (80, 40, 8, 1):
        value = torch.empty_strided((2, 2, 5, 8), (80, 40, 8, 1), dtype=value.dtype, device=value.device).copy_(value)
    if attention_mask.stride() != (25, 25, 5, 1):
        attention_mask = torch.empty_strided((2, 1, 5, 5), (25, 25, 5, 1), dtype=attention_mask.dtype, device=attention_mask.device).copy_(attention_mask)
    _dev = query.device
    bmm = torch.ops.aten.bmm.default(query.view((4, 5, 8)), key.as_strided((4, 8, 5), (40, 1, 8), key.storage_offset()))
    bmm_1_in, = _egg_red1_amax_sum_bmm_1_in_small_launch(attention_mask, bmm)
    bmm_1 = torch.ops.aten.bmm.default(bmm_1_in, value.view((4, 5, 8)))
    return bmm_1.view((2, 2, 5, 8))


_EGG_SPECIALISED = {
    ((2, 32, 1024, 128), torch.bfloat16, (2, 32, 1024, 128), torch.bfloat16, (2, 32, 1024, 128), torch.bfloat16, (2, 1, 1024, 1024), torch.bfloat16, ): _egg_forward_default,
    ((2, 2, 5, 8), torch.float32, (2, 2, 5, 8), torch.float32, (2, 2, 5, 8), torch.float32, (2, 1, 5, 5), torch.float32, ): _egg_forward_small,
}
