"""Reference kernel: softmax over the 50 largest of each 64 x 32000 fp16 row (top-k sampling; no sort).

Generated, do not edit: the expert codegen's reduction template(s) (agents/expert/templates/), variant fused,
rendered for an H200 with the built-in packs' constants by `python -m agents.expert.reference`.
Structure: kth_largest, max, sum over 32000 x 64 rows, looped (3 pass(es)), with 1 store(s)
Principles: algorithm-structure/fuse-reduction-with-neighbours, tiling/fp32-accumulators, memory/masked-loads-neutral-other, algorithm-structure/softmax-one-pass-or-online, algorithm-structure/order-statistic-not-sort, algorithm-structure/reduce-kept-keys, algorithm-structure/store-kept-keys, tiling/one-pass-row-limit
"""

import torch
import triton
import triton.language as tl


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
def _egg_red0_topk_amax_sum_etc(x_ptr, div_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, PTX: tl.constexpr):
    """reduction: topk, amax, sum_1, div"""
    xnumel = 64
    rnumel = 32000
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    _top1 = tl.zeros([XBLOCK, RBLOCK], tl.uint32)
    _top2 = tl.zeros([XBLOCK, RBLOCK], tl.uint32)
    _top3 = tl.zeros([XBLOCK, RBLOCK], tl.uint32)
    _top4 = tl.zeros([XBLOCK, RBLOCK], tl.uint32)
    # pass 1 of 3 over the reduced extent: topk (the 4 largest keys of each lane, then a bisection over them)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        rmask = rindex < rnumel
        tmp5 = tl.load(x_ptr + (rindex + 32000*xindex), rmask, other=0.0).to(tl.float32)
        tmp6 = tmp5.to(tl.uint32, bitcast=True)
        tmp7 = tl.where(tmp5 != tmp5, 0x7FC00000, tmp6)
        tmp8 = tmp7 ^ ((tmp7.to(tl.int32, bitcast=True) >> 31).to(tl.uint32, bitcast=True) | 0x80000000)
        tmp9 = tl.where(rmask, tmp8, 0)
        _hi10 = tl.maximum(_top1, tmp9)
        _lo11 = tl.minimum(_top1, tmp9)
        _top1 = _hi10
        _hi12 = tl.maximum(_top2, _lo11)
        _lo13 = tl.minimum(_top2, _lo11)
        _top2 = _hi12
        _hi14 = tl.maximum(_top3, _lo13)
        _lo15 = tl.minimum(_top3, _lo13)
        _top3 = _hi14
        _top4 = tl.maximum(_top4, _lo15)
    _kth16 = tl.zeros([XBLOCK, 1], tl.uint32)
    for _bit17 in range(31, -1, -1):
        _cand18 = _kth16 | (tl.full([XBLOCK, 1], 1, tl.uint32) << _bit17)
        _kth16 = tl.where(tl.sum((_top1 >= _cand18).to(tl.int32) + (_top2 >= _cand18).to(tl.int32) + (_top3 >= _cand18).to(tl.int32) + (_top4 >= _cand18).to(tl.int32), 1)[:, None] >= 50, _cand18, _kth16)
    tmp19 = tl.max(((_top4 >= _kth16)).to(tl.int32), 1)[:, None]
    if tl.max(tmp19) > 0:
        _kth26 = tl.zeros([XBLOCK, 1], tl.uint32)
        for _bit27 in range(31, -1, -1):
            _cand28 = _kth26 | (tl.full([XBLOCK, 1], 1, tl.uint32) << _bit27)
            _cnt20 = tl.zeros([XBLOCK, RBLOCK], tl.int32)
            for roffset in range(0, rnumel, RBLOCK):
                rindex = roffset + tl.arange(0, RBLOCK)[None, :]
                rmask = rindex < rnumel
                tmp21 = tl.load(x_ptr + (rindex + 32000*xindex), rmask, other=0.0).to(tl.float32)
                tmp22 = tmp21.to(tl.uint32, bitcast=True)
                tmp23 = tl.where(tmp21 != tmp21, 0x7FC00000, tmp22)
                tmp24 = tmp23 ^ ((tmp23.to(tl.int32, bitcast=True) >> 31).to(tl.uint32, bitcast=True) | 0x80000000)
                tmp25 = tl.where(rmask, tmp24, 0)
                _cnt20 += (tmp25 >= _cand28).to(tl.int32)
            _kth26 = tl.where(tl.sum(_cnt20, 1)[:, None] >= 50, _cand28, _kth26)
        _kth16 = tl.where(tmp19 > 0, _kth26, _kth16)
    tmp29 = (_kth16 ^ ((((_kth16) ^ 0xFFFFFFFF).to(tl.int32, bitcast=True) >> 31).to(tl.uint32, bitcast=True) | 0x80000000)).to(tl.float32, bitcast=True)
    _max30 = tl.full([XBLOCK, RBLOCK], -3.4028234663852886e+38, tl.float32)
    _sum31 = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    tmp38 = tl.max(((tmp19 > 0) | (((tmp29 != tmp29) | (tmp29 == 0.0)))).to(tl.int32))
    # pass 2 of 3 over the reduced extent: amax, sum_1 (from topk's kept keys where they hold every kept element)
    if tmp38 > 0:
        for roffset in range(0, rnumel - rnumel % RBLOCK, RBLOCK):  # whole blocks: no lane past the end
            rindex = roffset + tl.arange(0, RBLOCK)[None, :]
            rmask = tl.full([1, RBLOCK], True, tl.int1)
            tmp32 = tl.load(x_ptr + (rindex + 32000*xindex), rmask, other=0.0).to(tl.float32)
            tmp33 = (tmp32 < tmp29)
            tmp34 = tl.where(tmp33, float("-inf"), tmp32)
            tmp35 = tl.where(rmask, tmp34, float("-inf"))
            tmp36 = tmp35 - _max30
            tmp37 = _egg_exp2_ftz(tl.abs(tmp36) * -1.4426950408889634, PTX)
            _sum31 = tl.where(tmp36 > 0, _sum31 * tmp37 + 1.0, _sum31 + tmp37)
            _max30 = _egg_max_nan(_max30, tmp35)
        for roffset in range(rnumel - rnumel % RBLOCK, rnumel, RBLOCK):  # the last block, partial
            rindex = roffset + tl.arange(0, RBLOCK)[None, :]
            rmask = rindex < rnumel
            tmp32 = tl.load(x_ptr + (rindex + 32000*xindex), rmask, other=0.0).to(tl.float32)
            tmp33 = (tmp32 < tmp29)
            tmp34 = tl.where(tmp33, float("-inf"), tmp32)
            tmp35 = tl.where(rmask, tmp34, float("-inf"))
            tmp36 = tmp35 - _max30
            tmp37 = _egg_exp2_ftz(tl.abs(tmp36) * -1.4426950408889634, PTX)
            _sum31 = tl.where(tmp36 > 0, _sum31 * tmp37 + 1.0, _sum31 + tmp37)
            _max30 = _egg_max_nan(_max30, tmp35)
    else:  # every kept element is a lane's kept key: reduce those, in registers
        tmp39 = tl.where(_top1 >= _kth16, (_top1 ^ ((((_top1) ^ 0xFFFFFFFF).to(tl.int32, bitcast=True) >> 31).to(tl.uint32, bitcast=True) | 0x80000000)).to(tl.float32, bitcast=True), float("-inf"))
        tmp40 = (tmp39 < tmp29)
        tmp41 = tl.where(tmp40, float("-inf"), tmp39)
        tmp42 = tmp41 - _max30
        tmp43 = _egg_exp2_ftz(tl.abs(tmp42) * -1.4426950408889634, PTX)
        _sum31 = tl.where(tmp42 > 0, _sum31 * tmp43 + 1.0, _sum31 + tmp43)
        _max30 = _egg_max_nan(_max30, tmp41)
        tmp44 = tl.where(_top2 >= _kth16, (_top2 ^ ((((_top2) ^ 0xFFFFFFFF).to(tl.int32, bitcast=True) >> 31).to(tl.uint32, bitcast=True) | 0x80000000)).to(tl.float32, bitcast=True), float("-inf"))
        tmp45 = (tmp44 < tmp29)
        tmp46 = tl.where(tmp45, float("-inf"), tmp44)
        tmp47 = tmp46 - _max30
        tmp48 = _egg_exp2_ftz(tl.abs(tmp47) * -1.4426950408889634, PTX)
        _sum31 = tl.where(tmp47 > 0, _sum31 * tmp48 + 1.0, _sum31 + tmp48)
        _max30 = _egg_max_nan(_max30, tmp46)
        tmp49 = tl.where(_top3 >= _kth16, (_top3 ^ ((((_top3) ^ 0xFFFFFFFF).to(tl.int32, bitcast=True) >> 31).to(tl.uint32, bitcast=True) | 0x80000000)).to(tl.float32, bitcast=True), float("-inf"))
        tmp50 = (tmp49 < tmp29)
        tmp51 = tl.where(tmp50, float("-inf"), tmp49)
        tmp52 = tmp51 - _max30
        tmp53 = _egg_exp2_ftz(tl.abs(tmp52) * -1.4426950408889634, PTX)
        _sum31 = tl.where(tmp52 > 0, _sum31 * tmp53 + 1.0, _sum31 + tmp53)
        _max30 = _egg_max_nan(_max30, tmp51)
        tmp54 = tl.where(_top4 >= _kth16, (_top4 ^ ((((_top4) ^ 0xFFFFFFFF).to(tl.int32, bitcast=True) >> 31).to(tl.uint32, bitcast=True) | 0x80000000)).to(tl.float32, bitcast=True), float("-inf"))
        tmp55 = (tmp54 < tmp29)
        tmp56 = tl.where(tmp55, float("-inf"), tmp54)
        tmp57 = tmp56 - _max30
        tmp58 = _egg_exp2_ftz(tl.abs(tmp57) * -1.4426950408889634, PTX)
        _sum31 = tl.where(tmp57 > 0, _sum31 * tmp58 + 1.0, _sum31 + tmp58)
        _max30 = _egg_max_nan(_max30, tmp56)
    tmp59 = tl.max(_max30, 1)[:, None]
    tmp60 = tl.sum((_max30 != _max30).to(tl.int32), 1)[:, None] > 0
    tmp61 = tl.where(tmp60, float("nan"), tmp59)
    tmp62 = tl.sum(_sum31 * tl.exp(_max30 - tmp61), 1)[:, None]
    tmp63 = tl.where(tmp62 == 0.0, float("-inf"), tmp61)
    # pass 3 of 3 over the reduced extent: the stores
    for roffset in range(0, rnumel - rnumel % RBLOCK, RBLOCK):  # whole blocks: no lane past the end
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        rmask = tl.full([1, RBLOCK], True, tl.int1)
        tmp64 = tl.load(x_ptr + (rindex + 32000*xindex), rmask, other=0.0).to(tl.float32)
        tmp65 = (tmp64 < tmp29)
        tmp66 = tl.where(tmp65, float("-inf"), tmp64)
        tmp67 = (tmp66 - tmp63)
        tmp68 = tl.exp(tmp67)
        tmp69 = (tmp68 / tmp62)
        tl.store(div_ptr + (rindex + 32000*xindex), tmp69.to(tl.float32), rmask)
    for roffset in range(rnumel - rnumel % RBLOCK, rnumel, RBLOCK):  # the last block, partial
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        rmask = rindex < rnumel
        tmp64 = tl.load(x_ptr + (rindex + 32000*xindex), rmask, other=0.0).to(tl.float32)
        tmp65 = (tmp64 < tmp29)
        tmp66 = tl.where(tmp65, float("-inf"), tmp64)
        tmp67 = (tmp66 - tmp63)
        tmp68 = tl.exp(tmp67)
        tmp69 = (tmp68 / tmp62)
        tl.store(div_ptr + (rindex + 32000*xindex), tmp69.to(tl.float32), rmask)


