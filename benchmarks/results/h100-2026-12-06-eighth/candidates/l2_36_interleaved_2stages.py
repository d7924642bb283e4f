# EGG expert candidate for 36_ConvTranspose2d_Min_Sum_GELU_Add.py (agents.expert: loop-level IR + templates, no LLM)
# structure: pointwise kernel over 16777216 elements writing 1 output(s), tiled 32 x 64 over a transposed access; pointwise kernel over 73728 elements writing 1 output(s), tiled 32 x 64 over a transposed access; Triton convolution with its operand prologue in the tile loads, tf32 fp32 dot, 2 output phases interleaved in registers (contiguous stores); min over 128 x 1048576 rows, persistent (rows in registers),
# variant: conv-gemm: convolutions as Triton implicit GEMMs (the input gathered in the tile loads), their bias and the ops after them in the epilogue, TF32 as cuDNN under PyTorch's default
#   _egg_poi0_convolution_x_tf: XBLOCK=64 num_warps=4 EVICT_STREAM='evict_first' EVICT_REUSE='' YBLOCK=32
#   _egg_poi1_convolution_w_tf: XBLOCK=64 num_warps=4 EVICT_STREAM='' EVICT_REUSE='' YBLOCK=32
#   _egg_mat2_convolution: BLOCK_M=64 BLOCK_N=128 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=2 SPLIT_K=1
#   _egg_red3_min: PERSISTENT=True XBLOCK=64 RBLOCK=128 num_warps=4 EVICT_STREAM='evict_first' EVICT_REUSE=''
#   _egg_red4_sum_add: PERSISTENT=False XBLOCK=256 RBLOCK=4 num_warps=4 EVICT_STREAM='' EVICT_REUSE=''
# principles: algorithm-structure/conv-implicit-gemm, algorithm-structure/fuse-elementwise-chain, parallel-mapping/flat-index-for-elementwise, tiling/power-of-two-blocks-with-masks, memory/eviction-hints, memory/transpose-via-tiles, parallel-mapping/fill-the-machine-in-waves, parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/fuse-matmul-epilogue, tiling/fp32-dot-input-precision, algorithm-structure/fuse-reduction-with-neighbours, memory/masked-loads-neutral-other, parallel-mapping/reduce-non-contiguous-axis, tiling/one-pass-row-limit, parallel-mapping/one-row-per-program
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "XBLOCK": 64, "YBLOCK": 32, "num_warps": 4}, "kernel": "_egg_poi0_convolution_x_tf", "template": "pointwise"}, {"config": {"EVICT_REUSE": "", "EVICT_STREAM": "", "XBLOCK": 64, "YBLOCK": 32, "num_warps": 4}, "kernel": "_egg_poi1_convolution_w_tf", "template": "pointwise"}, {"config": {"BLOCK_K": 32, "BLOCK_M": 64, "BLOCK_N": 128, "GROUP_M": 8, "SPLIT_K": 1, "num_stages": 2, "num_warps": 4}, "kernel": "_egg_mat2_convolution", "template": "matmul"}, {"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "PERSISTENT": true, "RBLOCK": 128, "XBLOCK": 64, "num_warps": 4}, "kernel": "_egg_red3_min", "template": "reduction"}, {"config": {"EVICT_REUSE": "", "EVICT_STREAM": "", "PERSISTENT": false, "RBLOCK": 4, "XBLOCK": 256, "num_warps": 4}, "kernel": "_egg_red4_sum_add", "template": "reduction"}], "shape_set": "default", "specialised": ["default"], "variant": "conv-gemm", "version": 2}


import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


# ---- the reference (verbatim, without get_inputs/get_init_inputs) ----


import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that performs a convolution transpose, minimum operation, sum operation, GELU activation and addition.
    """
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride, padding, output_padding)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv_transpose(x)
        x = torch.min(x, dim=1, keepdim=True)[0]  # Minimum operation along channel dimension
        x = torch.sum(x, dim=2, keepdim=True)  # Sum operation along height dimension
        x = torch.nn.functional.gelu(x)  # GELU activation
        x = x + self.bias
        return x

batch_size = 16
in_channels = 64
out_channels = 128
height, width = 128, 128
kernel_size = 3
stride = 2
padding = 1
output_padding = 1
bias_shape = (1, 1, 1)


# ---- kernels ----


@triton.jit
def _egg_round_tf32(x):
    # fp32 rounded to TF32's 10-bit mantissa, to nearest (ties away), as cuDNN rounds (cvt.rna). A
    # tl.dot with input_precision="tf32" hands fp32 to the tensor cores, which drop the low 13 bits:
    # truncation, biased, 2.6x the mean error of a rounded TF32 convolution on the H200 (2026-12-03).
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)

def _egg_aligned(*tensors):
    # Triton specialised the compiled kernel on 16-byte aligned pointers: relaunch it directly
    # only with such pointers (anything else goes through JITFunction.run, which re-specialises)
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.data_ptr() % 16:
            return False
    return True


@triton.jit
def _egg_poi0_convolution_x_tf(x_ptr, convolution_x_tf32_ptr, XBLOCK: tl.constexpr, YBLOCK: tl.constexpr):
    """pointwise: convolution_x_tf32"""
    xnumel = 16777216
    # a [YBLOCK, XBLOCK] tile of the flat index yindex * 64 + xinner: the transposed access
    # walks yindex with stride 1, the contiguous ones walk xinner, so both use whole sectors
    pid = tl.program_id(0)
    yindex = (pid // 1) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    xinner = (pid % 1) * XBLOCK + tl.arange(0, XBLOCK)[None, :]
    i1 = (yindex) % 16384
    i2 = (yindex) // 16384
    tmp3 = tl.load(x_ptr + (16384*xinner + i1 + 1048576*i2), eviction_policy="evict_first")
    tmp4 = _egg_round_tf32(tmp3)
    tl.store(convolution_x_tf32_ptr + (xinner + 64*yindex), tmp4.to(tl.float32))


_egg_poi0_convolution_x_tf_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi0_convolution_x_tf_launch(x):
    """pointwise: convolution_x_tf32"""
    global _egg_poi0_convolution_x_tf_launch_k0
    convolution_x_tf32 = torch.empty_strided((16, 64, 128, 128), (1048576, 1, 8192, 64), dtype=torch.float32, device=x.device)
    if _egg_poi0_convolution_x_tf_launch_k0 is not None and _egg_poi0_convolution_x_tf_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(x, convolution_x_tf32):
        _egg_poi0_convolution_x_tf_launch_k0[1][(8192, 1, 1)](x, convolution_x_tf32, 64, 32)
    elif x.device.type == "cuda" and _egg_aligned(x, convolution_x_tf32):
        _egg_poi0_convolution_x_tf_launch_k0 = (torch.cuda.current_device(), _egg_poi0_convolution_x_tf[(8192,)](
            x, convolution_x_tf32,
            XBLOCK=64, YBLOCK=32, num_warps=4,
        ))
    else:
        _egg_poi0_convolution_x_tf[(8192,)](
            x, convolution_x_tf32,
            XBLOCK=64, YBLOCK=32, num_warps=4,
        )
    return (convolution_x_tf32,)

@triton.jit
def _egg_poi1_convolution_w_tf(p_conv_transpose_weight_ptr, convolution_w_tf32_ptr, XBLOCK: tl.constexpr, YBLOCK: tl.constexpr):
    """pointwise: convolution_w_tf32"""
    xnumel = 73728
    # a [YBLOCK, XBLOCK] tile of the flat index yindex * 64 + xinner: the transposed access
    # walks yindex with stride 1, the contiguous ones walk xinner, so both use whole sectors
    pid = tl.program_id(0)
    yindex = (pid // 1) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    xinner = (pid % 1) * XBLOCK + tl.arange(0, XBLOCK)[None, :]
    tmp1 = tl.load(p_conv_transpose_weight_ptr + (1152*xinner + yindex))
    tmp2 = _egg_round_tf32(tmp1)
    tl.store(convolution_w_tf32_ptr + (xinner + 64*yindex), tmp2.to(tl.float32))


_egg_poi1_convolution_w_tf_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi1_convolution_w_tf_launch(p_conv_transpose_weight):
    """pointwise: convolution_w_tf32"""
    global _egg_poi1_convolution_w_tf_launch_k0
    convolution_w_tf32 = torch.empty_strided((64, 128, 3, 3), (1, 576, 192, 64), dtype=torch.float32, device=p_conv_transpose_weight.device)
    if _egg_poi1_convolution_w_tf_launch_k0 is not None and _egg_poi1_convolution_w_tf_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(p_conv_transpose_weight, convolution_w_tf32):
        _egg_poi1_convolution_w_tf_launch_k0[1][(36, 1, 1)](p_conv_transpose_weight, convolution_w_tf32, 64, 32)
    elif p_conv_transpose_weight.device.type == "cuda" and _egg_aligned(p_conv_transpose_weight, convolution_w_tf32):
        _egg_poi1_convolution_w_tf_launch_k0 = (torch.cuda.current_device(), _egg_poi1_convolution_w_tf[(36,)](
            p_conv_transpose_weight, convolution_w_tf32,
            XBLOCK=64, YBLOCK=32, num_warps=4,
        ))
    else:
        _egg_poi1_convolution_w_tf[(36,)](
            p_conv_transpose_weight, convolution_w_tf32,
            XBLOCK=64, YBLOCK=32, num_warps=4,
        )
    return (convolution_w_tf32,)

@triton.jit
def _egg_mat2_convolution(convolution_w_tf32_ptr, convolution_x_tf32_ptr, p_conv_transpose_bias_ptr, convolution_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """matmul: convolution: aten.convolution [16x2 x 128 x 256] @ [256 x 32768]"""
    M = 128
    N = 32768
    K = 256
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # the batch index folds into the grid: num_pid_m * num_pid_n tiles per batch entry
    pid_b = pid // (num_pid_m * num_pid_n)
    pid = pid % (num_pid_m * num_pid_n)
    # GROUP_M swizzle: programs that run together reuse the same B tiles from L2
    group_id = pid // (GROUP_M * num_pid_n)
    first_m = group_id * GROUP_M
    group_rows = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_pid_n)) % group_rows
    pid_n = (pid % (GROUP_M * num_pid_n)) // group_rows
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None])
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :])
    # 2 output phases interleaved along N (column n = 2 * j + phase): each phase's dot
    # computes BLOCK_N // 2 columns j, joined in registers after the K loop
    rnj = (pid_n * (BLOCK_N // 2) + tl.arange(0, BLOCK_N // 2)[None, :])
    a_i1 = (pid_b) % 2
    a_i2 = (a_i1 + 1) % 2
    b_i1 = (pid_b) % 2
    b_i2 = (b_i1 + 1) // 2
    b_i4 = (rnj) // 128
    b_i10 = (rnj) % 128
    b_i16 = (b_i1 + 1) % 2
    b_i26 = (pid_b) // 2
    acc0 = tl.zeros((BLOCK_M, BLOCK_N // 2), dtype=tl.float32)
    acc1 = tl.zeros((BLOCK_M, BLOCK_N // 2), dtype=tl.float32)
    # the operand tiles are computed from their index maps (views, prologues) at every K step
    for k0 in range(0, K, BLOCK_K):
        rka = k0 + tl.arange(0, BLOCK_K)[None, :]
        rkb = k0 + tl.arange(0, BLOCK_K)[:, None]
        a_i3 = (rka) // 128
        a_tmp4 = (a_i2 + 2*a_i3)
        a_tmp5 = (a_tmp4 < 3)
        a_i6 = ((rka) // 64) % 2
        a_tmp7 = (2*a_i6 + 1)
        a_tmp8 = (a_tmp7 < 3)
        a_tmp9 = (a_tmp5 & a_tmp8)
        a_i10 = (rka) % 64
        a_i11 = (k0) // 128
        a_i12 = ((k0) // 64) % 2
        a_tmp13 = tl.load(convolution_w_tf32_ptr + (576*rm + 192*a_i2 + a_i10 + 384*a_i11 + 128*a_i12 + 64), a_tmp9, other=0.0)
        a0 = a_tmp13.to(tl.float32)
        a_tmp14 = (2*a_i6)
        a_tmp15 = (a_tmp14 < 3)
        a_tmp16 = (a_tmp5 & a_tmp15)
        a_tmp17 = tl.load(convolution_w_tf32_ptr + (576*rm + 192*a_i2 + a_i10 + 384*a_i11 + 128*a_i12), a_tmp16, other=0.0)
        a1 = a_tmp17.to(tl.float32)
        b_i3 = (rkb) // 128
        b_tmp5 = (b_i2 - b_i3 + b_i4)
        b_tmp6 = (b_tmp5 >= 0)
        b_tmp7 = (b_tmp5 < 128)
        b_tmp8 = (b_tmp6 & b_tmp7)
        b_i9 = ((rkb) // 64) % 2
        b_tmp11 = (-b_i9 + b_i10)
        b_tmp12 = (b_tmp11 >= 0)
        b_tmp13 = (b_tmp8 & b_tmp12)
        b_tmp14 = (b_tmp11 < 128)
        b_tmp15 = (b_tmp13 & b_tmp14)
        b_tmp17 = (b_i16 + 2*b_i3)
        b_tmp18 = (b_tmp17 < 3)
        b_tmp19 = (2*b_i9 + 1)
        b_tmp20 = (b_tmp19 < 3)
        b_tmp21 = (b_tmp18 & b_tmp20)
        b_tmp22 = (b_tmp15 & b_tmp21)
        b_i23 = (rkb) % 64
        b_i24 = (k0) // 128
        b_i25 = ((k0) // 64) % 2
        b_tmp27 = tl.load(convolution_x_tf32_ptr + (64*rnj + 8192*b_i2 + b_i23 - 8192*b_i24 - 64*b_i25 + 1048576*b_i26), b_tmp22, other=0.0)
        b0 = b_tmp27.to(tl.float32)
        b_tmp28 = (-b_i9 + b_i10 + 1)
        b_tmp29 = (b_tmp28 >= 0)
        b_tmp30 = (b_tmp8 & b_tmp29)
        b_tmp31 = (b_tmp28 < 128)
        b_tmp32 = (b_tmp30 & b_tmp31)
        b_tmp33 = (2*b_i9)
        b_tmp34 = (b_tmp33 < 3)
        b_tmp35 = (b_tmp18 & b_tmp34)
        b_tmp36 = (b_tmp32 & b_tmp35)
        b_tmp37 = tl.load(convolution_x_tf32_ptr + (64*rnj + 8192*b_i2 + b_i23 - 8192*b_i24 - 64*b_i25 + 1048576*b_i26 + 64), b_tmp36, other=0.0)
        b1 = b_tmp37.to(tl.float32)
        acc0 = tl.dot(a0, b0, acc0, input_precision="tf32")
        acc1 = tl.dot(a1, b1, acc1, input_precision="tf32")
    # the phases' columns interleaved (each tl.join adds a last dim of 2): the tile in output order,
    # so the epilogue's stores are contiguous
    acc = tl.reshape(tl.join(acc0, acc1), (BLOCK_M, BLOCK_N))
    e_tmp1 = tl.load(p_conv_transpose_bias_ptr + (rm))
    e_tmp2 = acc + e_tmp1
    tl.store(convolution_ptr + (32768*rm + rn + 4194304*pid_b), e_tmp2.to(tl.float32))


_egg_mat2_convolution_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat2_convolution_launch(convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias):
    """matmul: convolution: aten.convolution [16x2 x 128 x 256] @ [256 x 32768]"""
    global _egg_mat2_convolution_launch_k0
    convolution = torch.empty_strided((16, 2, 128, 32768), (8388608, 4194304, 32768, 1), dtype=torch.float32, device=convolution_w_tf32.device)
    if _egg_mat2_convolution_launch_k0 is not None and _egg_mat2_convolution_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias, convolution):
        _egg_mat2_convolution_launch_k0[1][(16384, 1, 1)](convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias, convolution, 64, 128, 32, 8)
    elif convolution_w_tf32.device.type == "cuda" and _egg_aligned(convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias, convolution):
        _egg_mat2_convolution_launch_k0 = (torch.cuda.current_device(), _egg_mat2_convolution[(16384,)](
            convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias, convolution,
            BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=2,
        ))
    else:
        _egg_mat2_convolution[(16384,)](
            convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias, convolution,
            BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=2,
        )
    return (convolution,)

@triton.jit
def _egg_red3_min(convolution_ptr, min_1_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: min_1"""
    xnumel = 1048576
    rnumel = 128
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    # persistent: the whole reduced extent of XBLOCK rows sits in registers, read once
    rindex = tl.arange(0, RBLOCK)[None, :]
    i1 = (xindex) % 256
    i2 = ((xindex) // 256) % 2
    i3 = ((xindex) // 512) % 128
    i4 = (xindex) // 65536
    tmp5 = tl.load(convolution_ptr + (32768*rindex + i1 + 4194304*i2 + 256*i3 + 8388608*i4), eviction_policy="evict_first")
    tmp6 = tl.min(tmp5, 1)[:, None]
    tmp7 = tl.sum((tmp5 != tmp5).to(tl.int32), 1)[:, None] > 0
    tmp8 = tl.where(tmp7, float("nan"), tmp6)
    tl.store(min_1_ptr + (xindex), tmp8.to(tl.float32))


_egg_red3_min_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red3_min_launch(convolution):
    """reduction: min_1"""
    global _egg_red3_min_launch_k0
    min_1 = torch.empty_strided((16, 1, 256, 256), (65536, 65536, 256, 1), dtype=torch.float32, device=convolution.device)
    if _egg_red3_min_launch_k0 is not None and _egg_red3_min_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(convolution, min_1):
        _egg_red3_min_launch_k0[1][(16384, 1, 1)](convolution, min_1, 64, 128)
    elif convolution.device.type == "cuda" and _egg_aligned(convolution, min_1):
        _egg_red3_min_launch_k0 = (torch.cuda.current_device(), _egg_red3_min[(16384,)](
            convolution, min_1,
            XBLOCK=64, RBLOCK=128, num_warps=4,
        ))
    else:
        _egg_red3_min[(16384,)](
            convolution, min_1,
            XBLOCK=64, RBLOCK=128, num_warps=4,
        )
    return (min_1,)

@triton.jit
def _egg_red4_sum_add(min_1_ptr, p_bias_ptr, add_ptr, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
    """reduction: sum_1, add"""
    xnumel = 4096
    rnumel = 256
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    _acc1 = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
    i2 = (xindex) % 256
    i3 = (xindex) // 256
    # pass 1 of 1 over the reduced extent: sum_1
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        tmp4 = tl.load(min_1_ptr + (256*rindex + i2 + 65536*i3))
        _acc1 = _acc1 + tmp4
    tmp5 = tl.sum(_acc1, 1)[:, None]
    tmp6 = (0.5 * tmp5 * (1.0 + tl.erf(tmp5 * 0.7071067811865476)))
    tmp7 = tl.load(p_bias_ptr)
    tmp8 = (tmp6 + tmp7)
    tl.store(add_ptr + (xindex), tmp8.to(tl.float32))


_egg_red4_sum_add_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_red4_sum_add_launch(min_1, p_bias):
    """reduction: sum_1, add"""
    global _egg_red4_sum_add_launch_k0
    add = torch.empty_strided((16, 1, 1, 256), (256, 256, 256, 1), dtype=torch.float32, device=min_1.device)
    if _egg_red4_sum_add_launch_k0 is not None and _egg_red4_sum_add_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(min_1, p_bias, add):
        _egg_red4_sum_add_launch_k0[1][(16, 1, 1)](min_1, p_bias, add, 256, 4)
    elif min_1.device.type == "cuda" and _egg_aligned(min_1, p_bias, add):
        _egg_red4_sum_add_launch_k0 = (torch.cuda.current_device(), _egg_red4_sum_add[(16,)](
            min_1, p_bias, add,
            XBLOCK=256, RBLOCK=4, num_warps=4,
        ))
    else:
        _egg_red4_sum_add[(16,)](
            min_1, p_bias, add,
            XBLOCK=256, RBLOCK=4, num_warps=4,
        )
    return (add,)


# ---- the candidate ----


class ModelNew(Model):
    """convolutions as Triton implicit GEMMs (the input gathered in the tile loads), their bias and the ops after them in the epilogue, TF32 as cuDNN under PyTorch's default: 5 Triton kernel launch(es) per call"""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        self._egg_owners = (self, self.get_submodule('conv_transpose'))

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((16, 64, 128, 128), torch.float32, )."""
    owners = self._egg_owners
    p_bias = owners[0].bias
    p_conv_transpose_weight = owners[1].weight
    p_conv_transpose_bias = owners[1].bias
    x = inputs[0]
    if (x.shape != (16, 64, 128, 128) or x.dtype != torch.float32):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((x.shape, x.dtype)))
    if x.stride() != (1048576, 16384, 128, 1):
        x = torch.empty_strided((16, 64, 128, 128), (1048576, 16384, 128, 1), dtype=x.dtype, device=x.device).copy_(x)
    _dev = x.device
    convolution_x_tf32, = _egg_poi0_convolution_x_tf_launch(x)
    convolution_w_tf32, = _egg_poi1_convolution_w_tf_launch(p_conv_transpose_weight)
    convolution, = _egg_mat2_convolution_launch(convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias)
    min_1, = _egg_red3_min_launch(convolution)
    add, = _egg_red4_sum_add_launch(min_1, p_bias)
    return add
