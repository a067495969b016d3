"""Instance normalization with input statistics, in the style of ntops: ``premake(ndim, ...)`` and a ``functools.partial`` arrangement.

:func:`premake_saving_statistics` makes the form that stores each plane's
mean and variance to ``(N, C)`` tensors and reads them back from global
memory to finish: the form whose emulated NPU variant read stale
statistics on a GPU before ``SynchronizeReadBack``.

Each program normalizes one ``(sample, channel)`` plane: it loops over the
plane's tiles three times (the mean, the variance of the lanes inside the
plane, then the normalization). The planes come from the library's shared
reduction arrangement, reached through a module global
(``reduction.arrangement``), as ntops reaches ``mm.arrangement``. ``has_weight`` and ``has_bias`` are premake
flags; an absent weight or bias is passed as a ``meta`` placeholder, which
the kernel made without it never reads.
"""

import functools

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Tensor

from downstream_ops import reduction


def arrangement(
    input, weight, bias, eps, output, num_normalized_elements, block_size=None
):
    def per_channel(tensor, planes):
        arranged = tensor.tile((1,)).unsqueeze(0).expand((planes.shape[0], -1))
        arranged.dtype = arranged.dtype.squeeze(0)

        return arranged

    # (N, C, L) → (N, C) programs, each a loop over (L / block_size) tiles.
    input_arranged, output_arranged = reduction.arrangement(
        input, output, dim=-1, block_size=block_size
    )

    return (
        input_arranged,
        per_channel(weight, input_arranged),
        per_channel(bias, input_arranged),
        eps,
        output_arranged,
        num_normalized_elements,
    )


def _statistics(input, num_normalized_elements):
    partial_sum = ntl.zeros(input.dtype.shape, dtype=ntl.float32)

    for i in range(input.shape[0]):
        partial_sum += ntl.cast(input[i], ntl.float32)

    mean = ntl.sum(partial_sum, 0) / num_normalized_elements
    partial_squares = ntl.zeros(input.dtype.shape, dtype=ntl.float32)

    for i in range(input.shape[0]):
        diff = ntl.cast(input[i], ntl.float32) - mean
        diff = ntl.where(input[i].offsets(-1) < input.source.shape[-1], diff, 0)
        partial_squares += diff * diff

    return mean, ntl.sum(partial_squares, 0) / num_normalized_elements


def application(input, weight, bias, eps, output, num_normalized_elements):
    mean, variance = _statistics(input, num_normalized_elements)
    std = ntl.sqrt(variance + eps)

    for i in range(input.shape[0]):
        output[i] = (ntl.cast(input[i], ntl.float32) - mean) / std * weight + bias


def application_without_affine(
    input, weight, bias, eps, output, num_normalized_elements
):
    mean, variance = _statistics(input, num_normalized_elements)
    std = ntl.sqrt(variance + eps)

    for i in range(input.shape[0]):
        output[i] = (ntl.cast(input[i], ntl.float32) - mean) / std


@functools.cache
def premake(num_normalized_elements, has_affine, dtype=None, block_size=None):
    """Return ``(arrangement, application, tensors)`` for ``(N, C, L)`` inputs (callers view N-D inputs so)."""

    arrangement_ = functools.partial(arrangement, block_size=block_size)
    tensors = (
        Tensor(3, other=0, dtype=dtype),
        Tensor(1, dtype=dtype),
        Tensor(1, dtype=dtype),
        Tensor(0, dtype=ninetoothed.float64),
        Tensor(3, dtype=dtype),
        Tensor(0, constexpr=True, value=num_normalized_elements),
    )

    return (
        arrangement_,
        application if has_affine else application_without_affine,
        tensors,
    )


def arrangement_saving_statistics(
    input, mean, variance, weight, bias, eps, output, num_normalized_elements
):
    def per_plane_statistic(tensor):
        arranged = tensor.tile((1, 1))
        arranged.dtype = arranged.dtype.squeeze((0, 1))

        return arranged

    input_arranged, weight_arranged, bias_arranged, eps, output_arranged, count = (
        arrangement(
            input,
            weight,
            bias,
            eps,
            output,
            num_normalized_elements,
            block_size=ninetoothed.block_size(),
        )
    )

    return (
        input_arranged,
        per_plane_statistic(mean),
        per_plane_statistic(variance),
        weight_arranged,
        bias_arranged,
        eps,
        output_arranged,
        count,
    )


def application_saving_statistics(
    input, mean, variance, weight, bias, eps, output, num_normalized_elements
):
    # Assigning to a parameter stores to it; reading it afterwards loads it
    # back: ``mean`` in the variance loop and the normalization, ``variance``
    # in ``std``.
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
    std = ntl.sqrt(ntl.cast(variance, ntl.float32) + eps)

    for i in range(input.shape[0]):
        output[i] = (ntl.cast(input[i], ntl.float32) - mean) / std * weight + bias


@functools.cache
def premake_saving_statistics(num_normalized_elements, dtype=None):
    """Return ``(arrangement, application, tensors)``: ``(N, C, L)`` input, ``(N, C)`` mean and variance of the input's dtype."""

    tensors = (
        Tensor(3, other=0, dtype=dtype),
        Tensor(2, dtype=dtype),
        Tensor(2, dtype=dtype),
        Tensor(1, dtype=dtype),
        Tensor(1, dtype=dtype),
        Tensor(0, dtype=ninetoothed.float64),
        Tensor(3, dtype=dtype),
        Tensor(0, constexpr=True, value=num_normalized_elements),
    )

    return arrangement_saving_statistics, application_saving_statistics, tensors
