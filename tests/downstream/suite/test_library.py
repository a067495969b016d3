"""A library's tests of its operators against torch: element-wise in 1 to 3 dimensions, instance norm with and without weight and bias, matmul in both precisions."""

import pytest
import torch
from downstream_ops import REFERENCES, run
from downstream_ops.matmul import IEEE, TF32
from downstream_ops.ops import instance_norm, matmul


@pytest.mark.parametrize("shape", [(37,), (3, 20), (2, 3, 7)])
@pytest.mark.parametrize("op", ["add", "where_max", "mul_square"])
def test_elementwise(op, shape, device):
    generator = torch.Generator().manual_seed(0)
    input = torch.randn(shape, generator=generator).to(device)
    other = torch.randn(shape, generator=generator).to(device)

    torch.testing.assert_close(run(op, input, other), REFERENCES[op](input, other))


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(1, 1, 300), (2, 3, 4, 5)])
def test_instance_norm(shape, affine, device):
    generator = torch.Generator().manual_seed(0)
    input = (torch.randn(shape, generator=generator) * 2 + 0.5).to(device)
    weight = torch.rand(shape[1], generator=generator).to(device) if affine else None
    bias = torch.randn(shape[1], generator=generator).to(device) if affine else None

    torch.testing.assert_close(
        instance_norm(input, weight, bias),
        torch.nn.functional.instance_norm(input, weight=weight, bias=bias),
        atol=1e-4,
        rtol=1e-4,
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
