"""Linear layer: ``output = input @ weight.T + bias``, as ``torch.nn.functional.linear``.

``weight`` is ``(out_features, in_features)``; the arrangement reads it
transposed through ``permute`` instead of copying it.
"""

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend


def arrangement(
    input,
    weight,
    bias,
    output,
    BLOCK_SIZE_M=ninetoothed.block_size(lower_bound=32, upper_bound=128),
    BLOCK_SIZE_N=ninetoothed.block_size(lower_bound=32, upper_bound=128),
    BLOCK_SIZE_K=ninetoothed.block_size(lower_bound=32, upper_bound=64),
):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))

    input_arranged = input.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    input_arranged = input_arranged.tile((1, -1))
    input_arranged = input_arranged.expand((-1, output_arranged.shape[1]))
    input_arranged.dtype = input_arranged.dtype.squeeze(0)

    weight_arranged = weight.permute((1, 0)).tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    weight_arranged = weight_arranged.tile((-1, 1))
    weight_arranged = weight_arranged.expand((output_arranged.shape[0], -1))
    weight_arranged.dtype = weight_arranged.dtype.squeeze(1)

    bias_arranged = bias.tile((1, BLOCK_SIZE_N))
    bias_arranged = bias_arranged.expand((output_arranged.shape[0], -1))

    return input_arranged, weight_arranged, bias_arranged, output_arranged


def application(input, weight, bias, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)

    for k in range(input.shape[0]):
        accumulator += ntl.dot(input[k], weight[k])

    output = accumulator + bias  # noqa: F841


tensors = (Tensor(2, other=0), Tensor(2, other=0), Tensor(2), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="linear"
)


CASES = (
    {"batch": 100, "in_features": 70, "out_features": 90},
    {"batch": 33, "in_features": 128, "out_features": 65},
)

#: ``tl.dot`` multiplies fp32 inputs in tf32 on NVIDIA GPUs (10-bit mantissa).
TOLERANCES = {torch.float32: (5e-2, 1e-2)}


#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"batch": 4096, "in_features": 4096, "out_features": 4096},)


def inputs(device, dtype=torch.float16, batch=100, in_features=70, out_features=90):
    generator = torch.Generator().manual_seed(0)

    return (
        torch.randn((batch, in_features), generator=generator).to(device, dtype),
        torch.randn((out_features, in_features), generator=generator).to(device, dtype),
        torch.randn((out_features,), generator=generator).to(device, dtype),
    )


def launch(kernel, input, weight, bias):
    output = torch.empty(
        (input.shape[0], weight.shape[0]), device=input.device, dtype=input.dtype
    )
    kernel(input, weight, bias.view(1, -1), output)

    return output


def reference(input, weight, bias):
    return torch.nn.functional.linear(input.float(), weight.float(), bias.float()).to(
        input.dtype
    )
