"""General matrix multiplication (BLAS ``gemm``): ``output = alpha * a @ b + beta * c``.

``alpha`` and ``beta`` are scalars (``Tensor(0)``); the product is accumulated
in fp32 and scaled before ``c`` is added.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(
    a,
    b,
    c,
    alpha,
    beta,
    output,
    BLOCK_SIZE_M=ninetoothed.block_size(lower_bound=32, upper_bound=128),
    BLOCK_SIZE_N=ninetoothed.block_size(lower_bound=32, upper_bound=128),
    BLOCK_SIZE_K=ninetoothed.block_size(lower_bound=32, upper_bound=64),
):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
    c_arranged = c.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    a_arranged = a.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    a_arranged = a_arranged.tile((1, -1))
    a_arranged = a_arranged.expand((-1, output_arranged.shape[1]))
    a_arranged.dtype = a_arranged.dtype.squeeze(0)

    b_arranged = b.tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    b_arranged = b_arranged.tile((-1, 1))
    b_arranged = b_arranged.expand((output_arranged.shape[0], -1))
    b_arranged.dtype = b_arranged.dtype.squeeze(1)

    return a_arranged, b_arranged, c_arranged, alpha, beta, output_arranged


def application(a, b, c, alpha, beta, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(a.shape[0]):
        accumulator += ntl.dot(a[k], b[k])

    output = alpha * accumulator + beta * c  # noqa: F841


tensors = (
    Tensor(2, other=0),
    Tensor(2, other=0),
    Tensor(2),
    Tensor(0),
    Tensor(0),
    Tensor(2),
)

kernel = ninetoothed_ascend.make(arrangement, application, tensors, kernel_name="gemm")


CASES = ({"m": 100, "n": 90, "k": 70}, {"m": 64, "n": 33, "k": 130})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"m": 4096, "n": 4096, "k": 4096},)

#: ``tl.dot`` multiplies fp32 inputs in tf32 on NVIDIA GPUs (10-bit mantissa).
TOLERANCES = {torch.float32: (5e-2, 1e-2)}


def inputs(device, dtype=torch.float16, m=100, n=90, k=70):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((m, k), generator=generator).to(device, dtype),
        torch.randn((k, n), generator=generator).to(device, dtype),
        torch.randn((m, n), generator=generator).to(device, dtype),
    )


def launch(kernel, a, b, c, alpha=0.5, beta=-1.5):
    output = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=a.dtype)
    kernel(a, b, c, alpha, beta, output)

    return output


def reference(a, b, c, alpha=0.5, beta=-1.5):
    return (alpha * (a.float() @ b.float()) + beta * c.float()).to(a.dtype)
