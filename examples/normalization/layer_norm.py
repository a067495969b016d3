"""Layer normalization of each row, with weight and bias, as ``torch.nn.functional.layer_norm``.

``output = (input - mean) / sqrt(var + eps) * weight + bias``, statistics in
fp32, one row per program. Lanes past the row's end are loaded as 0 and left
out of the variance by comparing their offsets with the row length.
"""

import ninetoothed.language as ntl
import torch
import triton
from ninetoothed import Symbol, Tensor

import ninetoothed_ascend

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


def arrangement(
    input, weight, bias, eps, num_normalized_elements, output, BLOCK_SIZE=BLOCK_SIZE
):
    input_arranged = input.tile((1, BLOCK_SIZE))
    weight_arranged = weight.tile((1, BLOCK_SIZE)).expand((input_arranged.shape[0], -1))
    bias_arranged = bias.tile((1, BLOCK_SIZE)).expand((input_arranged.shape[0], -1))
    output_arranged = output.tile((1, BLOCK_SIZE))

    return (
        input_arranged,
        weight_arranged,
        bias_arranged,
        eps,
        num_normalized_elements,
        output_arranged,
    )


def application(input, weight, bias, eps, num_normalized_elements, output):
    input_fp32 = ntl.cast(input, ntl.float32)
    mean = ntl.sum(input_fp32) / num_normalized_elements
    centered = ntl.where(
        input.offsets(-1) < input.source.shape[-1], input_fp32 - mean, 0
    )
    variance = ntl.sum(centered * centered) / num_normalized_elements
    output = centered * ntl.rsqrt(variance + eps) * weight + bias  # noqa: F841


tensors = (
    Tensor(2, other=0),
    Tensor(2, other=0),
    Tensor(2, other=0),
    Tensor(0),
    Tensor(0),
    Tensor(2),
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="layer_norm"
)


CASES = ({"rows": 13, "columns": 1000}, {"rows": 5, "columns": 2049})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"rows": 16384, "columns": 4096},)


def inputs(device, dtype=torch.float16, rows=13, columns=1000):
    generator = torch.Generator().manual_seed(0)

    return (
        (torch.randn((rows, columns), generator=generator) * 2 + 0.5).to(device, dtype),
        torch.rand((columns,), generator=generator).to(device, dtype),
        torch.randn((columns,), generator=generator).to(device, dtype),
    )


def launch(kernel, input, weight, bias, eps=1e-5):
    output = torch.empty_like(input)
    num_normalized_elements = input.shape[-1]
    kernel(
        input,
        weight.view(1, -1),
        bias.view(1, -1),
        eps,
        num_normalized_elements,
        output,
        BLOCK_SIZE=triton.next_power_of_2(num_normalized_elements),
    )

    return output


def reference(input, weight, bias, eps=1e-5):
    return torch.nn.functional.layer_norm(
        input.float(), (input.shape[-1],), weight.float(), bias.float(), eps
    ).to(input.dtype)
