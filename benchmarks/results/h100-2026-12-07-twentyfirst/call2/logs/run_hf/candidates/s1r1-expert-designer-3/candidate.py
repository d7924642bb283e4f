# EGG expert candidate for problem.py (agents.expert: loop-level IR + templates, no LLM)
# structure: torch keeps aten.bmm; max over 1024 x 65536 rows, persistent (rows in registers), with 1 store(s); sum over 1024 x 65536 rows, persistent (rows in registers), with 1 store(s); pointwise kernel over 67108864 elements writing 1 output(s), tiled 32 x 64 over a transposed access
# variant: less-fused: each reduction in its own kernel, its consumers in another
#   _egg_red1_amax: PERSISTENT=True XBLOCK=4 RBLOCK=1024 num_warps=8 EVICT_STREAM='evict_first' EVICT_REUSE=''
#   _egg_red2_sum: PERSISTENT=True XBLOCK=4 RBLOCK=1024 num_warps=8 EVICT_STREAM='evict_first' EVICT_REUSE=''
#   _egg_poi3_bmm_1_in: XBLOCK=64 num_warps=4 EVICT_STREAM='evict_first' EVICT_REUSE='' YBLOCK=32
# principles: algorithm-structure/keep-library-gemm, algorithm-structure/fuse-reduction-with-neighbours, tiling/fp32-accumulators, memory/masked-loads-neutral-other, tiling/one-pass-row-limit, parallel-mapping/one-row-per-program, algorithm-structure/fuse-elementwise-chain, parallel-mapping/flat-index-for-elementwise, tiling/power-of-two-blocks-with-masks, memory/eviction-hints, memory/transpose-via-tiles, parallel-mapping/fill-the-machine-in-waves
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "PERSISTENT": true, "RBLOCK": 1024, "XBLOCK": 4, "num_warps": 8}, "kernel": "_egg_red1_amax", "template": "reduction"}, {"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "PERSISTENT": true, "RBLOCK": 1024, "XBLOCK": 4, "num_warps": 8}, "kernel": "_egg_red2_sum", "template": "reduction"}, {"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "XBLOCK": 64, "YBLOCK": 32, "num_warps": 4}, "kernel": "_egg_poi3_bmm_1_in", "template": "pointwise"}], "shape_set": "default", "specialised": ["default", "small"], "variant": "less-fused", "version": 2}


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
def _egg_red1_amax(attention_mask_ptr, bmm_ptr, amax_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: amax"""
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
    tl.store(amax_ptr + (xindex), tmp9.to(tl.float32))


_egg_red1_amax_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red1_amax_launch(attention_mask, bmm):
    """reduction: amax"""
    global _egg_red1_amax_launch_k0
    amax = torch.empty_strided((2, 32, 1024, 1), (32768, 1024, 1, 1), dtype=torch.float32, device=attention_mask.device)
    if _egg_red1_amax_launch_k0 is not None and _egg_red1_amax_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(attention_mask, bmm, amax):
        _egg_red1_amax_launch_k0[1][(16384, 1, 1)](attention_mask, bmm, amax, 4, 1024)
    elif attention_mask.device.type == "cuda" and _egg_aligned(attention_mask, bmm, amax):
        _egg_red1_amax_launch_k0 = (torch.cuda.current_device(), _egg_red1_amax[(16384,)](
            attention_mask, bmm, amax,
            XBLOCK=4, RBLOCK=1024, num_warps=8,
        ))
    else:
        _egg_red1_amax[(16384,)](
            attention_mask, bmm, amax,
            XBLOCK=4, RBLOCK=1024, num_warps=8,
        )
    return (amax,)

@triton.jit
def _egg_red2_sum(amax_ptr, attention_mask_ptr, bmm_ptr, sum_1_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: sum_1"""
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
    tmp7 = tl.load(amax_ptr + (xindex))
    tmp8 = (tmp6 - tmp7)
    tmp9 = tl.exp(tmp8)
    tmp10 = tl.sum(tmp9, 1)[:, None]
    tl.store(sum_1_ptr + (xindex), tmp10.to(tl.float32))


_egg_red2_sum_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red2_sum_launch(amax, attention_mask, bmm):
    """reduction: sum_1"""
    global _egg_red2_sum_launch_k0
    sum_1 = torch.empty_strided((2, 32, 1024, 1), (32768, 1024, 1, 1), dtype=torch.float32, device=amax.device)
    if _egg_red2_sum_launch_k0 is not None and _egg_red2_sum_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(amax, attention_mask, bmm, sum_1):
        _egg_red2_sum_launch_k0[1][(16384, 1, 1)](amax, attention_mask, bmm, sum_1, 4, 1024)
    elif amax.device.type == "cuda" and _egg_aligned(amax, attention_mask, bmm, sum_1):
        _egg_red2_sum_launch_k0 = (torch.cuda.current_device(), _egg_red2_sum[(16384,)](
            amax, attention_mask, bmm, sum_1,
            XBLOCK=4, RBLOCK=1024, num_warps=8,
        ))
    else:
        _egg_red2_sum[(16384,)](
            amax, attention_mask, bmm, sum_1,
            XBLOCK=4, RBLOCK=1024, num_warps=8,
        )
    return (sum_1,)

@triton.jit
def _egg_poi3_bmm_1_in(amax_ptr, attention_mask_ptr, bmm_ptr, sum_1_ptr, bmm_1_in_ptr, XBLOCK: tl.constexpr, YBLOCK: tl.constexpr):
    """pointwise: bmm_1_in"""
    xnumel = 67108864
    # a [YBLOCK, XBLOCK] tile of the flat index yindex * 1024 + xinner: the transposed access
    # walks yindex with stride 1, the contiguous ones walk xinner, so both use whole sectors
    pid = tl.program_id(0)
    yindex = (pid // 16) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    xinner = (pid % 16) * XBLOCK + tl.arange(0, XBLOCK)[None, :]
    tmp1 = tl.load(bmm_ptr + (xinner + 1024*yindex), eviction_policy="evict_first").to(tl.float32)
    tmp2 = (tmp1 * 0.08838834764831845).to(tl.bfloat16).to(tl.float32)
    i3 = (yindex) % 1024
    i4 = (yindex) // 32768
    tmp5 = tl.load(attention_mask_ptr + (xinner + 1024*i3 + 1048576*i4)).to(tl.float32)
    tmp6 = (tmp2 + tmp5).to(tl.bfloat16).to(tl.float32)
    tmp7 = tl.load(amax_ptr + (yindex))
    tmp8 = (tmp6 - tmp7)
    tmp9 = tl.exp(tmp8)
    tmp10 = tl.load(sum_1_ptr + (yindex))
    tmp11 = (tmp9 / tmp10)
    tmp12 = tmp11.to(tl.bfloat16).to(tl.float32)
    tl.store(bmm_1_in_ptr + (xinner + 1024*yindex), tmp12.to(tl.bfloat16))


_egg_poi3_bmm_1_in_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi3_bmm_1_in_launch(amax, attention_mask, bmm, sum_1):
    """pointwise: bmm_1_in"""
    global _egg_poi3_bmm_1_in_launch_k0
    bmm_1_in = torch.empty_strided((64, 1024, 1024), (1048576, 1024, 1), dtype=torch.bfloat16, device=amax.device)
    if _egg_poi3_bmm_1_in_launch_k0 is not None and _egg_poi3_bmm_1_in_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(amax, attention_mask, bmm, sum_1, bmm_1_in):
        _egg_poi3_bmm_1_in_launch_k0[1][(32768, 1, 1)](amax, attention_mask, bmm, sum_1, bmm_1_in, 64, 32)
    elif amax.device.type == "cuda" and _egg_aligned(amax, attention_mask, bmm, sum_1, bmm_1_in):
        _egg_poi3_bmm_1_in_launch_k0 = (torch.cuda.current_device(), _egg_poi3_bmm_1_in[(32768,)](
            amax, attention_mask, bmm, sum_1, bmm_1_in,
            XBLOCK=64, YBLOCK=32, num_warps=4,
        ))
    else:
        _egg_poi3_bmm_1_in[(32768,)](
            amax, attention_mask, bmm, sum_1, bmm_1_in,
            XBLOCK=64, YBLOCK=32, num_warps=4,
        )
    return (bmm_1_in,)

@triton.jit
def _egg_red1_amax_small(attention_mask_ptr, bmm_ptr, amax_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: amax"""
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
    tl.store(amax_ptr + (xindex), tmp10.to(tl.float32))


_egg_red1_amax_small_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red1_amax_small_launch(attention_mask, bmm):
    """reduction: amax"""
    global _egg_red1_amax_small_launch_k0
    amax = torch.empty_strided((2, 2, 5, 1), (10, 5, 1, 1), dtype=torch.float32, device=attention_mask.device)
    if _egg_red1_amax_small_launch_k0 is not None and _egg_red1_amax_small_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(attention_mask, bmm, amax):
        _egg_red1_amax_small_launch_k0[1][(20, 1, 1)](attention_mask, bmm, amax, 1, 8)
    elif attention_mask.device.type == "cuda" and _egg_aligned(attention_mask, bmm, amax):
        _egg_red1_amax_small_launch_k0 = (torch.cuda.current_device(), _egg_red1_amax_small[(20,)](
            attention_mask, bmm, amax,
            XBLOCK=1, RBLOCK=8, num_warps=4,
        ))
    else:
        _egg_red1_amax_small[(20,)](
            attention_mask, bmm, amax,
            XBLOCK=1, RBLOCK=8, num_warps=4,
        )
    return (amax,)

@triton.jit
def _egg_red2_sum_small(amax_ptr, attention_mask_ptr, bmm_ptr, sum_1_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: sum_1"""
    xnumel = 20
    rnumel = 5
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    _acc1 = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
    i4 = (xindex) % 5
    i5 = (xindex) // 10
    tmp8 = tl.load(amax_ptr + (xindex), xmask, other=0.0)
    # pass 1 of 1 over the reduced extent: sum_1
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        tmp2 = tl.load(bmm_ptr + (rindex + 5*xindex), xmask, other=0.0)
        tmp3 = (tmp2 * 0.3535533905932738)
        tmp6 = tl.load(attention_mask_ptr + (rindex + 5*i4 + 25*i5), xmask, other=0.0)
        tmp7 = (tmp3 + tmp6)
        tmp9 = (tmp7 - tmp8)
        tmp10 = tl.exp(tmp9)
        _acc1 = _acc1 + tmp10
    tmp11 = tl.sum(_acc1, 1)[:, None]
    tl.store(sum_1_ptr + (xindex), tmp11.to(tl.float32), xmask)


_egg_red2_sum_small_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red2_sum_small_launch(amax, attention_mask, bmm):
    """reduction: sum_1"""
    global _egg_red2_sum_small_launch_k0
    sum_1 = torch.empty_strided((2, 2, 5, 1), (10, 5, 1, 1), dtype=torch.float32, device=amax.device)
    if _egg_red2_sum_small_launch_k0 is not None and _egg_red2_sum_small_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(amax, attention_mask, bmm, sum_1):
        _egg_red2_sum_small_launch_k0[1][(1, 1, 1)](amax, attention_mask, bmm, sum_1, 32, 1)
    elif amax.device.type == "cuda" and _egg_aligned(amax, attention_mask, bmm, sum_1):
        _egg_red2_sum_small_launch_k0 = (torch.cuda.current_device(), _egg_red2_sum_small[(1,)](
            amax, attention_mask, bmm, sum_1,
            XBLOCK=32, RBLOCK=1, num_warps=4,
        ))
    else:
        _egg_red2_sum_small[(1,)](
            amax, attention_mask, bmm, sum_1,
            XBLOCK=32, RBLOCK=1, num_warps=4,
        )
    return (sum_1,)

@triton.jit
def _egg_poi3_bmm_1_in_small(amax_ptr, attention_mask_ptr, bmm_ptr, sum_1_ptr, bmm_1_in_ptr, XBLOCK: tl.constexpr, YBLOCK: tl.constexpr):
    """pointwise: bmm_1_in"""
    xnumel = 100
    # a [YBLOCK, XBLOCK] tile of the flat index yindex * 5 + xinner: the transposed access
    # walks yindex with stride 1, the contiguous ones walk xinner, so both use whole sectors
    pid = tl.program_id(0)
    yindex = (pid // 1) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    xinner = (pid % 1) * XBLOCK + tl.arange(0, XBLOCK)[None, :]
    xmask = (yindex < 20) & (xinner < 5)
    tmp1 = tl.load(bmm_ptr + (xinner + 5*yindex), xmask, other=0.0)
    tmp2 = (tmp1 * 0.3535533905932738)
    i3 = (yindex) % 5
    i4 = (yindex) // 10
    tmp5 = tl.load(attention_mask_ptr + (xinner + 5*i3 + 25*i4), xmask, other=0.0)
    tmp6 = (tmp2 + tmp5)
    tmp7 = tl.load(amax_ptr + (yindex), xmask, other=0.0)
    tmp8 = (tmp6 - tmp7)
    tmp9 = tl.exp(tmp8)
    tmp10 = tl.load(sum_1_ptr + (yindex), xmask, other=0.0)
    tmp11 = (tmp9 / tmp10)
    tl.store(bmm_1_in_ptr + (xinner + 5*yindex), tmp11.to(tl.float32), xmask)


_egg_poi3_bmm_1_in_small_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi3_bmm_1_in_small_launch(amax, attention_mask, bmm, sum_1):
    """pointwise: bmm_1_in"""
    global _egg_poi3_bmm_1_in_small_launch_k0
    bmm_1_in = torch.empty_strided((4, 5, 5), (25, 5, 1), dtype=torch.float32, device=amax.device)
    if _egg_poi3_bmm_1_in_small_launch_k0 is not None and _egg_poi3_bmm_1_in_small_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(amax, attention_mask, bmm, sum_1, bmm_1_in):
        _egg_poi3_bmm_1_in_small_launch_k0[1][(1, 1, 1)](amax, attention_mask, bmm, sum_1, bmm_1_in, 8, 128)
    elif amax.device.type == "cuda" and _egg_aligned(amax, attention_mask, bmm, sum_1, bmm_1_in):
        _egg_poi3_bmm_1_in_small_launch_k0 = (torch.cuda.current_device(), _egg_poi3_bmm_1_in_small[(1,)](
            amax, attention_mask, bmm, sum_1, bmm_1_in,
            XBLOCK=8, YBLOCK=128, num_warps=4,
        ))
    else:
        _egg_poi3_bmm_1_in_small[(1,)](
            amax, attention_mask, bmm, sum_1, bmm_1_in,
            XBLOCK=8, YBLOCK=128, num_warps=4,
        )
    return (bmm_1_in,)


# ---- the candidate ----


class ModelNew(Model):
    """each reduction in its own kernel, its consumers in another: 3 Triton kernel launch(es) per call"""

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
    amax, = _egg_red1_amax_launch(attention_mask, bmm)
    sum_1, = _egg_red2_sum_launch(amax, attention_mask, bmm)
    bmm_1_in, = _egg_poi3_bmm_1_in_launch(amax, attention_mask, bmm, sum_1)
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
    amax, = _egg_red1_amax_small_launch(attention_mask, bmm)
    sum_1, = _egg_red2_sum_small_launch(amax, attention_mask, bmm)
    bmm_1_in, = _egg_poi3_bmm_1_in_small_launch(amax, attention_mask, bmm, sum_1)
    bmm_1 = torch.ops.aten.bmm.default(bmm_1_in, value.view((4, 5, 8)))
    return bmm_1.view((2, 2, 5, 8))


_EGG_SPECIALISED = {
    ((2, 32, 1024, 128), torch.bfloat16, (2, 32, 1024, 128), torch.bfloat16, (2, 32, 1024, 128), torch.bfloat16, (2, 1, 1024, 1024), torch.bfloat16, ): _egg_forward_default,
    ((2, 2, 5, 8), torch.float32, (2, 2, 5, 8), torch.float32, (2, 2, 5, 8), torch.float32, (2, 1, 5, 5), torch.float32, ): _egg_forward_small,
}
