# EGG expert candidate for 26_ConvTranspose3d_Add_HardSwish.py (agents.expert: loop-level IR + templates, no LLM)
# structure: pointwise kernel over 16777216 elements writing 1 output(s), tiled 32 x 32 over a transposed access; pointwise kernel over 55296 elements writing 1 output(s), tiled 32 x 32 over a transposed access; Triton convolution with its operand prologue in the tile loads and a 1-output epilogue, tf32 fp32 dot, 2 output phases interleaved in registers (contiguous stores)
# variant: conv-gemm: convolutions as Triton implicit GEMMs (the input gathered in the tile loads), their bias and the ops after them in the epilogue, TF32 as cuDNN under PyTorch's default
#   _egg_poi0_convolution_x_tf: XBLOCK=32 num_warps=4 EVICT_STREAM='evict_first' EVICT_REUSE='' YBLOCK=32
#   _egg_poi1_convolution_w_tf: XBLOCK=32 num_warps=4 EVICT_STREAM='' EVICT_REUSE='' YBLOCK=32
#   _egg_mat2_convolution_mul: BLOCK_M=64 BLOCK_N=128 BLOCK_K=32 GROUP_M=8 num_warps=4 num_stages=2 SPLIT_K=1
# principles: algorithm-structure/conv-implicit-gemm, algorithm-structure/fuse-elementwise-chain, parallel-mapping/flat-index-for-elementwise, tiling/power-of-two-blocks-with-masks, memory/eviction-hints, memory/transpose-via-tiles, parallel-mapping/fill-the-machine-in-waves, parallel-mapping/grid-swizzle-for-l2, tiling/fp32-accumulators, algorithm-structure/fuse-matmul-epilogue, tiling/fp32-dot-input-precision
# EGG-EXPERT-CONFIG: {"device": "cuda", "kernels": [{"config": {"EVICT_REUSE": "", "EVICT_STREAM": "evict_first", "XBLOCK": 32, "YBLOCK": 32, "num_warps": 4}, "kernel": "_egg_poi0_convolution_x_tf", "template": "pointwise"}, {"config": {"EVICT_REUSE": "", "EVICT_STREAM": "", "XBLOCK": 32, "YBLOCK": 32, "num_warps": 4}, "kernel": "_egg_poi1_convolution_w_tf", "template": "pointwise"}, {"config": {"BLOCK_K": 32, "BLOCK_M": 64, "BLOCK_N": 128, "GROUP_M": 8, "SPLIT_K": 1, "num_stages": 2, "num_warps": 4}, "kernel": "_egg_mat2_convolution_mul", "template": "matmul"}], "shape_set": "default", "specialised": ["default"], "variant": "conv-gemm", "version": 2}


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
    Model that performs a 3D transposed convolution, adds an input tensor, and applies HardSwish activation.
    """
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, output_padding=output_padding)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x, add_input):
        """
        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_channels, D, H, W).
            add_input (torch.Tensor): Input tensor to be added after transposed convolution, of shape (batch_size, out_channels, D, H, W).
        Returns:
            torch.Tensor: Output tensor of shape (batch_size, out_channels, D, H, W) after HardSwish activation.
        """
        x = self.conv_transpose(x)
        x = x + add_input
        x = x * torch.nn.functional.hardswish(x)
        return x


batch_size = 128
in_channels = 32
out_channels = 64
D, H, W = 16, 16, 16
kernel_size = 3
stride = 2
padding = 1
output_padding = 1
bias_shape = (out_channels, 1, 1, 1, 1)


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
    # a [YBLOCK, XBLOCK] tile of the flat index yindex * 32 + xinner: the transposed access
    # walks yindex with stride 1, the contiguous ones walk xinner, so both use whole sectors
    pid = tl.program_id(0)
    yindex = (pid // 1) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    xinner = (pid % 1) * XBLOCK + tl.arange(0, XBLOCK)[None, :]
    i1 = (yindex) % 4096
    i2 = (yindex) // 4096
    tmp3 = tl.load(x_ptr + (4096*xinner + i1 + 131072*i2), eviction_policy="evict_first")
    tmp4 = _egg_round_tf32(tmp3)
    tl.store(convolution_x_tf32_ptr + (xinner + 32*yindex), tmp4.to(tl.float32))


_egg_poi0_convolution_x_tf_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi0_convolution_x_tf_launch(x):
    """pointwise: convolution_x_tf32"""
    global _egg_poi0_convolution_x_tf_launch_k0
    convolution_x_tf32 = torch.empty_strided((128, 32, 16, 16, 16), (131072, 1, 8192, 512, 32), dtype=torch.float32, device=x.device)
    if _egg_poi0_convolution_x_tf_launch_k0 is not None and _egg_poi0_convolution_x_tf_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(x, convolution_x_tf32):
        _egg_poi0_convolution_x_tf_launch_k0[1][(16384, 1, 1)](x, convolution_x_tf32, 32, 32)
    elif x.device.type == "cuda" and _egg_aligned(x, convolution_x_tf32):
        _egg_poi0_convolution_x_tf_launch_k0 = (torch.cuda.current_device(), _egg_poi0_convolution_x_tf[(16384,)](
            x, convolution_x_tf32,
            XBLOCK=32, YBLOCK=32, num_warps=4,
        ))
    else:
        _egg_poi0_convolution_x_tf[(16384,)](
            x, convolution_x_tf32,
            XBLOCK=32, YBLOCK=32, num_warps=4,
        )
    return (convolution_x_tf32,)

@triton.jit
def _egg_poi1_convolution_w_tf(p_conv_transpose_weight_ptr, convolution_w_tf32_ptr, XBLOCK: tl.constexpr, YBLOCK: tl.constexpr):
    """pointwise: convolution_w_tf32"""
    xnumel = 55296
    # a [YBLOCK, XBLOCK] tile of the flat index yindex * 32 + xinner: the transposed access
    # walks yindex with stride 1, the contiguous ones walk xinner, so both use whole sectors
    pid = tl.program_id(0)
    yindex = (pid // 1) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
    xinner = (pid % 1) * XBLOCK + tl.arange(0, XBLOCK)[None, :]
    tmp1 = tl.load(p_conv_transpose_weight_ptr + (1728*xinner + yindex))
    tmp2 = _egg_round_tf32(tmp1)
    tl.store(convolution_w_tf32_ptr + (xinner + 32*yindex), tmp2.to(tl.float32))


_egg_poi1_convolution_w_tf_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_poi1_convolution_w_tf_launch(p_conv_transpose_weight):
    """pointwise: convolution_w_tf32"""
    global _egg_poi1_convolution_w_tf_launch_k0
    convolution_w_tf32 = torch.empty_strided((32, 64, 3, 3, 3), (1, 864, 288, 96, 32), dtype=torch.float32, device=p_conv_transpose_weight.device)
    if _egg_poi1_convolution_w_tf_launch_k0 is not None and _egg_poi1_convolution_w_tf_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(p_conv_transpose_weight, convolution_w_tf32):
        _egg_poi1_convolution_w_tf_launch_k0[1][(54, 1, 1)](p_conv_transpose_weight, convolution_w_tf32, 32, 32)
    elif p_conv_transpose_weight.device.type == "cuda" and _egg_aligned(p_conv_transpose_weight, convolution_w_tf32):
        _egg_poi1_convolution_w_tf_launch_k0 = (torch.cuda.current_device(), _egg_poi1_convolution_w_tf[(54,)](
            p_conv_transpose_weight, convolution_w_tf32,
            XBLOCK=32, YBLOCK=32, num_warps=4,
        ))
    else:
        _egg_poi1_convolution_w_tf[(54,)](
            p_conv_transpose_weight, convolution_w_tf32,
            XBLOCK=32, YBLOCK=32, num_warps=4,
        )
    return (convolution_w_tf32,)

@triton.jit
def _egg_mat2_convolution_mul(add_input_ptr, convolution_w_tf32_ptr, convolution_x_tf32_ptr, p_conv_transpose_bias_ptr, mul_1_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """matmul: convolution, mul_1: aten.convolution [128x2x2 x 64 x 256] @ [256 x 8192]"""
    M = 64
    N = 8192
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
    a_i1 = ((pid_b) // 2) % 2
    a_i2 = (a_i1 + 1) % 2
    a_i6 = (pid_b) % 2
    a_i7 = (a_i6 + 1) % 2
    b_i1 = ((pid_b) // 2) % 2
    b_i2 = (b_i1 + 1) // 2
    b_i4 = (rnj) // 256
    b_i9 = (pid_b) % 2
    b_i10 = (b_i9 + 1) // 2
    b_i12 = ((rnj) // 16) % 16
    b_i19 = (rnj) % 16
    b_i25 = (b_i1 + 1) % 2
    b_i28 = (b_i9 + 1) % 2
    b_i40 = (pid_b) // 4
    acc0 = tl.zeros((BLOCK_M, BLOCK_N // 2), dtype=tl.float32)
    acc1 = tl.zeros((BLOCK_M, BLOCK_N // 2), dtype=tl.float32)
    # the operand tiles are computed from their index maps (views, prologues) at every K step
    for k0 in range(0, K, BLOCK_K):
        rka = k0 + tl.arange(0, BLOCK_K)[None, :]
        rkb = k0 + tl.arange(0, BLOCK_K)[:, None]
        a_i3 = (rka) // 128
        a_tmp4 = (a_i2 + 2*a_i3)
        a_tmp5 = (a_tmp4 < 3)
        a_i8 = ((rka) // 64) % 2
        a_tmp9 = (a_i7 + 2*a_i8)
        a_tmp10 = (a_tmp9 < 3)
        a_tmp11 = (a_tmp5 & a_tmp10)
        a_i12 = ((rka) // 32) % 2
        a_tmp13 = (2*a_i12 + 1)
        a_tmp14 = (a_tmp13 < 3)
        a_tmp15 = (a_tmp11 & a_tmp14)
        a_i16 = (rka) % 32
        a_i17 = (k0) // 128
        a_i18 = ((k0) // 32) % 2
        a_i19 = ((k0) // 64) % 2
        a_tmp20 = tl.load(convolution_w_tf32_ptr + (864*rm + 96*a_i7 + 288*a_i2 + a_i16 + 576*a_i17 + 64*a_i18 + 192*a_i19 + 32), a_tmp15, other=0.0)
        a0 = a_tmp20.to(tl.float32)
        a_tmp21 = (2*a_i12)
        a_tmp22 = (a_tmp21 < 3)
        a_tmp23 = (a_tmp11 & a_tmp22)
        a_tmp24 = tl.load(convolution_w_tf32_ptr + (864*rm + 96*a_i7 + 288*a_i2 + a_i16 + 576*a_i17 + 64*a_i18 + 192*a_i19), a_tmp23, other=0.0)
        a1 = a_tmp24.to(tl.float32)
        b_i3 = (rkb) // 128
        b_tmp5 = (b_i2 - b_i3 + b_i4)
        b_tmp6 = (b_tmp5 >= 0)
        b_tmp7 = (b_tmp5 < 16)
        b_tmp8 = (b_tmp6 & b_tmp7)
        b_i11 = ((rkb) // 64) % 2
        b_tmp13 = (b_i10 - b_i11 + b_i12)
        b_tmp14 = (b_tmp13 >= 0)
        b_tmp15 = (b_tmp8 & b_tmp14)
        b_tmp16 = (b_tmp13 < 16)
        b_tmp17 = (b_tmp15 & b_tmp16)
        b_i18 = ((rkb) // 32) % 2
        b_tmp20 = (-b_i18 + b_i19)
        b_tmp21 = (b_tmp20 >= 0)
        b_tmp22 = (b_tmp17 & b_tmp21)
        b_tmp23 = (b_tmp20 < 16)
        b_tmp24 = (b_tmp22 & b_tmp23)
        b_tmp26 = (b_i25 + 2*b_i3)
        b_tmp27 = (b_tmp26 < 3)
        b_tmp29 = (b_i28 + 2*b_i11)
        b_tmp30 = (b_tmp29 < 3)
        b_tmp31 = (b_tmp27 & b_tmp30)
        b_tmp32 = (2*b_i18 + 1)
        b_tmp33 = (b_tmp32 < 3)
        b_tmp34 = (b_tmp31 & b_tmp33)
        b_tmp35 = (b_tmp24 & b_tmp34)
        b_i36 = (rkb) % 32
        b_i37 = (k0) // 128
        b_i38 = ((k0) // 32) % 2
        b_i39 = ((k0) // 64) % 2
        b_tmp41 = tl.load(convolution_x_tf32_ptr + (32*rnj + 512*b_i10 + 8192*b_i2 + b_i36 - 8192*b_i37 - 32*b_i38 - 512*b_i39 + 131072*b_i40), b_tmp35, other=0.0)
        b0 = b_tmp41.to(tl.float32)
        b_tmp42 = (-b_i18 + b_i19 + 1)
        b_tmp43 = (b_tmp42 >= 0)
        b_tmp44 = (b_tmp17 & b_tmp43)
        b_tmp45 = (b_tmp42 < 16)
        b_tmp46 = (b_tmp44 & b_tmp45)
        b_tmp47 = (2*b_i18)
        b_tmp48 = (b_tmp47 < 3)
        b_tmp49 = (b_tmp31 & b_tmp48)
        b_tmp50 = (b_tmp46 & b_tmp49)
        b_tmp51 = tl.load(convolution_x_tf32_ptr + (32*rnj + 512*b_i10 + 8192*b_i2 + b_i36 - 8192*b_i37 - 32*b_i38 - 512*b_i39 + 131072*b_i40 + 32), b_tmp50, other=0.0)
        b1 = b_tmp51.to(tl.float32)
        acc0 = tl.dot(a0, b0, acc0, input_precision="tf32")
        acc1 = tl.dot(a1, b1, acc1, input_precision="tf32")
    # the phases' columns interleaved (each tl.join adds a last dim of 2): the tile in output order,
    # so the epilogue's stores are contiguous
    acc = tl.reshape(tl.join(acc0, acc1), (BLOCK_M, BLOCK_N))
    e_tmp1 = tl.load(p_conv_transpose_bias_ptr + (rm))
    e_tmp2 = acc + e_tmp1
    e_i3 = (rn) % 32
    e_i4 = ((rn) // 32) % 16
    e_i5 = (rn) // 512
    e_i6 = (pid_b) % 2
    e_i7 = ((pid_b) // 2) % 2
    e_i8 = (pid_b) // 4
    e_tmp9 = tl.load(add_input_ptr + (32768*rm + e_i3 + 64*e_i4 + 2048*e_i5 + 32*e_i6 + 1024*e_i7 + 2097152*e_i8))
    e_tmp10 = (e_tmp2 + e_tmp9)
    e_tmp11 = (e_tmp10 + 3.0)
    e_tmp12 = tl.maximum(e_tmp11, 0.0, propagate_nan=tl.PropagateNan.ALL)
    e_tmp13 = tl.minimum(e_tmp12, 6.0, propagate_nan=tl.PropagateNan.ALL)
    e_tmp14 = (e_tmp10 * e_tmp13)
    e_tmp15 = (e_tmp14 / 6.0)
    e_tmp16 = (e_tmp10 * e_tmp15)
    tl.store(mul_1_ptr + (32768*rm + e_i3 + 64*e_i4 + 2048*e_i5 + 32*e_i6 + 1024*e_i7 + 2097152*e_i8), e_tmp16.to(tl.float32))


_egg_mat2_convolution_mul_launch_k0 = None  # launch state: (device, compiled kernel) of this call site, set by its first GPU launch


def _egg_mat2_convolution_mul_launch(add_input, convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias):
    """matmul: convolution, mul_1: aten.convolution [128x2x2 x 64 x 256] @ [256 x 8192]"""
    global _egg_mat2_convolution_mul_launch_k0
    mul_1 = torch.empty_strided((128, 64, 32, 32, 32), (2097152, 32768, 1024, 32, 1), dtype=torch.float32, device=add_input.device)
    if _egg_mat2_convolution_mul_launch_k0 is not None and _egg_mat2_convolution_mul_launch_k0[0] == torch.cuda.current_device() and _egg_aligned(add_input, convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias, mul_1):
        _egg_mat2_convolution_mul_launch_k0[1][(32768, 1, 1)](add_input, convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias, mul_1, 64, 128, 32, 8)
    elif add_input.device.type == "cuda" and _egg_aligned(add_input, convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias, mul_1):
        _egg_mat2_convolution_mul_launch_k0 = (torch.cuda.current_device(), _egg_mat2_convolution_mul[(32768,)](
            add_input, convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias, mul_1,
            BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=2,
        ))
    else:
        _egg_mat2_convolution_mul[(32768,)](
            add_input, convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias, mul_1,
            BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=2,
        )
    return (mul_1,)


# ---- the candidate ----


class ModelNew(Model):
    """convolutions as Triton implicit GEMMs (the input gathered in the tile loads), their bias and the ops after them in the epilogue, TF32 as cuDNN under PyTorch's default: 3 Triton kernel launch(es) per call"""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape)
        self._egg_bind()

    def _egg_bind(self):
        """The modules owning the parameters and buffers forward reads (bound once)."""
        self._egg_owners = (self.get_submodule('conv_transpose'),)

    def forward(self, *inputs):
        return _egg_forward_default(self, inputs)


