"""Maximum along the middle dimension of a 3-D tensor: ``torch.max(input, dim=1).values``.

Each program owns one batch index and ``BLOCK_SIZE_F`` features, and walks
the reduced dimension (strided in memory) ``BLOCK_SIZE_N`` rows at a time,
keeping a running maximum in fp32. Rows past the end load as ``-inf``.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(
    input,
    output,
    BLOCK_SIZE_N=ninetoothed.block_size(lower_bound=16, upper_bound=64),
    BLOCK_SIZE_F=ninetoothed.block_size(lower_bound=16, upper_bound=64),
):
    input_arranged = input.tile((1, BLOCK_SIZE_N, BLOCK_SIZE_F))
    input_arranged = input_arranged.tile((1, -1, 1))
    input_arranged.dtype = input_arranged.dtype.squeeze((0, 2))
    input_arranged.dtype.dtype = input_arranged.dtype.dtype.squeeze(0)

    output_arranged = output.tile((1, 1, BLOCK_SIZE_F))
    output_arranged.dtype = output_arranged.dtype.squeeze((0, 1))

    return input_arranged, output_arranged


def application(input, output):
    maximum = ntl.full(input.dtype.shape, float("-inf"), ntl.float32)

    for i in range(input.shape[0]):
        maximum = ntl.maximum(maximum, ntl.cast(input[i], ntl.float32))

    output = ntl.max(maximum, axis=0)  # noqa: F841


tensors = (Tensor(3, other=float("-inf")), Tensor(3))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="max_dim"
)


CASES = (
    {"batch": 3, "reduced": 100, "features": 70},
    {"batch": 2, "reduced": 9, "features": 129},
)

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"batch": 64, "reduced": 1024, "features": 1024},)


def inputs(device, dtype=torch.float16, batch=3, reduced=100, features=70):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((batch, reduced, features), generator=generator).to(device, dtype),
    )


def launch(kernel, input):
    output = torch.empty(
        (input.shape[0], 1, input.shape[2]), device=input.device, dtype=input.dtype
    )
    kernel(input, output)

    return output.view(input.shape[0], input.shape[2])


def reference(input):
    return torch.max(input, dim=1).values
