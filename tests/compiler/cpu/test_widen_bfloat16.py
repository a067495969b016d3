"""WidenBfloat16, on small modules run on Triton's interpreter."""

import pytest
import torch
from cpu_kernels import ADD_ONE, compiled_module
from helpers import rewrite

from ninetoothed_ascend.compiler.cpu.bind_language_module import BindLanguageModule
from ninetoothed_ascend.compiler.cpu.interpret_kernels import InterpretKernels
from ninetoothed_ascend.compiler.cpu.widen_bfloat16 import WidenBfloat16


def test_loads_and_the_dtypes_a_kernel_makes_are_widened_in_kernels_only():
    source, count = rewrite(
        WidenBfloat16,
        """
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(x_pointer, y_pointer):
            x = tl.load(x_pointer)
            z = tl.zeros((4,), dtype=tl.bfloat16) + x.to(tl.bfloat16)
            tl.store(y_pointer, tl.cast(z, tl.bfloat16))
        def launch(x):
            return x.to(torch.bfloat16)
        """,
    )

    assert "x = ninetoothed_float32_if_bfloat16(tl.load(x_pointer))" in source
    assert "dtype=ninetoothed_float32_if_bfloat16_dtype(tl.bfloat16)" in source
    assert "x.to(ninetoothed_float32_if_bfloat16_dtype(tl.bfloat16))" in source
    assert "tl.cast(z, ninetoothed_float32_if_bfloat16_dtype(tl.bfloat16))" in source
    assert "return x.to(torch.bfloat16)" in source
    assert count == 4


@pytest.mark.usefixtures("pristine_triton_language")
@pytest.mark.parametrize("widened", [True, False])
def test_bfloat16_arithmetic_is_right_only_widened(tmp_path, widened):
    passes = (WidenBfloat16,) * widened + (BindLanguageModule, InterpretKernels)
    x = torch.linspace(-4, 4, 16, dtype=torch.bfloat16)
    y = torch.zeros_like(x)

    compiled_module(ADD_ONE, passes, tmp_path).launch(x, y)

    assert torch.equal(y, x + 1) is widened
