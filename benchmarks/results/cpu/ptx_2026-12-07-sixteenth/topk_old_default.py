# EGG expert candidate for topk_sampling_logits.py (agents.expert: loop-level IR + templates, no LLM)
# structure: kth_largest, max, sum over 128256 x 256 rows, looped (3 pass(es)), with 1 store(s)
# variant: fused: library ops stay torch calls, the ops around them are fused
#   _egg_red0_topk_amax_exp_etc: PERSISTENT=False XBLOCK=1 RBLOCK=2048 num_warps=16 EVICT_STREAM='' EVICT_REUSE='' ONLINE_MAX='lane' KEPT_REDUCE=True KEPT_STORE=False
# principles: algorithm-structure/fuse-reduction-with-neighbours, tiling/fp32-accumulators, memory/masked-loads-neutral-other, algorithm-structure/softmax-one-pass-or-online, algorithm-structure/order-statistic-not-sort, algorithm-structure/reduce-kept-keys, algorithm-structure/store-kept-keys, tiling/one-pass-row-limit
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"EVICT_REUSE": "", "EVICT_STREAM": "", "KEPT_REDUCE": true, "KEPT_STORE": false, "ONLINE_MAX": "lane", "PERSISTENT": false, "RBLOCK": 2048, "XBLOCK": 1, "num_warps": 16}, "kernel": "_egg_red0_topk_amax_exp_etc", "template": "reduction"}], "shape_set": "default", "specialised": ["default"], "variant": "fused", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


"""Sampling logits processing: per-request temperature, top-k masking to -inf, softmax over vocab.

Where it occurs: the sampler of every LLM serving engine (vLLM, SGLang, TensorRT-LLM, Hugging
Face ``generate`` with ``TopKLogitsWarper``) at every decode step of Llama, Mistral, Qwen or GPT models, on the last-position logits of
each sequence in the batch, just before drawing the next token. The reference upcasts the bf16
LM-head logits to fp32, divides each row by its request's temperature, keeps the logits that are
>= the k-th largest (ties at the threshold are all kept, as in Hugging Face), sets the others to
-inf, and returns the fp32 probabilities (the masked entries are exactly 0).

Sizes that matter: a serving batch of 256 sequences over Llama-3's 128256-token vocabulary with
top_k 50 (production). The ``odd`` set uses GPT-2's vocabulary (50257) and top_k 40.

Character: memory bound, but the top-k selection over a 128256-wide row is the hard part: a
full sort or ``torch.topk`` is far slower than a threshold search (radix select or a few
histogram passes) fused with the max/sum of the softmax.

Bytes moved at production: read 65.7 MB of bf16 logits and 1 KiB of temperatures; write 131.3 MB
of fp32 probabilities = 197.0 MB.
"""

import torch
import torch.nn as nn

BATCH = 256
VOCAB = 128256
TOP_K = 50
DTYPE = "bfloat16"
SHAPES = {
    "small": {"BATCH": 3, "VOCAB": 1000, "TOP_K": 10, "DTYPE": "float32"},
    "odd": {"BATCH": 5, "VOCAB": 50257, "TOP_K": 40},
}


class Model(nn.Module):
    def __init__(self, top_k: int) -> None:
        super().__init__()
        self.top_k = top_k

    def forward(self, logits: torch.Tensor, temperatures: torch.Tensor) -> torch.Tensor:
        logits = logits.float() / temperatures.unsqueeze(1)
        kth_largest = torch.topk(logits, self.top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth_largest, float("-inf"))
        return torch.softmax(logits, dim=-1)


# ---- kernels ----


@triton.jit
def _egg_exp2_ftz(x, PTX: tl.constexpr):
    # 2**x of fp32 x as one MUFU.EX2 (ex2.approx.ftz, subnormal results flushed to 0). tl.exp's
    # ex2.approx.f32 keeps subnormal results, at a compare and two multiplies more around the MUFU
    # on sm_90 (SASS of cross-entropy's lane loop, 2026-12-06). For callers whose result cannot show a
    # subnormal: one added to a sum that is 0 or at least 1 (the online softmax's lane sums) rounds
    # away either way. The caller scales by log2(e), folding a sign into that constant (a negation
    # is a subtraction from 0 in Triton). Inline PTX: PTX (the launch's device is a CUDA GPU) or
    # tl.exp2 (the interpreter runs a GPU render on the CPU too).
    if PTX:
        return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                         is_pure=True, pack=1)
    else:
        return tl.exp2(x)

@triton.jit
def _egg_max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)

