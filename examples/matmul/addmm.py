"""``torch.addmm``: ``output = beta * input + alpha * (mat1 @ mat2)``.

``beta`` and ``alpha`` are scalars (``Tensor(0)``). ``input`` has the output's
shape here; torch would broadcast it.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(
    input,
    mat1,
    mat2,
    beta,
    alpha,
    output,
    BLOCK_SIZE_M=ninetoothed.block_size(lower_bound=32, upper_bound=128),
    BLOCK_SIZE_N=ninetoothed.block_size(lower_bound=32, upper_bound=128),
    BLOCK_SIZE_K=ninetoothed.block_size(lower_bound=32, upper_bound=64),
):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    mat1_arranged = mat1.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    mat1_arranged = mat1_arranged.tile((1, -1))
    mat1_arranged = mat1_arranged.expand((-1, output_arranged.shape[1]))
    mat1_arranged.dtype = mat1_arranged.dtype.squeeze(0)

    mat2_arranged = mat2.tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    mat2_arranged = mat2_arranged.tile((-1, 1))
    mat2_arranged = mat2_arranged.expand((output_arranged.shape[0], -1))
    mat2_arranged.dtype = mat2_arranged.dtype.squeeze(1)

    return input_arranged, mat1_arranged, mat2_arranged, beta, alpha, output_arranged


def application(input, mat1, mat2, beta, alpha, output):
    product = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(mat1.shape[0]):
        product += ntl.dot(mat1[k], mat2[k])

    output = beta * input + alpha * product  # noqa: F841


tensors = (
    Tensor(2),
    Tensor(2, other=0),
    Tensor(2, other=0),
    Tensor(0),
    Tensor(0),
    Tensor(2),
)

kernel = ninetoothed_ascend.make(arrangement, application, tensors, kernel_name="addmm")


CASES = ({"m": 90, "n": 100, "k": 70}, {"m": 128, "n": 47, "k": 64})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"m": 4096, "n": 4096, "k": 4096},)

#: ``tl.dot`` multiplies fp32 inputs in tf32 on NVIDIA GPUs (10-bit mantissa).
TOLERANCES = {torch.float32: (5e-2, 1e-2)}


def inputs(device, dtype=torch.float16, m=90, n=100, k=70):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((m, n), generator=generator).to(device, dtype),
        torch.randn((m, k), generator=generator).to(device, dtype),
        torch.randn((k, n), generator=generator).to(device, dtype),
    )


def launch(kernel, input, mat1, mat2, beta=0.75, alpha=1.25):
    output = torch.empty(
        (mat1.shape[0], mat2.shape[1]), device=mat1.device, dtype=mat1.dtype
    )
    kernel(input, mat1, mat2, beta, alpha, output)

    return output


def reference(input, mat1, mat2, beta=0.75, alpha=1.25):
    return torch.addmm(
        input.float(), mat1.float(), mat2.float(), beta=beta, alpha=alpha
    ).to(input.dtype)
