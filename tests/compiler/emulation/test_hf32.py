"""EmulateHf32OnCuda and EmulateHf32OnCpu: hf32 as tf32 on CUDA and ieee on the CPU."""

import pytest
import torch
from helpers import rewrite
from libdevice_helpers import DOT_KERNEL, cuda_make_ir, import_source

from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.emulation.emulate_hf32_on_cpu import EmulateHf32OnCpu
from ninetoothed_ascend.compiler.emulation.emulate_hf32_on_cuda import EmulateHf32OnCuda


@pytest.mark.parametrize(
    ("pass_class", "precision"),
    [(EmulateHf32OnCuda, "tf32"), (EmulateHf32OnCpu, "ieee")],
)
def test_hf32_becomes_the_target_precision(pass_class, precision):
    source, count = rewrite(
        pass_class,
        """
        import triton.language as tl
        a = tl.dot(x, y, input_precision="hf32")
        b = tl.dot(x, y, None, "hf32")
        c = tl.dot(x, y, input_precision="ieee")
        """,
    )

    assert count == 2
    assert f"tl.dot(x, y, input_precision='{precision}')" in source
    assert f"tl.dot(x, y, None, '{precision}')" in source
    assert "tl.dot(x, y, input_precision='ieee')" in source


def test_hf32_dot_runs_emulated_on_the_cpu_and_matches_torch():
    module = import_source(pipelines.emulate(DOT_KERNEL, "cpu").source, "hf32_cpu")
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(16, 16, generator=generator) for _ in range(2))
    c = torch.empty(16, 16)

    module.kernel[(1,)](a, b, c, BLOCK=16)

    torch.testing.assert_close(c, a @ b, rtol=1e-5, atol=1e-5)


def test_hf32_dot_emulated_on_cuda_passes_cuda_tritons_frontend_as_tf32(
    pristine_triton_language,
):
    source = pipelines.emulate(DOT_KERNEL, "cuda").source

    assert "input_precision='tf32'" in source
    assert "tt.dot" in cuda_make_ir(source, "hf32", "*fp32")


def test_without_the_hf32_mapping_cuda_tritons_frontend_refuses_hf32(
    pristine_triton_language,
):
    """Why EmulateHf32OnCuda exists: CUDA Triton 3.9 knows no hf32."""

    with pytest.raises(Exception, match="input_precision must be one of .* Got hf32"):
        cuda_make_ir(DOT_KERNEL, "hf32_raw", "*fp32")
