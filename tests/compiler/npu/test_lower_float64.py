"""LowerFloat64: pass tests on ASTs and the Ascend compile check of a kernel with an fp64 cast."""

import importlib.util

import ninetoothed
import ninetoothed.language as ntl
import pytest
import torch
from helpers import rewrite
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.npu.lower_float64 import LowerFloat64
from ninetoothed_ascend.compiler.passes import run_pipeline
from ninetoothed_ascend.compiler.pipelines import NPU as PIPELINE

KERNEL = """
import triton
import triton.language

@triton.jit
def kernel(x_pointer, output_pointer):
    offsets = triton.language.arange(0, 16)
    x = triton.language.cast(triton.language.load(x_pointer + offsets), triton.language.float64)
    y = x.to(triton.language.float64) * 2 + triton.language.zeros((16,), dtype=triton.language.float64)
    triton.language.store(output_pointer + offsets, y)

def launch(x, output):
    return torch.float64
"""


def test_lower_float64_in_kernels_only():
    source, count = rewrite(LowerFloat64, KERNEL)

    # Only the demote helper's dtype test is left.
    assert source.count("triton.language.float64") == 1
    assert "return torch.float64" in source
    assert (
        "x = triton.language.cast(ninetoothed_ascend_float32_if_float64("
        "triton.language.load(x_pointer + offsets)), triton.language.float32)" in source
    )
    assert "dtype=triton.language.float32" in source
    assert count == 4  # three float64, one load


def test_lower_float64_matches_the_module_not_the_name():
    source, count = rewrite(
        LowerFloat64,
        """
        import triton
        import triton.language as anything
        import numpy
        @triton.jit
        def kernel(p):
            return anything.load(p).to(anything.float64) + numpy.float64(1)
        def host():
            return anything.float64
        """,
    )

    assert count == 2
    assert "numpy.float64(1)" in source
    assert "return anything.float64" in source


def _compile(source, tmp_path, pointer):
    from ninetoothed_ascend.check.compile_check import compile_stages

    path = tmp_path / "kernel.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    return compile_stages(
        module.kernel, {"x_pointer": pointer, "output_pointer": pointer}, {}
    )[0]


@pytest.mark.ascend
@pytest.mark.parametrize("pointer", ["*fp16", "*fp32", "*fp64"])
def test_fp64_fails_the_frontend_or_computes_in_fp64_without_the_pass(
    pointer, tmp_path
):
    from ninetoothed_ascend.check.compile_check import StageError

    if pointer == "*fp64":
        # Casts from fp64 to fp64 fold away: the kernel passes, computing in fp64.
        assert [
            line
            for line in _compile(KERNEL, tmp_path, pointer).splitlines()
            if "arith.mulf" in line and "f64" in line
        ]
    else:
        with pytest.raises(
            StageError, match=r"(?s)\[ttir\].*fp64\] is unsupported on Ascend"
        ):
            _compile(KERNEL, tmp_path, pointer)

    linalg = _compile(run_pipeline(KERNEL, PIPELINE).source, tmp_path, pointer)

    assert "func.func" in linalg
    # Arithmetic is fp32; fp64 is left only where memory is read and written.
    assert not [
        line for line in linalg.splitlines() if "arith.mulf" in line and "f64" in line
    ]


def _arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((BLOCK_SIZE,)), output.tile((BLOCK_SIZE,))


def _scale_in_fp64(input, output):
    output = ntl.cast(input, ntl.float64) * 0.5  # noqa: F841


@pytest.mark.ascend
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_ninetoothed_kernel_with_an_fp64_cast_passes_the_compile_check(dtype):
    from ninetoothed_ascend.check.compile_check import check_variant

    def launch(kernel, input):
        output = torch.empty_like(input)
        kernel(input, output)

        return output

    kernel = ninetoothed_ascend.make(
        _arrangement, _scale_in_fp64, (Tensor(1), Tensor(1))
    )
    assert "triton.language.float64" in kernel.source("cuda")
    assert ("LowerFloat64", 2) in kernel.rewrites("npu")  # the cast and the load

    results = check_variant(kernel, launch, torch.randn(300).to(dtype))

    assert results
    assert all("func.func" in result.linalg for result in results)


@pytest.mark.parametrize("attribute", ("type", "dtype"))
def test_lower_float64_folds_a_pointers_element_type_to_float32(attribute):
    source, count = rewrite(
        LowerFloat64,
        f"""
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(p):
            dtype = p.{attribute}.element_ty
            tl.store(p, tl.cast(1.0, dtype))
        def host(p):
            return p.{attribute}.element_ty
        """,
    )

    assert (
        f"dtype = triton.language.float32 if p.{attribute}.element_ty == "
        f"triton.language.float64 else p.{attribute}.element_ty"
    ) in source
    assert f"return p.{attribute}.element_ty" in source
    assert count == 1


def _softmax_into(input, output):
    # As ntops' softmax into a wider dtype: computed in the output's dtype.
    dtype = output.dtype
    output = ntl.exp(ntl.cast(input, dtype))  # noqa: F841


@pytest.mark.ascend
def test_a_kernel_computing_in_its_fp64_outputs_dtype_passes_the_compile_check():
    """The output's element type is fp64, and a cast to it failed the frontend ("[fp8, fp64] is unsupported")."""

    from ninetoothed_ascend.check.compile_check import check_variant

    def launch(kernel, input):
        output = torch.empty_like(input, dtype=torch.float64)
        kernel(input, output)

        return output

    kernel = ninetoothed_ascend.make(
        _arrangement, _softmax_into, (Tensor(1), Tensor(1))
    )
    assert "element_ty" in kernel.source("cuda")

    results = check_variant(kernel, launch, torch.randn(300))

    assert results
    assert all("func.func" in result.linalg for result in results)
