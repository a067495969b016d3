"""Matrix multiplication whose ``dot`` precision the kernel chooses from a constexpr flag, as operator libraries write it.

``INPUT_PRECISION`` is a constexpr parameter (0: tf32 where the operands
are fp32, 1: ieee); the kernel binds the mode to a constexpr variable in
one branch of an ``if`` each and passes the variable to ``dot``. Its NPU
variant must turn the tf32 branch into hf32 (``UseHf32InDot``).
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend

TF32, IEEE = 0, 1


def arrangement(
    input,
    other,
    output,
    input_precision,
    BLOCK_SIZE_M=ninetoothed.block_size(lower_bound=32, upper_bound=64),
    BLOCK_SIZE_N=ninetoothed.block_size(lower_bound=32, upper_bound=64),
    BLOCK_SIZE_K=ninetoothed.block_size(lower_bound=32, upper_bound=32),
):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged = input_arranged.tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    other_arranged = other_arranged.tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)

    return input_arranged, other_arranged, output_arranged, input_precision


def application(input, other, output, input_precision):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    if input_precision == 0:
        input_precision_: ntl.constexpr = "tf32"
    else:
        input_precision_: ntl.constexpr = "ieee"

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k], input_precision=input_precision_)

    output = accumulator  # noqa: F841


tensors = (Tensor(2, other=0), Tensor(2, other=0), Tensor(2), Tensor(0, constexpr=True))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="matmul_precision"
)

#: tf32 on NVIDIA GPUs keeps a 10-bit mantissa.
TOLERANCES = {torch.float32: (5e-2, 1e-2)}

CASES = (
    {"m": 40, "n": 36, "k": 40, "precision": TF32},
    {"m": 33, "n": 40, "k": 32, "precision": IEEE},
)


def inputs(device, dtype=torch.float16, m=40, n=36, k=40, precision=TF32):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((m, k), generator=generator).to(device, dtype),
        torch.randn((k, n), generator=generator).to(device, dtype),
        precision,
    )


def launch(kernel, input, other, precision):
    output = torch.empty(
        (input.shape[0], other.shape[1]), dtype=input.dtype, device=input.device
    )
    kernel(input, other, output, precision)

    return output


def reference(input, other, precision):
    return (input.float() @ other.float()).to(input.dtype)
