"""Softmax over each row of a jagged tensor (rows of different lengths), with NineToothed's jagged tensors.

NineToothed 0.26 supports jagged tensors: ``Tensor(ndim, jagged_dim=d)``
takes a ``torch.nested`` tensor of ``layout=torch.jagged``, whose storage is
its ``values()`` (every row, end to end) and ``offsets()`` (where each row
starts, and one past the last row's end). The launcher passes both, plus the
longest row's length; the kernel loads its row's start and end from
``offsets`` and masks the tile to the row's own length. Here ``input`` and
``output`` are ``[rows, j]`` with ``j`` jagged; each program takes one row
whole, in a block of ``BLOCK_SIZE`` (the longest row rounded up to a power
of two).
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
    row_minus_max = input - ntl.max(input)
    numerator = ntl.exp(row_minus_max)
    output = numerator / ntl.sum(numerator)  # noqa: F841


tensors = (
    Tensor(2, jagged_dim=1, other=float("-inf")),
    Tensor(2, jagged_dim=1),
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="jagged_softmax"
)

CASES = ({}, {"lengths": (1, 64, 7)})


def inputs(device, dtype=torch.float16, lengths=(5, 33, 17, 48)):
    """``(input,)``: a jagged ``[len(lengths), j]`` nested tensor with rows of ``lengths``."""

    generator = torch.Generator().manual_seed(0)
    rows = [
        torch.randn((length,), generator=generator).to(device, dtype)
        for length in lengths
    ]

    return (torch.nested.nested_tensor(rows, layout=torch.jagged),)


def launch(kernel, input):
    output = torch.nested.nested_tensor_from_jagged(
        torch.empty_like(input.values()), input.offsets()
    )
    longest = input.offsets().diff().max().item()
    kernel(input, output, BLOCK_SIZE=triton.next_power_of_2(longest))

    # The comparison wants dense tensors: concatenated rows.
    return output.values()


def reference(input):
    return torch.cat(
        [torch.softmax(row.float(), dim=-1).to(row.dtype) for row in input.unbind()]
    )
