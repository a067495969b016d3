"""The torch-facing operators: each makes its kernel at its first call, for the input's ndim and dtype."""

import functools
import json
import sys

import ninetoothed
import torch

from downstream_ops import instance_norm as instance_norm_kernels
from downstream_ops import kernels
from downstream_ops import matmul as matmul_kernels

_DTYPES = {torch.float16: ninetoothed.float16, torch.float32: ninetoothed.float32}

REFERENCES = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "axpy": lambda x, y: x * 2 + y,
    "sub_scaled": lambda x, y: x - y * 3,
    "mean2": lambda x, y: (x + y) * 0.5,
    "square_add": lambda x, y: x * x + y,
    "fma": lambda x, y: x * y + x,
    "abs_add": lambda x, y: x.abs() + y,
    "where_max": lambda x, y: torch.where(x > y, x, y),
    "quarter_sub": lambda x, y: x * 0.25 - y,
    "squared_difference": lambda x, y: (x - y) * (x - y),
    "add_one": lambda x, y: x + y + 1,
    "relu_add": lambda x, y: x.clamp(min=0) + y,
    "mul_square": lambda x, y: x * y * y,
    "sub_twice": lambda x, y: x - 2 * y,
    "shifted_mul": lambda x, y: (x + 1) * y,
}

OPS = tuple(REFERENCES)


@functools.cache
def _cached_make(premake, *args, **keywords):
    return ninetoothed.make(*premake(*args, **keywords))


def kernel(op, ndim, dtype):
    """Return the kernel of ``op`` for ``ndim``-dimensional tensors of torch ``dtype``."""

    return _cached_make(kernels.premake, op, ndim, _DTYPES[dtype])


def run(op, input, other):
    """``op(input, other)`` through its NineToothed kernel."""

    output = torch.empty_like(input)
    kernel(op, input.ndim, input.dtype)(input, other, output)

    return output


def instance_norm(input, weight=None, bias=None, eps=1e-5):
    """``torch.nn.functional.instance_norm`` with input statistics; N-D inputs are viewed as ``(N, C, L)``.

    An absent ``weight``/``bias`` is passed to the kernel as a ``meta``
    placeholder, which the kernel made without them does not read.
    """

    planes = input.reshape(input.shape[0], input.shape[1], -1)
    has_affine = weight is not None
    placeholder = torch.empty(0, device="meta")
    kernel = _cached_make(
        instance_norm_kernels.premake,
        planes.shape[-1],
        has_affine,
        _DTYPES[input.dtype],
    )
    output = torch.empty_like(planes)
    kernel(
        planes,
        weight if has_affine else placeholder,
        bias if has_affine else placeholder,
        eps,
        output,
        planes.shape[-1],
    )

    return output.view_as(input)


def instance_norm_saving_statistics(input, weight, bias, eps=1e-5):
    """Instance norm whose kernel stores the ``(N, C)`` mean and variance, then normalizes with them; returns ``(output, mean, variance)``.

    The statistics tensors come from ``torch.empty``, as a library allocates
    them: what they hold before the launch is whatever the allocator left.
    """

    planes = input.reshape(input.shape[0], input.shape[1], -1)
    kernel = _cached_make(
        instance_norm_kernels.premake_saving_statistics,
        planes.shape[-1],
        _DTYPES[input.dtype],
    )
    mean = torch.empty(planes.shape[:2], dtype=input.dtype, device=input.device)
    variance = torch.empty_like(mean)
    output = torch.empty_like(planes)
    kernel(planes, mean, variance, weight, bias, eps, output, planes.shape[-1])

    return output.view_as(input), mean, variance


def matmul(input, other, precision=matmul_kernels.TF32):
    """``input @ other`` with ``dot``'s precision chosen in the kernel by ``precision`` (``TF32`` or ``IEEE``)."""

    kernel = _cached_make(matmul_kernels.premake, _DTYPES[input.dtype])
    output = torch.empty(
        (input.shape[0], other.shape[1]), dtype=input.dtype, device=input.device
    )
    kernel(input, other, output, precision)

    return output


def main(ops=OPS, execute=True):
    """Make (and with ``execute`` run, on CPU tensors) ``ops``; print one JSON line of what happened."""

    generator = torch.Generator().manual_seed(0)
    input = torch.randn(3, 100, generator=generator)
    other = torch.rand(3, 100, generator=generator) + 0.5
    report = {"kernels": [], "max_abs_error": 0.0}

    for op in ops:
        made = kernel(op, input.ndim, input.dtype)
        report["kernels"].append(type(made).__module__ + "." + type(made).__name__)

        if execute:
            error = (run(op, input, other) - REFERENCES[op](input, other)).abs().max()
            report["max_abs_error"] = max(report["max_abs_error"], float(error))

    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:] or OPS)
