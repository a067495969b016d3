"""``torch.logsumexp`` over the last dimension of a matrix.

Each program reduces one row, ``BLOCK_SIZE`` columns at a time: a first loop
finds the row's maximum, a second sums ``exp(x - max)``, both in fp32.
Columns past the row's end load as ``-inf`` and add ``exp(-inf) = 0``.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(
    input, output, BLOCK_SIZE=ninetoothed.block_size(lower_bound=64, upper_bound=256)
):
    input_arranged = input.tile((1, BLOCK_SIZE))
    input_arranged = input_arranged.tile((1, -1))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    output_arranged = output.tile((1, 1))

    return input_arranged, output_arranged


def application(input, output):
    maximum = ntl.full(input.dtype.shape, float("-inf"), ntl.float32)

    for i in range(input.shape[0]):
        maximum = ntl.maximum(maximum, ntl.cast(input[i], ntl.float32))

    row_maximum = ntl.max(maximum)
    total = ntl.zeros(input.dtype.shape, dtype=ntl.float32)

    for i in range(input.shape[0]):
        total += ntl.exp(ntl.cast(input[i], ntl.float32) - row_maximum)

    output = row_maximum + ntl.log(ntl.sum(total))  # noqa: F841


tensors = (Tensor(2, other=float("-inf")), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="logsumexp"
)


CASES = ({"rows": 5, "columns": 781}, {"rows": 3, "columns": 1500})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"rows": 16384, "columns": 4096},)


def inputs(device, dtype=torch.float16, rows=5, columns=781):
    generator = torch.Generator().manual_seed(0)

    return ((torch.randn((rows, columns), generator=generator) * 3).to(device, dtype),)


def launch(kernel, input):
    output = torch.empty((input.shape[0], 1), device=input.device, dtype=input.dtype)
    kernel(input, output)

    return output.view(-1)


def reference(input):
    return torch.logsumexp(input.float(), dim=-1).to(input.dtype)