def _egg_forward_default(self, inputs):
    """ModelNew.forward for the inputs ((128, 32, 16, 16, 16), torch.float32, (128, 64, 32, 32, 32), torch.float32, )."""
    owners = self._egg_owners
    p_conv_transpose_weight = owners[0].weight
    p_conv_transpose_bias = owners[0].bias
    x = inputs[0]
    add_input = inputs[1]
    if (x.shape != (128, 32, 16, 16, 16) or x.dtype != torch.float32) or (add_input.shape != (128, 64, 32, 32, 32) or add_input.dtype != torch.float32):
        raise ValueError("this candidate is specialised to the input shapes, dtypes and scalars of its shape sets: got " + str((x.shape, x.dtype)) + str((add_input.shape, add_input.dtype)))
    if x.stride() != (131072, 4096, 256, 16, 1):
        x = torch.empty_strided((128, 32, 16, 16, 16), (131072, 4096, 256, 16, 1), dtype=x.dtype, device=x.device).copy_(x)
    if add_input.stride() != (2097152, 32768, 1024, 32, 1):
        add_input = torch.empty_strided((128, 64, 32, 32, 32), (2097152, 32768, 1024, 32, 1), dtype=add_input.dtype, device=add_input.device).copy_(add_input)
    _dev = x.device
    convolution_x_tf32, = _egg_poi0_convolution_x_tf_launch(x)
    convolution_w_tf32, = _egg_poi1_convolution_w_tf_launch(p_conv_transpose_weight)
    mul_1, = _egg_mat2_convolution_mul_launch(add_input, convolution_w_tf32, convolution_x_tf32, p_conv_transpose_bias)
    return mul_1