_egg_red0_topk_amax_sum_etc_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red0_topk_amax_sum_etc_launch(x):
    """reduction: topk, amax, sum_1, div"""
    global _egg_red0_topk_amax_sum_etc_launch_k0
    div = torch.empty_strided((64, 32000), (32000, 1), dtype=torch.float32, device=x.device)
    if _egg_red0_topk_amax_sum_etc_launch_k0 is not None and _egg_red0_topk_amax_sum_etc_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(x, div):
        _egg_red0_topk_amax_sum_etc_launch_k0[1][(64, 1, 1)](x, div, 1, 2048, x.device.type == "cuda" and torch.version.hip is None)
    elif x.device.type == "cuda" and _egg_aligned(x, div):
        _egg_red0_topk_amax_sum_etc_launch_k0 = (torch.cuda.current_device(), _egg_red0_topk_amax_sum_etc[(64,)](
            x, div,
            XBLOCK=1, RBLOCK=2048, PTX=x.device.type == "cuda" and torch.version.hip is None, num_warps=16,
        ))
    else:
        _egg_red0_topk_amax_sum_etc[(64,)](
            x, div,
            XBLOCK=1, RBLOCK=2048, PTX=x.device.type == "cuda" and torch.version.hip is None, num_warps=16,
        )
    return (div,)
