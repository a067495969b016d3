"""LowerClamp: on small modules (level 1), and emulated on the CPU interpreter."""

import math

import numpy
import pytest
import torch
from helpers import rewrite

from ninetoothed_ascend.compiler.npu.lower_clamp import LowerClamp
from ninetoothed_ascend.compiler.passes import (
    run_pipeline,
)
from ninetoothed_ascend.compiler.pipelines import CPU


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            "triton.language.clamp(x, lo, hi)",
            "triton.language.minimum(triton.language.maximum(x, lo), hi)",
        ),
        (
            "triton.language.clamp(x, lo, hi, propagate_nan=triton.language.PropagateNan.ALL)",
            "triton.language.minimum(triton.language.maximum(x, lo, "
            "propagate_nan=triton.language.PropagateNan.ALL), hi, "
            "propagate_nan=triton.language.PropagateNan.ALL)",
        ),
        (
            "tl.clamp(x, max=hi, min=lo)",
            "triton.language.minimum(triton.language.maximum(x, lo), hi)",
        ),
    ],
)
def test_lower_clamp(call, expected):
    source, count = rewrite(
        LowerClamp, f"import triton\nimport triton.language as tl\ny = {call}"
    )

    assert source.splitlines()[-1] == f"y = {expected}"
    assert count == 1


CLAMP_KERNEL = """
import triton
import triton.language

@triton.jit
def clamp_kernel(x_pointer, y_pointer, low, high, n: triton.language.constexpr):
    offsets = triton.language.arange(0, n)
    x = triton.language.load(x_pointer + offsets)
    triton.language.store(y_pointer + offsets, triton.language.clamp(x, low, high{nan}))

def launch(x, y, low, high):
    clamp_kernel[(1,)](x, y, low, high, x.numel())
"""


@pytest.mark.parametrize(
    "nan", ["", ", propagate_nan=triton.language.PropagateNan.ALL"]
)
def test_lowered_clamp_computes_what_clamp_computes(nan):
    """Emulation on the CPU interpreter: same values, NaN included."""

    source = CLAMP_KERNEL.format(nan=nan)
    x = torch.tensor([-3.0, -1.0, 0.5, 2.0, math.nan, math.inf, -math.inf, 1.0])
    results = []

    for passes in (CPU, (LowerClamp, *CPU)):
        namespace = {}
        exec(compile(run_pipeline(source, passes).source, "<clamp>", "exec"), namespace)
        y = torch.empty_like(x)
        namespace["launch"](x, y, -1.5, 1.5)
        results.append(y)

    numpy.testing.assert_array_equal(results[0].numpy(), results[1].numpy())
    assert "language.clamp(" not in run_pipeline(source, (LowerClamp,)).source
