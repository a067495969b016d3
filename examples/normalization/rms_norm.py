"""RMS normalization of each row: ``output = input / sqrt(mean(input**2) + eps) * weight``."""

import ninetoothed.language as ntl
import torch
import triton
from ninetoothed import Symbol, Tensor

import ninetoothed_ascend

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


def arrangement(
    input, weight, eps, num_normalized_elements, output, BLOCK_SIZE=BLOCK_SIZE
):
    input_arranged = input.tile((1, BLOCK_SIZE))
    weight_arranged = weight.tile((1, BLOCK_SIZE)).expand((input_arranged.shape[0], -1))
    output_arranged = output.tile((1, BLOCK_SIZE))

    return (
        input_arranged,
        weight_arranged,
        eps,
        num_normalized_elements,
        output_arranged,
    )


def application(input, weight, eps, num_normalized_elements, output):
    input_fp32 = ntl.cast(input, ntl.float32)
    mean_square = ntl.sum(input_fp32 * input_fp32) / num_normalized_elements
    output = input_fp32 * ntl.rsqrt(mean_square + eps) * weight  # noqa: F841


tensors = (Tensor(2, other=0), Tensor(2, other=0), Tensor(0), Tensor(0), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="rms_norm"
)


#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"rows": 16384, "columns": 4096},)


def inputs(device, dtype=torch.float16, rows=33, columns=1000):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((rows, columns), generator=generator).to(device, dtype),
        torch.rand((columns,), generator=generator).to(device, dtype),
    )


def launch(kernel, input, weight, eps=1e-6):
    output = torch.empty_like(input)
    num_normalized_elements = input.shape[-1]
    kernel(
        input,
        weight.view(1, -1),
        eps,
        num_normalized_elements,
        output,
        BLOCK_SIZE=triton.next_power_of_2(num_normalized_elements),
    )

    return output


def reference(input, weight, eps=1e-6):
    return torch.nn.functional.rms_norm(
        input.float(), (input.shape[-1],), weight.float(), eps
    ).to(input.dtype)
