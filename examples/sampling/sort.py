"""Ascending sort of each row of a matrix: ``torch.sort(input, dim=-1).values``.

One program sorts one row in one tile with ``ntl.sort`` (Triton's bitonic
``tl.sort``, as ntops's quantile kernel uses it). The tile is padded to a
power of two with ``+inf``, which sorts after every value of the row.
"""

import ninetoothed.language as ntl
import torch
import triton
from ninetoothed import Symbol, Tensor

import ninetoothed_ascend

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


def arrangement(input, output, BLOCK_SIZE=BLOCK_SIZE):
    return input.tile((1, BLOCK_SIZE)), output.tile((1, BLOCK_SIZE))


def application(input, output):
    output = ntl.sort(input, 1)  # noqa: F841


tensors = (Tensor(2, other=float("inf")), Tensor(2))

kernel = ninetoothed_ascend.make(arrangement, application, tensors, kernel_name="sort")


CASES = ({"rows": 7, "columns": 200}, {"rows": 33, "columns": 64})


def inputs(device, dtype=torch.float16, rows=7, columns=200):
    generator = torch.Generator().manual_seed(0)

    return (torch.randn((rows, columns), generator=generator).to(device, dtype),)


def launch(kernel, input):
    output = torch.empty_like(input)
    kernel(input, output, BLOCK_SIZE=triton.next_power_of_2(input.shape[-1]))

    return output


def reference(input):
    return torch.sort(input, dim=-1).values
