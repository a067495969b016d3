"""Instance normalization that saves its statistics, as a forward pass kept for the backward does: one program per ``(sample, channel)`` plane.

The program stores the plane's mean and variance to two ``(N, C)`` fp32
tensors (a NineToothed application assigning to a parameter stores to it),
then normalizes with them, which reads them back from global memory: a
read-back after a store within one program (``SynchronizeReadBack``). The
block size is fixed, so a launch runs once, without autotuning runs that
would store the statistics before it; the statistics tensors start as NaN,
so a load that missed the store shows.
"""

import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend

BLOCK_SIZE = 64


def arrangement(
    input, mean, variance, weight, bias, eps, output, num_normalized_elements
):
    def per_plane(tensor):
        arranged = tensor.tile((1, 1, BLOCK_SIZE)).tile((1, 1, -1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))
        arranged.dtype.dtype = arranged.dtype.dtype.squeeze((0, 1))

        return arranged

    def per_statistic(tensor):
        arranged = tensor.tile((1, 1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))

        return arranged

    def per_channel(tensor, planes):
        arranged = tensor.tile((1,)).unsqueeze(0).expand((planes.shape[0], -1))
        arranged.dtype = arranged.dtype.squeeze(0)

        return arranged

    input_arranged = per_plane(input)

    return (
        input_arranged,
        per_statistic(mean),
        per_statistic(variance),
        per_channel(weight, input_arranged),
        per_channel(bias, input_arranged),
        eps,
        per_plane(output),
        num_normalized_elements,
    )


def application(
    input, mean, variance, weight, bias, eps, output, num_normalized_elements
):
    partial_sum = ntl.zeros(input.dtype.shape, dtype=ntl.float32)

    for i in range(input.shape[0]):
        partial_sum += ntl.cast(input[i], ntl.float32)

    mean = ntl.sum(partial_sum, 0) / num_normalized_elements
    partial_squares = ntl.zeros(input.dtype.shape, dtype=ntl.float32)

    for i in range(input.shape[0]):
        diff = ntl.cast(input[i], ntl.float32) - mean
        diff = ntl.where(input[i].offsets(-1) < input.source.shape[-1], diff, 0)
        partial_squares += diff * diff

    variance = ntl.sum(partial_squares, 0) / num_normalized_elements
    std = ntl.sqrt(variance + eps)

    for i in range(input.shape[0]):
        output[i] = (ntl.cast(input[i], ntl.float32) - mean) / std * weight + bias


tensors = (
    Tensor(3, other=0),
    Tensor(2),
    Tensor(2),
    Tensor(1),
    Tensor(1),
    Tensor(0),
    Tensor(3),
    Tensor(0, constexpr=True),
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="instance_norm_saved_stats"
)

#: The CUDA variant is NineToothed's source byte for byte, which reads the
#: statistics back without a barrier: on a GPU, some runs read the NaN they
#: started as (``python3 scripts/verify_on_gpu.py
#: examples/normalization/instance_norm_saved_stats.py`` on an H100;
#: docs/verification.md, "On a CUDA GPU"). The NPU variant has
#: ``SynchronizeReadBack``'s barriers.
KNOWN_FAILURES = {
    "cuda": "NineToothed's own source (the CUDA variant, byte for byte) reads "
    "the stored statistics back without a barrier; on a GPU some runs read "
    "the NaN they started as. The NPU variant has the barriers "
    "(SynchronizeReadBack).",
}

# (1, 1, 382): one plane, the shape of the library test that read stale
# statistics.
CASES = (
    {"batch": 1, "channels": 1, "length": 382},
    {"batch": 2, "channels": 3, "length": 300},
)


def inputs(device, dtype=torch.float16, batch=2, channels=3, length=300):
    generator = torch.Generator().manual_seed(0)

    return (
        (torch.randn((batch, channels, length), generator=generator) * 2 + 0.5).to(
            device, dtype
        ),
        torch.rand((channels,), generator=generator).to(device, dtype),
        torch.randn((channels,), generator=generator).to(device, dtype),
    )


def launch(kernel, input, weight, bias, eps=1e-5):
    statistics = input.shape[:2]
    mean = torch.full(
        statistics, float("nan"), dtype=torch.float32, device=input.device
    )
    variance = torch.full_like(mean, float("nan"))
    output = torch.empty_like(input)
    kernel(input, mean, variance, weight, bias, eps, output, input.shape[-1])

    return output, mean, variance


def reference(input, weight, bias, eps=1e-5):
    planes = input.float()
    variance, mean = torch.var_mean(planes, dim=-1, unbiased=False)
    output = torch.nn.functional.instance_norm(
        planes, weight=weight.float(), bias=bias.float(), eps=eps
    )

    return output.to(input.dtype), mean, variance
