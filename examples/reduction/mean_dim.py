"""Mean along the first dimension of a matrix (column means): ``torch.mean(input, dim=0)``.

Each program owns ``BLOCK_SIZE_N`` columns and sums the rows ``BLOCK_SIZE_M``
at a time in fp32; rows past the end load as 0.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(
    input,
    num_reduced_elements,
    output,
    BLOCK_SIZE_M=ninetoothed.block_size(lower_bound=16, upper_bound=64),
    BLOCK_SIZE_N=ninetoothed.block_size(lower_bound=16, upper_bound=64),
):
    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
    input_arranged = input_arranged.tile((-1, 1))
    input_arranged.dtype = input_arranged.dtype.squeeze(1)

    output_arranged = output.tile((1, BLOCK_SIZE_N))
    output_arranged.dtype = output_arranged.dtype.squeeze(0)

    return input_arranged, num_reduced_elements, output_arranged


def application(input, num_reduced_elements, output):
    total = ntl.zeros(input.dtype.shape, dtype=ntl.float32)

    for i in range(input.shape[0]):
        total += ntl.cast(input[i], ntl.float32)

    output = ntl.sum(total, axis=0) / num_reduced_elements  # noqa: F841


tensors = (Tensor(2, other=0), Tensor(0), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="mean_dim"
)


CASES = ({"rows": 100, "columns": 70}, {"rows": 257, "columns": 33})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"rows": 16384, "columns": 4096},)


def inputs(device, dtype=torch.float16, rows=100, columns=70):
    generator = torch.Generator().manual_seed(0)

    return (torch.randn((rows, columns), generator=generator).to(device, dtype),)


def launch(kernel, input):
    output = torch.empty((1, input.shape[1]), device=input.device, dtype=input.dtype)
    kernel(input, input.shape[0], output)

    return output.view(-1)


def reference(input):
    return torch.mean(input.float(), dim=0).to(input.dtype)
