# EGG expert candidate for cross_entropy_large_vocab.py (agents.expert: loop-level IR + templates, no LLM)
# structure: max, sum over 128256 x 1024 rows, looped (1 pass(es)), with 2 store(s); sum over 1024 x 1 rows, persistent (rows in registers), with 1 store(s)
# variant: fused: library ops stay torch calls, the ops around them are fused
#   _egg_red0_amax_sum: PERSISTENT=False XBLOCK=1 RBLOCK=2048 num_warps=2 EVICT_STREAM='evict_first' EVICT_REUSE=''
#   _egg_red1_sum_div: PERSISTENT=True XBLOCK=1 RBLOCK=1024 num_warps=4 EVICT_STREAM='' EVICT_REUSE=''
# principles: algorithm-structure/fuse-reduction-with-neighbours, tiling/fp32-accumulators, memory/masked-loads-neutral-other, algorithm-structure/softmax-one-pass-or-online, tiling/one-pass-row-limit, parallel-mapping/one-row-per-program
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "PERSISTENT": false, "RBLOCK": 2048, "XBLOCK": 1, "num_warps": 2}, "kernel": "_egg_red0_amax_sum", "template": "reduction"}, {"config": {"EVICT_REUSE": "", "EVICT_STREAM": "", "PERSISTENT": true, "RBLOCK": 1024, "XBLOCK": 1, "num_warps": 4}, "kernel": "_egg_red1_sum_div", "template": "reduction"}], "shape_set": "default", "specialised": ["default"], "variant": "fused", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