def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_red0_topk_amax_exp_etc(logits_ptr, temperatures_ptr, div_1_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, PTX: tl.constexpr):
    """reduction: topk, amax, exp, sum_1, div_1"""
    xnumel = 256
    rnumel = 128256
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    _top1 = tl.zeros([XBLOCK, RBLOCK], tl.uint32)
    _top2 = tl.zeros([XBLOCK, RBLOCK], tl.uint32)
    _top3 = tl.zeros([XBLOCK, RBLOCK], tl.uint32)
    _top4 = tl.zeros([XBLOCK, RBLOCK], tl.uint32)
    tmp6 = tl.load(temperatures_ptr + (xindex))
    # pass 1 of 3 over the reduced extent: topk (the 4 largest keys of each lane, then a bisection over them)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        rmask = rindex < rnumel
        tmp5 = tl.load(logits_ptr + (rindex + 128256*xindex), rmask, other=0.0).to(tl.float32)
        tmp7 = (tmp5 / tmp6)
        tmp8 = tmp7.to(tl.uint32, bitcast=True)
        tmp9 = tl.where(tmp7 != tmp7, 0x7FC00000, tmp8)
        tmp10 = tl.where((tmp9 & 0x80000000) != 0, tmp9 ^ 0xFFFFFFFF, tmp9 | 0x80000000)
        tmp11 = tl.where(rmask, tmp10, 0)
        _hi12 = tl.maximum(_top1, tmp11)
        _lo13 = tl.minimum(_top1, tmp11)
        _top1 = _hi12
        _hi14 = tl.maximum(_top2, _lo13)
        _lo15 = tl.minimum(_top2, _lo13)
        _top2 = _hi14
        _hi16 = tl.maximum(_top3, _lo15)
        _lo17 = tl.minimum(_top3, _lo15)
        _top3 = _hi16
        _top4 = tl.maximum(_top4, _lo17)
    _kth18 = tl.zeros([XBLOCK, 1], tl.uint32)
    for _bit19 in range(31, -1, -1):
        _cand20 = _kth18 | (tl.full([XBLOCK, 1], 1, tl.uint32) << _bit19)
        _kth18 = tl.where(tl.sum((_top1 >= _cand20).to(tl.int32) + (_top2 >= _cand20).to(tl.int32) + (_top3 >= _cand20).to(tl.int32) + (_top4 >= _cand20).to(tl.int32), 1)[:, None] >= 50, _cand20, _kth18)
    tmp21 = tl.max(((_top4 >= _kth18)).to(tl.int32), 1)[:, None]
    if tl.max(tmp21) > 0:
        _kth29 = tl.zeros([XBLOCK, 1], tl.uint32)
        for _bit30 in range(31, -1, -1):
            _cand31 = _kth29 | (tl.full([XBLOCK, 1], 1, tl.uint32) << _bit30)
            _cnt22 = tl.zeros([XBLOCK, RBLOCK], tl.int32)
            for roffset in range(0, rnumel, RBLOCK):
                rindex = roffset + tl.arange(0, RBLOCK)[None, :]
                rmask = rindex < rnumel
                tmp23 = tl.load(logits_ptr + (rindex + 128256*xindex), rmask, other=0.0).to(tl.float32)
                tmp24 = (tmp23 / tmp6)
                tmp25 = tmp24.to(tl.uint32, bitcast=True)
                tmp26 = tl.where(tmp24 != tmp24, 0x7FC00000, tmp25)
                tmp27 = tl.where((tmp26 & 0x80000000) != 0, tmp26 ^ 0xFFFFFFFF, tmp26 | 0x80000000)
                tmp28 = tl.where(rmask, tmp27, 0)
                _cnt22 += (tmp28 >= _cand31).to(tl.int32)
            _kth29 = tl.where(tl.sum(_cnt22, 1)[:, None] >= 50, _cand31, _kth29)
        _kth18 = tl.where(tmp21 > 0, _kth29, _kth18)
    tmp32 = tl.where((_kth18 & 0x80000000) != 0, _kth18 & 0x7FFFFFFF, _kth18 ^ 0xFFFFFFFF).to(tl.float32, bitcast=True)
    _max33 = tl.full([XBLOCK, RBLOCK], -3.4028234663852886e+38, tl.float32)
    _sum34 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    tmp42 = tl.max(((tmp21 > 0) | (((tmp32 != tmp32) | (tmp32 == 0.0)))).to(tl.int32))
    # pass 2 of 3 over the reduced extent: amax, sum_1 (from topk's kept keys where they hold every kept element)
    if tmp42 > 0:
        for roffset in range(0, rnumel - rnumel % RBLOCK, RBLOCK):  # whole blocks: no lane past the end
            rindex = roffset + tl.arange(0, RBLOCK)[None, :]
            rmask = tl.full([1, RBLOCK], True, tl.int1)
            tmp35 = tl.load(logits_ptr + (rindex + 128256*xindex), rmask, other=0.0).to(tl.float32)
            tmp36 = (tmp35 / tmp6)
            tmp37 = (tmp36 < tmp32)
            tmp38 = tl.where(tmp37, float("-inf"), tmp36)
            tmp39 = tl.where(rmask, tmp38, float("-inf"))
            tmp40 = tmp39 - _max33
            tmp41 = _egg_exp2_ftz(tl.abs(tmp40) * -1.4426950408889634, PTX)
            _sum34 = tl.where(tmp40 > 0, _sum34 * tmp41 + 1.0, _sum34 + tmp41)
            _max33 = _egg_max_nan(_max33, tmp39)
        for roffset in range(rnumel - rnumel % RBLOCK, rnumel, RBLOCK):  # the last block, partial
            rindex = roffset + tl.arange(0, RBLOCK)[None, :]
            rmask = rindex < rnumel
            tmp35 = tl.load(logits_ptr + (rindex + 128256*xindex), rmask, other=0.0).to(tl.float32)
            tmp36 = (tmp35 / tmp6)
            tmp37 = (tmp36 < tmp32)
            tmp38 = tl.where(tmp37, float("-inf"), tmp36)
            tmp39 = tl.where(rmask, tmp38, float("-inf"))
            tmp40 = tmp39 - _max33
            tmp41 = _egg_exp2_ftz(tl.abs(tmp40) * -1.4426950408889634, PTX)
            _sum34 = tl.where(tmp40 > 0, _sum34 * tmp41 + 1.0, _sum34 + tmp41)
            _max33 = _egg_max_nan(_max33, tmp39)
    else:  # every kept element is a lane's kept key: reduce those, in registers
        tmp43 = tl.where(_top1 >= _kth18, tl.where((_top1 & 0x80000000) != 0, _top1 & 0x7FFFFFFF, _top1 ^ 0xFFFFFFFF).to(tl.float32, bitcast=True), float("-inf"))
        tmp44 = (tmp43 < tmp32)
        tmp45 = tl.where(tmp44, float("-inf"), tmp43)
        tmp46 = tmp45 - _max33
        tmp47 = _egg_exp2_ftz(tl.abs(tmp46) * -1.4426950408889634, PTX)
        _sum34 = tl.where(tmp46 > 0, _sum34 * tmp47 + 1.0, _sum34 + tmp47)
        _max33 = _egg_max_nan(_max33, tmp45)
        tmp48 = tl.where(_top2 >= _kth18, tl.where((_top2 & 0x80000000) != 0, _top2 & 0x7FFFFFFF, _top2 ^ 0xFFFFFFFF).to(tl.float32, bitcast=True), float("-inf"))
        tmp49 = (tmp48 < tmp32)
        tmp50 = tl.where(tmp49, float("-inf"), tmp48)
        tmp51 = tmp50 - _max33
        tmp52 = _egg_exp2_ftz(tl.abs(tmp51) * -1.4426950408889634, PTX)
        _sum34 = tl.where(tmp51 > 0, _sum34 * tmp52 + 1.0, _sum34 + tmp52)
        _max33 = _egg_max_nan(_max33, tmp50)
        tmp53 = tl.where(_top3 >= _kth18, tl.where((_top3 & 0x80000000) != 0, _top3 & 0x7FFFFFFF, _top3 ^ 0xFFFFFFFF).to(tl.float32, bitcast=True), float("-inf"))
        tmp54 = (tmp53 < tmp32)
        tmp55 = tl.where(tmp54, float("-inf"), tmp53)
        tmp56 = tmp55 - _max33
        tmp57 = _egg_exp2_ftz(tl.abs(tmp56) * -1.4426950408889634, PTX)
        _sum34 = tl.where(tmp56 > 0, _sum34 * tmp57 + 1.0, _sum34 + tmp57)
        _max33 = _egg_max_nan(_max33, tmp55)
        tmp58 = tl.where(_top4 >= _kth18, tl.where((_top4 & 0x80000000) != 0, _top4 & 0x7FFFFFFF, _top4 ^ 0xFFFFFFFF).to(tl.float32, bitcast=True), float("-inf"))
        tmp59 = (tmp58 < tmp32)
        tmp60 = tl.where(tmp59, float("-inf"), tmp58)
        tmp61 = tmp60 - _max33
        tmp62 = _egg_exp2_ftz(tl.abs(tmp61) * -1.4426950408889634, PTX)
        _sum34 = tl.where(tmp61 > 0, _sum34 * tmp62 + 1.0, _sum34 + tmp62)
        _max33 = _egg_max_nan(_max33, tmp60)
    tmp63 = tl.max(_max33, 1)[:, None]
    tmp64 = tl.sum((_max33 != _max33).to(tl.int32), 1)[:, None] > 0
    tmp65 = tl.where(tmp64, float("nan"), tmp63)
    tmp66 = tl.sum(_sum34 * tl.exp(_max33 - tmp65), 1)[:, None]
    tmp67 = tl.where(tmp66 == 0.0, float("-inf"), tmp65)
    # pass 3 of 3 over the reduced extent: the stores
    for roffset in range(0, rnumel - rnumel % RBLOCK, RBLOCK):  # whole blocks: no lane past the end
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        rmask = tl.full([1, RBLOCK], True, tl.int1)
        tmp68 = tl.load(logits_ptr + (rindex + 128256*xindex), rmask, other=0.0).to(tl.float32)
        tmp69 = (tmp68 / tmp6)
        tmp70 = (tmp69 < tmp32)
        tmp71 = tl.where(tmp70, float("-inf"), tmp69)
        tmp72 = (tmp71 - tmp67)
        tmp73 = tl.exp(tmp72)
        tmp74 = (tmp73 / tmp66)
        tl.store(div_1_ptr + (rindex + 128256*xindex), tmp74.to(tl.float32), rmask)
    for roffset in range(rnumel - rnumel % RBLOCK, rnumel, RBLOCK):  # the last block, partial
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        rmask = rindex < rnumel
        tmp68 = tl.load(logits_ptr + (rindex + 128256*xindex), rmask, other=0.0).to(tl.float32)
        tmp69 = (tmp68 / tmp6)
        tmp70 = (tmp69 < tmp32)
        tmp71 = tl.where(tmp70, float("-inf"), tmp69)
        tmp72 = (tmp71 - tmp67)
        tmp73 = tl.exp(tmp72)
        tmp74 = (tmp73 / tmp66)
        tl.store(div_1_ptr + (rindex + 128256*xindex), tmp74.to(tl.float32), rmask)


