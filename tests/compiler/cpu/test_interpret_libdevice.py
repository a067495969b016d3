"""InterpretLibdevice: CUDA libdevice calls of the CPU variant, mapped or refused by name."""

import pytest
from helpers import rewrite

from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.cpu.interpret_libdevice import InterpretLibdevice
from ninetoothed_ascend.compiler.passes import (
    PipelineError,
    run_pipeline,
)

CUDA_CALL = """
import triton
from triton.language.extra import libdevice

@triton.jit
def kernel(x, y):
    return libdevice.{name}(x)
"""


def test_cpu_variant_maps_cuda_libdevice_functions_of_the_same_meaning():
    source, count = rewrite(InterpretLibdevice, CUDA_CALL.format(name="tanh"))

    assert count == 2  # the call and the import
    assert "from triton.language.extra import libdevice" not in source
    assert "return ninetoothed_emulated_tanh(x)" in source
    assert "numpy_elementwise('tanh', a0)" in source


@pytest.mark.parametrize("name", ["fast_expf", "isinf", "ilogb"])
def test_cpu_variant_refuses_cuda_libdevice_functions_it_cannot_compute(name):
    with pytest.raises(
        PipelineError,
        match=f"pass InterpretLibdevice: `triton.language.extra.libdevice.{name}` "
        "is not a function of CUDA Triton's libdevice that ninetoothed-ascend can run on cpu",
    ):
        run_pipeline(CUDA_CALL.format(name=name), pipelines.CPU)
