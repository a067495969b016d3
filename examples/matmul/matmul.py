"""Matrix multiplication with fp32 accumulation: ``output = input @ other``."""

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
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged = input_arranged.tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    other_arranged = other.tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    other_arranged = other_arranged.tile((-1, 1))
    other_arranged = other_arranged.expand((output_arranged.shape[0], -1))
    other_arranged.dtype = other_arranged.dtype.squeeze(1)

    return input_arranged, other_arranged, output_arranged


def application(input, other, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], other[k])

    output = accumulator  # noqa: F841


tensors = (Tensor(2, other=0), Tensor(2, other=0), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="matmul"
)


#: ``tl.dot`` multiplies fp32 inputs in tf32 on NVIDIA GPUs (10-bit mantissa).
TOLERANCES = {torch.float32: (5e-2, 1e-2)}


#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"m": 4096, "n": 4096, "k": 4096},)


def inputs(device, dtype=torch.float16, m=100, n=90, k=70):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((m, k), generator=generator).to(device, dtype),
        torch.randn((k, n), generator=generator).to(device, dtype),
    )


def launch(kernel, input, other):
    output = torch.empty(
        (input.shape[0], other.shape[1]), device=input.device, dtype=input.dtype
    )
    kernel(input, other, output)

    return output


def reference(input, other):
    return (input.float() @ other.float()).to(input.dtype)
