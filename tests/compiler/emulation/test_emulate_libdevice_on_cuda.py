"""EmulateLibdeviceOnCuda: triton-ascend's libdevice as CUDA libdevice or core Triton, through CUDA Triton's frontend."""

import ast

import pytest
from helpers import rewrite
from libdevice_helpers import (
    MAPPED,
    PORTABLE,
    cuda_make_ir,
    kernel_source,
    npu_call,
)

from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.emulation.emulate_libdevice_on_cuda import (
    EmulateLibdeviceOnCuda,
)


@pytest.mark.parametrize("name", MAPPED)
def test_cuda_mapping_calls_a_helper_over_cuda_libdevice_or_core_triton(name):
    source, count = rewrite(EmulateLibdeviceOnCuda, npu_call(name))

    assert count >= 1
    assert "extra.ascend" not in source and "extra.cann" not in source
    assert f"return ninetoothed_emulated_{name}(" in source
    helper = ast.parse(source).body
    definitions = {
        node.name: ast.unparse(node)
        for node in helper
        if isinstance(node, ast.FunctionDef)
    }
    body = definitions[f"ninetoothed_emulated_{name}"]
    assert "@triton.jit" in body
    expected = (
        PORTABLE[name]
        .cuda.replace("L.", "ninetoothed_portable_libdevice.")
        .replace("tl.", "triton.language.")
    )
    assert ast.unparse(ast.parse(expected)) in body

    if "L." in PORTABLE[name].cuda:
        assert (
            "from triton.language.extra import libdevice as ninetoothed_portable_libdevice"
            in source
        )


def test_flip_becomes_core_flip():
    source, _ = rewrite(EmulateLibdeviceOnCuda, npu_call("flip", 2))

    assert "return triton.language.flip(x, y)" in source


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("name", MAPPED)
def test_each_cuda_mapping_passes_cuda_tritons_frontend(
    name, dtype, pristine_triton_language
):
    """CUDA Triton 3.9's frontend (make_ir for sm_90, no GPU needed) accepts each CUDA helper."""

    if dtype == "fp16" and not PORTABLE[name].upcast:
        pytest.skip("computed in the argument's own format; CUDA has no fp16 libdevice")

    ir_text = cuda_make_ir(
        pipelines.emulate(kernel_source(name), "cuda").source, name, f"*{dtype}"
    )

    if "L." in PORTABLE[name].cuda:
        assert "__nv_" in ir_text
