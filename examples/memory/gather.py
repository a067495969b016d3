"""``torch.gather(input, dim, index)`` of a matrix: ``output[i][j] = input[i][index[i][j]]`` for ``dim=1``.

One program gathers one row (``ntl.gather`` within the row's tile, as
ntops's quantile kernel uses it). ``dim=0`` is the same kernel on the
transposed views, which NineToothed addresses through their strides.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
import triton
from ninetoothed import Symbol, Tensor

import ninetoothed_ascend

BLOCK_SIZE_INPUT = Symbol("BLOCK_SIZE_INPUT", constexpr=True)
BLOCK_SIZE_INDEX = Symbol("BLOCK_SIZE_INDEX", constexpr=True)


def arrangement(
    input,
    index,
    output,
    BLOCK_SIZE_INPUT=BLOCK_SIZE_INPUT,
    BLOCK_SIZE_INDEX=BLOCK_SIZE_INDEX,
):
    return (
        input.tile((1, BLOCK_SIZE_INPUT)),
        index.tile((1, BLOCK_SIZE_INDEX)),
        output.tile((1, BLOCK_SIZE_INDEX)),
    )


def application(input, index, output):
    output = ntl.gather(input, index, 1)  # noqa: F841


tensors = (Tensor(2, other=0), Tensor(2, dtype=ninetoothed.int64, other=0), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="gather"
)


CASES = (
    {"rows": 13, "columns": 100, "gathered": 37, "dim": 1},
    {"rows": 64, "columns": 9, "gathered": 20, "dim": 0},
)


def inputs(device, dtype=torch.float16, rows=13, columns=100, gathered=37, dim=1):
    generator = torch.Generator().manual_seed(0)
    input = torch.randn((rows, columns), generator=generator)
    index_shape = (rows, gathered) if dim == 1 else (gathered, columns)
    index = torch.randint(0, input.shape[dim], index_shape, generator=generator)

    return input.to(device, dtype), index.to(device), dim


def launch(kernel, input, index, dim):
    output = torch.empty(index.shape, dtype=input.dtype, device=input.device)

    if dim == 0:
        input, index, output_view = input.t(), index.t(), output.t()
    else:
        output_view = output

    kernel(
        input,
        index,
        output_view,
        BLOCK_SIZE_INPUT=triton.next_power_of_2(input.shape[1]),
        BLOCK_SIZE_INDEX=triton.next_power_of_2(index.shape[1]),
    )

    return output


def reference(input, index, dim):
    return torch.gather(input, dim, index)
