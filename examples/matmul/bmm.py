"""Batched matrix multiplication: ``output[i] = input[i] @ other[i]``, as ``torch.bmm``."""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(
    input,
    other,
    output,
    BLOCK_SIZE_M=ninetoothed.block_size(lower_bound=32, upper_bound=128),
    BLOCK_SIZE_N=ninetoothed.block_size(lower_bound=32, upper_bound=128),
    BLOCK_SIZE_K=ninetoothed.block_size(lower_bound=32, upper_bound=64),
):
    output_arranged = output.tile((1, BLOCK_SIZE_M, BLOCK_SIZE_N))
    output_arranged.dtype = output_arranged.dtype.squeeze(0)

    input_arranged = input.tile((1, BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged = input_arranged.tile((1, 1, -1))
    input_arranged = input_arranged.expand((-1, -1, output_arranged.shape[2]))
    input_arranged.dtype = input_arranged.dtype.squeeze((0, 1))
    input_arranged.dtype.dtype = input_arranged.dtype.dtype.squeeze(0)

    other_arranged = other.tile((1, BLOCK_SIZE_K, BLOCK_SIZE_N))
    other_arranged = other_arranged.tile((1, -1, 1))
    other_arranged = other_arranged.expand((-1, output_arranged.shape[1], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze((0, 2))
    other_arranged.dtype.dtype = other_arranged.dtype.dtype.squeeze(0)

    return input_arranged, other_arranged, output_arranged


def application(input, other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])

    output = accumulator  # noqa: F841


tensors = (Tensor(3, other=0), Tensor(3, other=0), Tensor(3))

kernel = ninetoothed_ascend.make(arrangement, application, tensors, kernel_name="bmm")


CASES = (
    {"batch": 3, "m": 70, "n": 65, "k": 50},
    {"batch": 2, "m": 33, "n": 128, "k": 97},
)

#: ``tl.dot`` multiplies fp32 inputs in tf32 on NVIDIA GPUs (10-bit mantissa).
TOLERANCES = {torch.float32: (5e-2, 1e-2)}


#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"batch": 16, "m": 1024, "n": 1024, "k": 1024},)


def inputs(device, dtype=torch.float16, batch=3, m=70, n=65, k=50):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((batch, m, k), generator=generator).to(device, dtype),
        torch.randn((batch, k, n), generator=generator).to(device, dtype),
    )


def launch(kernel, input, other):
    output = torch.empty(
        (input.shape[0], input.shape[1], other.shape[2]),
        device=input.device,
        dtype=input.dtype,
    )
    kernel(input, other, output)

    return output


def reference(input, other):
    return torch.bmm(input.float(), other.float()).to(input.dtype)
