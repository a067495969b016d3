"""Softmax over the last dimension of a matrix, one row per program (``ninetoothed.jit`` form)."""

import ninetoothed.language as ntl
import torch
import triton
from ninetoothed import Symbol, Tensor

import ninetoothed_ascend

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


def softmax(
    input: Tensor(2, other=float("-inf")).tile((1, BLOCK_SIZE)),
    output: Tensor(2).tile((1, BLOCK_SIZE)),
):
    row_minus_max = input - ntl.max(input)
    numerator = ntl.exp(row_minus_max)
    denominator = ntl.sum(numerator)
    output = numerator / denominator  # noqa: F841


kernel = ninetoothed_ascend.jit(softmax)


#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"rows": 16384, "columns": 4096},)


def inputs(device, dtype=torch.float16, rows=37, columns=781):
    generator = torch.Generator().manual_seed(0)

    return (torch.randn((rows, columns), generator=generator).to(device, dtype),)


def launch(kernel, input):
    output = torch.empty_like(input)
    kernel(input, output, BLOCK_SIZE=triton.next_power_of_2(input.shape[-1]))

    return output


def reference(input):
    return torch.softmax(input.float(), dim=-1).to(input.dtype)
