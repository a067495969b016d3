"""A library's tests of its operators against torch: element-wise in 1 to 4 dimensions, instance norm with and without weight and bias, matmul in both precisions.

Cases marked ``full`` make the suite a stand-in for a whole operator library
(many kernels made in one process, the instance-norm shapes that failed
there); CI leaves them out (``-m "not full"``) to stay within seconds.
"""

import pytest
import torch
from downstream_ops import OPS, REFERENCES, run
from downstream_ops.matmul import IEEE, TF32
from downstream_ops.ops import (
    instance_norm,
    instance_norm_saving_statistics,
    matmul,
)

FULL = pytest.mark.full

#: Absolute and relative tolerance per dtype of the instance norm.
TOLERANCES = {torch.float32: 1e-4, torch.float16: 1e-2}


def _elementwise_cases():
    for op in OPS:
        for shape in [(37,), (3, 20), (2, 3, 7), (2, 3, 4, 5)]:
            for dtype in (torch.float32, torch.float16):
                ci = (
                    op in ("add", "where_max", "mul_square")
                    and len(shape) < 4
                    and dtype == torch.float32
                )
                yield pytest.param(op, shape, dtype, marks=() if ci else FULL)


@pytest.mark.parametrize(("op", "shape", "dtype"), _elementwise_cases())
def test_elementwise(op, shape, dtype, device):
    generator = torch.Generator().manual_seed(0)
    input = torch.randn(shape, generator=generator).to(device, dtype)
    # Away from zero: ``div`` divides by it.
    other = (torch.rand(shape, generator=generator) + 0.5).to(device, dtype)

    # torch rounds ``y * 3`` to fp16 before ``x - ...``; a GPU fuses the two
    # into one FMA (one rounding): up to half an fp16 ulp of the product
    # apart (measured on an H100: 0.00098 for sub_scaled, plain NineToothed).
    tolerance = {"atol": 1e-3, "rtol": 1e-3} if dtype == torch.float16 else {}
    torch.testing.assert_close(
        run(op, input, other), REFERENCES[op](input, other), **tolerance
    )


def _instance_norm_cases():
    # (1, 1, L) with L from 256 to 1024 and a 4-D input: the shapes whose
    # emulated NPU variant failed inside a whole library's suite.
    for shape in [(1, 1, 256), (1, 1, 300), (1, 1, 640), (1, 1, 1024), (2, 3, 4, 5)]:
        for dtype in (torch.float32, torch.float16):
            for affine in (True, False):
                ci = (shape, dtype) in (
                    ((1, 1, 300), torch.float32),
                    ((2, 3, 4, 5), torch.float16),
                )
                yield pytest.param(shape, dtype, affine, marks=() if ci else FULL)


@pytest.mark.parametrize(("shape", "dtype", "affine"), _instance_norm_cases())
def test_instance_norm(shape, dtype, affine, device):
    generator = torch.Generator().manual_seed(0)
    input = (torch.randn(shape, generator=generator) * 2 + 0.5).to(device, dtype)
    weight = bias = None

    if affine:
        weight = torch.rand(shape[1], generator=generator).to(device, dtype)
        bias = torch.randn(shape[1], generator=generator).to(device, dtype)

    expected = torch.nn.functional.instance_norm(
        input.float(),
        weight=None if weight is None else weight.float(),
        bias=None if bias is None else bias.float(),
    ).to(dtype)

    torch.testing.assert_close(
        instance_norm(input, weight, bias),
        expected,
        atol=TOLERANCES[dtype],
        rtol=TOLERANCES[dtype],
    )


def _saving_statistics_cases():
    # One plane per call, (1, 1, L), is the shape whose statistics were read
    # back stale on a GPU; a 4-D input as the library's own (3, 4, 14, 4).
    for shape in [(1, 1, 382), (1, 1, 1018), (1, 15, 44), (3, 4, 14, 4)]:
        for dtype in (torch.float32, torch.float16):
            ci = (shape, dtype) == ((1, 1, 382), torch.float32)
            yield pytest.param(shape, dtype, marks=() if ci else FULL)


@pytest.mark.parametrize(("shape", "dtype"), _saving_statistics_cases())
@pytest.mark.parametrize("call", range(3))
def test_instance_norm_saving_statistics(shape, dtype, call, device):
    generator = torch.Generator().manual_seed(call)
    input = (torch.randn(shape, generator=generator) * 2 + 0.5).to(device, dtype)
    weight = torch.rand(shape[1], generator=generator).to(device, dtype)
    bias = torch.randn(shape[1], generator=generator).to(device, dtype)
    planes = input.float().reshape(shape[0], shape[1], -1)
    variance, mean = torch.var_mean(planes, dim=-1, unbiased=False)
    expected = torch.nn.functional.instance_norm(
        input.float(), weight=weight.float(), bias=bias.float()
    ).to(dtype)

    output, saved_mean, saved_variance = instance_norm_saving_statistics(
        input, weight, bias
    )

    torch.testing.assert_close(
        output, expected, atol=TOLERANCES[dtype], rtol=TOLERANCES[dtype]
    )
    torch.testing.assert_close(
        saved_mean, mean.to(dtype), atol=TOLERANCES[dtype], rtol=TOLERANCES[dtype]
    )
    torch.testing.assert_close(
        saved_variance,
        variance.to(dtype),
        atol=TOLERANCES[dtype],
        rtol=TOLERANCES[dtype],
    )


@pytest.mark.parametrize("precision", [TF32, IEEE])
def test_matmul(precision, device):
    generator = torch.Generator().manual_seed(0)
    input = torch.randn((40, 40), generator=generator).to(device)
    other = torch.randn((40, 36), generator=generator).to(device)
    tolerance = 5e-2 if precision == TF32 else 1e-4

    torch.testing.assert_close(
        matmul(input, other, precision), input @ other, atol=tolerance, rtol=tolerance
    )
