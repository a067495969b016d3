"""``torch.sum(input, dim)`` for a tensor of any shape and strides and any ``dim``, in fp32.

``launch`` moves ``dim`` last (a view) and the arrangement flattens every
other dimension into rows: a program sums ``ROWS`` rows of the whole
reduced dimension (``BLOCK_SIZE_N``, its next power of two). The rows'
address is the flattened gather of ``flat_sigmoid``; whether the launch finds
it collapsible depends on ``dim`` and the layout (reducing the last dim of a
contiguous tensor: yes; the first: no).
"""

import ninetoothed.language as ntl
import torch
import triton
from ninetoothed import Symbol, Tensor

import ninetoothed_ascend
from ninetoothed_ascend.examples import as_ndim, laid_out

NDIM = 4

BLOCK_SIZE_M = Symbol("BLOCK_SIZE_M", constexpr=True)
BLOCK_SIZE_N = Symbol("BLOCK_SIZE_N", constexpr=True)

#: Rows per program.
ROWS = 16


def arrangement(
    input,
    output,
    BLOCK_SIZE_M=BLOCK_SIZE_M,
    BLOCK_SIZE_N=BLOCK_SIZE_N,
):
    rows = input.flatten(end_dim=input.ndim - 1)
    rows = rows.tile((BLOCK_SIZE_M, BLOCK_SIZE_N)).squeeze(1)

    return rows, output.flatten().tile((BLOCK_SIZE_M,))


def application(input, output):
    output = ntl.sum(ntl.cast(input, ntl.float32), 1)  # noqa: F841


tensors = (Tensor(NDIM, other=0), Tensor(NDIM - 1))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="flat_sum_dim"
)

CASES = (
    {"shape": (3, 5, 7), "dim": 2},
    {"shape": (3, 5, 7), "dim": 0},
    {"shape": (11,), "dim": 0},
    {"shape": (2, 3, 4, 5), "dim": 1, "layout": "transposed"},
    {"shape": (6, 9), "dim": -1, "layout": "sliced"},
    {"shape": (512, 64), "dim": 0},
)


def inputs(device, dtype=torch.float16, shape=(3, 5, 7), dim=2, layout="contiguous"):
    generator = torch.Generator().manual_seed(0)
    values = torch.randn(shape, generator=generator).to(device, dtype)

    return laid_out(values, layout), dim


def launch(kernel, input, dim):
    moved = input.movedim(dim, -1)
    output = torch.empty(moved.shape[:-1], dtype=input.dtype, device=input.device)
    kernel(
        as_ndim(moved, NDIM),
        as_ndim(output, NDIM - 1),
        BLOCK_SIZE_M=ROWS,
        BLOCK_SIZE_N=triton.next_power_of_2(moved.shape[-1]),
    )

    return output


def reference(input, dim):
    return input.float().sum(dim).to(input.dtype)
