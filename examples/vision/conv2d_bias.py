"""2-D convolution with a 1-D bias, the way an operator library writes it (ntops' conv2d after it took ``bias`` as it comes).

An implicit GEMM as in ``conv2d``, but the bias is the ``(K,)`` tensor the
caller passed: each program's bias tile is its ``BLOCK_SIZE_N`` slice of ``K``,
unsqueezed and expanded to the ``(BLOCK_SIZE_M, BLOCK_SIZE_N)`` output tile.
NineToothed gives the expanded dimension no offsets in the pointer block
(``[1, BLOCK_SIZE_N]``) but a term in the mask (``[BLOCK_SIZE_M,
BLOCK_SIZE_N]``): Triton 3.9 broadcasts the two together, Triton 3.2
(triton-ascend) only the mask to the pointer's shape, which fails
(``BroadcastLoadMask``).
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend

#: Convolution stride (height, width); part of the arrangement.
STRIDE = (1, 2)


def arrangement(
    input,
    weight,
    bias,
    output,
    BLOCK_SIZE_M=ninetoothed.block_size(lower_bound=32, upper_bound=32),
    BLOCK_SIZE_N=ninetoothed.block_size(lower_bound=32, upper_bound=64),
    BLOCK_SIZE_K=ninetoothed.block_size(lower_bound=32, upper_bound=32),
):
    windows = input.tile(
        (1, *weight.shape[1:]), strides=(-1, -1, *STRIDE), floor_mode=True
    )
    windows = windows.squeeze(1)
    windows.dtype = windows.dtype.squeeze(0)
    windows = windows.ravel()
    windows = windows.flatten(end_dim=3).flatten(start_dim=1)

    weight_matrix = weight.flatten(start_dim=1).permute((1, 0))
    output_matrix = output.permute((0, 2, 3, 1)).flatten(end_dim=3)

    output_arranged = output_matrix.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    input_arranged = windows.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    weight_arranged = weight_matrix.tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1))
    weight_arranged = weight_arranged.expand((output_arranged.shape[0], -1))
    weight_arranged.dtype = weight_arranged.dtype.squeeze(1)

    # Each program's bias tile is its (BLOCK_SIZE_N,) slice of the bias,
    # expanded to the output tile's shape.
    bias_arranged = bias.tile((BLOCK_SIZE_N,))
    bias_arranged.dtype = bias_arranged.dtype.unsqueeze(0).expand((BLOCK_SIZE_M, -1))
    bias_arranged = bias_arranged.unsqueeze(0).expand((output_arranged.shape[0], -1))

    return input_arranged, weight_arranged, bias_arranged, output_arranged


def application(input, weight, bias, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], weight[k])

    output = accumulator + bias  # noqa: F841


tensors = (Tensor(4, other=0), Tensor(4, other=0), Tensor(1, other=0), Tensor(4))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="conv2d_bias"
)


CASES = (
    {"batch": 2, "channels": 3, "height": 9, "width": 11, "filters": 20, "kernel": 3},
    {"batch": 1, "channels": 8, "height": 7, "width": 10, "filters": 40, "kernel": 2},
)

#: ``tl.dot`` multiplies fp32 inputs in tf32 on NVIDIA GPUs (10-bit mantissa).
TOLERANCES = {torch.float32: (5e-2, 1e-2)}


def inputs(
    device,
    dtype=torch.float16,
    batch=2,
    channels=3,
    height=9,
    width=11,
    filters=20,
    kernel=3,
):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((batch, channels, height, width), generator=generator).to(
            device, dtype
        ),
        torch.randn((filters, channels, kernel, kernel), generator=generator).to(
            device, dtype
        ),
        torch.randn((filters,), generator=generator).to(device, dtype),
    )


def launch(kernel, input, weight, bias):
    batch, _, height, width = input.shape
    filters, _, kernel_height, kernel_width = weight.shape
    output = torch.empty(
        (
            batch,
            filters,
            (height - kernel_height) // STRIDE[0] + 1,
            (width - kernel_width) // STRIDE[1] + 1,
        ),
        device=input.device,
        dtype=input.dtype,
    )
    kernel(input, weight, bias, output)

    return output


def reference(input, weight, bias):
    return torch.nn.functional.conv2d(
        input.float(), weight.float(), bias.float(), stride=STRIDE
    ).to(input.dtype)
