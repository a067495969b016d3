"""Residual add fused with RMS normalization, as LLM decoder layers use it.

``residual_output = input + residual`` and
``output = residual_output / sqrt(mean(residual_output**2) + eps) * weight``,
one row per program. Both results are outputs: the sum is the next layer's
residual stream.
"""

import ninetoothed.language as ntl
import torch
import triton
from ninetoothed import Symbol, Tensor

import ninetoothed_ascend

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


def arrangement(
    input,
    residual,
    weight,
    eps,
    num_normalized_elements,
    residual_output,
    output,
    BLOCK_SIZE=BLOCK_SIZE,
):
    input_arranged = input.tile((1, BLOCK_SIZE))
    residual_arranged = residual.tile((1, BLOCK_SIZE))
    weight_arranged = weight.tile((1, BLOCK_SIZE)).expand((input_arranged.shape[0], -1))
    residual_output_arranged = residual_output.tile((1, BLOCK_SIZE))
    output_arranged = output.tile((1, BLOCK_SIZE))

    return (
        input_arranged,
        residual_arranged,
        weight_arranged,
        eps,
        num_normalized_elements,
        residual_output_arranged,
        output_arranged,
    )


def application(
    input, residual, weight, eps, num_normalized_elements, residual_output, output
):
    sum_fp32 = ntl.cast(input, ntl.float32) + ntl.cast(residual, ntl.float32)
    residual_output = sum_fp32  # noqa: F841
    mean_square = ntl.sum(sum_fp32 * sum_fp32) / num_normalized_elements
    output = sum_fp32 * ntl.rsqrt(mean_square + eps) * weight  # noqa: F841


tensors = (
    Tensor(2, other=0),
    Tensor(2, other=0),
    Tensor(2, other=0),
    Tensor(0),
    Tensor(0),
    Tensor(2),
    Tensor(2),
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="add_rms_norm"
)


CASES = ({"rows": 13, "columns": 1000}, {"rows": 5, "columns": 4096 + 17})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"rows": 16384, "columns": 4096},)


def inputs(device, dtype=torch.float16, rows=13, columns=1000):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((rows, columns), generator=generator).to(device, dtype),
        torch.randn((rows, columns), generator=generator).to(device, dtype),
        torch.rand((columns,), generator=generator).to(device, dtype),
    )


def launch(kernel, input, residual, weight, eps=1e-6):
    residual_output = torch.empty_like(input)
    output = torch.empty_like(input)
    num_normalized_elements = input.shape[-1]
    kernel(
        input,
        residual,
        weight.view(1, -1),
        eps,
        num_normalized_elements,
        residual_output,
        output,
        BLOCK_SIZE=triton.next_power_of_2(num_normalized_elements),
    )

    return residual_output, output


def reference(input, residual, weight, eps=1e-6):
    sum_fp32 = input.float() + residual.float()
    output = torch.nn.functional.rms_norm(
        sum_fp32, (input.shape[-1],), weight.float(), eps
    )

    return sum_fp32.to(input.dtype), output.to(input.dtype)