_egg_red0_topk_amax_exp_etc_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red0_topk_amax_exp_etc_launch(logits, temperatures):
    """reduction: topk, amax, exp, sum_1, div_1"""
    global _egg_red0_topk_amax_exp_etc_launch_k0
    div_1 = torch.empty_strided((256, 128256), (128256, 1), dtype=torch.float32, device=logits.device)
    if _egg_red0_topk_amax_exp_etc_launch_k0 is not None and _egg_red0_topk_amax_exp_etc_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(logits, temperatures, div_1):
        _egg_red0_topk_amax_exp_etc_launch_k0[1][(256, 1, 1)](logits, temperatures, div_1, 1, 2048, logits.device.type == "cuda" and torch.version.hip is None)
    elif logits.device.type == "cuda" and _egg_aligned(logits, temperatures, div_1):
        _egg_red0_topk_amax_exp_etc_launch_k0 = (torch.cuda.current_device(), _egg_red0_topk_amax_exp_etc[(256,)](
            logits, temperatures, div_1,
            XBLOCK=1, RBLOCK=2048, PTX=logits.device.type == "cuda" and torch.version.hip is None, num_warps=16,
        ))
    else:
        _egg_red0_topk_amax_exp_etc[(256,)](
            logits, temperatures, div_1,
            XBLOCK=1, RBLOCK=2048, PTX=logits.device.type == "cuda" and torch.version.hip is None, num_warps=16,
        )
    return (div_1,)


# ---- the candidate ----


class ModelNew(Model):
    """library ops stay torch calls, the ops around them are fused: 1 Triton kernel launch(es) per call"""

    def __init__(self, top_k: int):
        super().__init__(top_k)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        pass

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((256, 128256), torch.bfloat16, (256,), torch.float32, )."""
    logits = inputs[0]
    temperatures = inputs[1]
    if (logits.shape != (256, 128256) or logits.dtype != torch.bfloat16) or (temperatures.shape != (256,) or temperatures.dtype != torch.float32):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((logits.shape, logits.dtype)) + str((temperatures.shape, temperatures.dtype)))
    if logits.stride() != (128256, 1):
        logits = torch.empty_strided((256, 128256), (128256, 1), dtype=logits.dtype, device=logits.device).copy_(logits)
    if temperatures.stride() != (1,):
        temperatures = torch.empty_strided((256,), (1,), dtype=temperatures.dtype, device=temperatures.device).copy_(temperatures)
    _dev = logits.device
    div_1, = _egg_red0_topk_amax_exp_etc_launch(logits, temperatures)
    return div_1