"""Cross-entropy loss over a 128256-token vocabulary: bf16 logits [tokens, vocab] -> fp32 mean loss.

Where it occurs: the LM-head loss of every causal language model in pre-training and fine-tuning
(Llama-3's vocabulary is 128256; Qwen2's 151936, Gemma's 256000). Hugging Face upcasts the bf16
logits to fp32 and calls ``F.cross_entropy`` with ``ignore_index=-100`` (padding and masked
prompt tokens); the loss is the mean over the tokens that are not ignored. About 10% of the
targets here are -100.

Sizes that matter: vocab 128256 (Llama-3) and 1024 tokens per chunk (production; losses are often
computed in chunks of tokens to bound the fp32 logits memory, as in Liger/torchtune chunked CE).
The ``odd`` set uses GPT-2's vocabulary of 50257.

Character: memory bound; one pass over the logits computing a row max, a log-sum-exp and the
target logit (an online-softmax kernel reads every logit exactly once, in bf16, instead of
materialising the fp32 copy and the log-probabilities as the reference does), then a mean over
~1000 rows. The default fp32 tolerance (1e-4) applies to the loss: the reduction is done in fp32
from exact bf16 inputs, so a correct kernel lands within a few ulps of the reference.

Bytes moved at production: read 262.7 MB of bf16 logits and 8 KiB of targets, write 4 bytes
= 262.7 MB.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 1024
VOCAB = 128256
IGNORE_FRACTION = 0.1
DTYPE = "bfloat16"
SHAPES = {
    "small": {"TOKENS": 6, "VOCAB": 500, "DTYPE": "float32"},
    "odd": {"TOKENS": 13, "VOCAB": 50257},
}


class Model(nn.Module):
    def __init__(self, ignore_index: int = -100) -> None:
        super().__init__()
        self.ignore_index = ignore_index

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), targets, ignore_index=self.ignore_index)


# ---- kernels ----


def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_red0_amax_sum(logits_ptr, amax_ptr, sum_1_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: amax, sum_1"""
    xnumel = 1024
    rnumel = 128256
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    _max1 = tl.full([XBLOCK, 1], float("-inf"), tl.float32)
    _sum2 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    _nan3 = tl.zeros([XBLOCK, RBLOCK], tl.int32)
    # pass 1 of 1 over the reduced extent: amax, sum_1
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        rmask = rindex < rnumel
        tmp4 = tl.load(logits_ptr + (rindex + 128256*xindex), rmask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        tmp5 = tl.where(rmask, tmp4, float("-inf"))
        tmp6 = tl.maximum(_max1, tl.max(tmp5, 1)[:, None])
        tmp7 = tl.where(tmp6 == float("-inf"), 0.0, tl.exp(tmp4 - tmp6))
        tmp8 = tl.where(rmask, tmp7, 0.0)
        tmp9 = tl.where(_max1 == float("-inf"), 0.0, tl.exp(_max1 - tmp6))
        _sum2 = _sum2 * tmp9 + tmp8
        _nan3 = _nan3 + (tmp5 != tmp5).to(tl.int32)
        _max1 = tmp6
    tmp10 = tl.where(tl.sum(_nan3, 1)[:, None] > 0, float("nan"), _max1)
    tmp11 = tl.sum(_sum2, 1)[:, None]
    tl.store(amax_ptr + (xindex), tmp10.to(tl.float32))
    tl.store(sum_1_ptr + (xindex), tmp11.to(tl.float32))


_egg_red0_amax_sum_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red0_amax_sum_launch(logits):
    """reduction: amax, sum_1"""
    global _egg_red0_amax_sum_launch_k0
    amax = torch.empty_strided((1024, 1), (1, 1), dtype=torch.float32, device=logits.device)
    sum_1 = torch.empty_strided((1024, 1), (1, 1), dtype=torch.float32, device=logits.device)
    if _egg_red0_amax_sum_launch_k0 is not None and _egg_red0_amax_sum_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(logits, amax, sum_1):
        _egg_red0_amax_sum_launch_k0[1][(1024, 1, 1)](logits, amax, sum_1, 1, 2048)
    elif logits.device.type == "cuda" and _egg_aligned(logits, amax, sum_1):
        _egg_red0_amax_sum_launch_k0 = (torch.cuda.current_device(), _egg_red0_amax_sum[(1024,)](
            logits, amax, sum_1,
            XBLOCK=1, RBLOCK=2048, num_warps=2,
        ))
    else:
        _egg_red0_amax_sum[(1024,)](
            logits, amax, sum_1,
            XBLOCK=1, RBLOCK=2048, num_warps=2,
        )
    return (amax, sum_1)

@triton.jit
def _egg_red1_sum_div(amax_ptr, logits_ptr, sum_1_ptr, targets_ptr, div_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: sum_2, sum_3, div"""
    xnumel = 1
    rnumel = 1024
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    # persistent: the whole reduced extent of XBLOCK rows sits in registers, read once
    rindex = tl.arange(0, RBLOCK)[None, :]
    tmp1 = tl.load(targets_ptr + (rindex))
    tmp2 = (tmp1 != -100)
    tmp3 = tmp2.to(tl.int64)
    tmp4 = tl.broadcast_to(tmp3, [XBLOCK, RBLOCK])
    tmp5 = tl.sum(tmp4, 1)[:, None]
    tmp6 = tl.where(tmp2, tmp1, 0)
    tmp7 = (tmp6 < 0)
    tmp8 = (tmp6 + 128256)
    tmp9 = tl.where(tmp7, tmp8, tmp6)
    tmp10 = tl.load(logits_ptr + (128256*rindex + tmp9)).to(tl.float32)
    tmp11 = tl.load(amax_ptr + (rindex))
    tmp12 = (tmp10 - tmp11)
    tmp13 = tl.load(sum_1_ptr + (rindex))
    tmp14 = tl.log(tmp13)
    tmp15 = (tmp12 - tmp14)
    tmp16 = (-tmp15)
    tmp17 = tl.where(tmp2, tmp16, 0.0)
    tmp18 = tl.broadcast_to(tmp17, [XBLOCK, RBLOCK])
    tmp19 = tl.sum(tmp18, 1)[:, None]
    tmp20 = tmp5.to(tl.float32)
    tmp21 = (tmp19 / tmp20)
    tl.store(div_ptr + 0 * xindex, tmp21.to(tl.float32))


_egg_red1_sum_div_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red1_sum_div_launch(amax, logits, sum_1, targets):
    """reduction: sum_2, sum_3, div"""
    global _egg_red1_sum_div_launch_k0
    div = torch.empty_strided((), (), dtype=torch.float32, device=amax.device)
    if _egg_red1_sum_div_launch_k0 is not None and _egg_red1_sum_div_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(amax, logits, sum_1, targets, div):
        _egg_red1_sum_div_launch_k0[1][(1, 1, 1)](amax, logits, sum_1, targets, div, 1, 1024)
    elif amax.device.type == "cuda" and _egg_aligned(amax, logits, sum_1, targets, div):
        _egg_red1_sum_div_launch_k0 = (torch.cuda.current_device(), _egg_red1_sum_div[(1,)](
            amax, logits, sum_1, targets, div,
            XBLOCK=1, RBLOCK=1024, num_warps=4,
        ))
    else:
        _egg_red1_sum_div[(1,)](
            amax, logits, sum_1, targets, div,
            XBLOCK=1, RBLOCK=1024, num_warps=4,
        )
    return (div,)


# ---- the candidate ----


class ModelNew(Model):
    """library ops stay torch calls, the ops around them are fused: 2 Triton kernel launch(es) per call"""

    def __init__(self, ignore_index: int=-100):
        super().__init__(ignore_index)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        pass

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((1024, 128256), torch.bfloat16, (1024,), torch.int64, )."""
    logits = inputs[0]
    targets = inputs[1]
    if (logits.shape != (1024, 128256) or logits.dtype != torch.bfloat16) or (targets.shape != (1024,) or targets.dtype != torch.int64):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((logits.shape, logits.dtype)) + str((targets.shape, targets.dtype)))
    if logits.stride() != (128256, 1):
        logits = torch.empty_strided((1024, 128256), (128256, 1), dtype=logits.dtype, device=logits.device).copy_(logits)
    if targets.stride() != (1,):
        targets = torch.empty_strided((1024,), (1,), dtype=targets.dtype, device=targets.device).copy_(targets)
    _dev = logits.device
    amax, sum_1 = _egg_red0_amax_sum_launch(logits)
    div, = _egg_red1_sum_div_launch(amax, logits, sum_1, targets)
    return div
