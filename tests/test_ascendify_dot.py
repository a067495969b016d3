"""UseHf32InDot through the Ascend compile check: the dtype conditional folds for fp16 and fp32 operands."""

import importlib.util

import pytest

from ninetoothed_ascend.ascendify import UseHf32InDot, run_pipeline

pytestmark = pytest.mark.ascend

KERNEL = """
import triton
import triton.language

@triton.jit
def kernel(a_pointer, b_pointer, output_pointer):
    rows = triton.language.arange(0, 16)[:, None] * 16
    columns = triton.language.arange(0, 16)[None, :]
    accumulator = triton.language.zeros((16, 16), dtype=triton.language.float32)
    accumulator += triton.language.dot(triton.language.load(a_pointer + rows + columns), triton.language.load(b_pointer + rows + columns), input_precision="PRECISION")
    triton.language.store(output_pointer + rows + columns, accumulator)
"""


def _compile(source, tmp_path, pointer):
    from ninetoothed_ascend.compile_check import compile_stages

    path = tmp_path / f"dot_{pointer[1:]}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signature = {"a_pointer": pointer, "b_pointer": pointer, "output_pointer": "*fp32"}

    return compile_stages(module.kernel, signature, {})[0]


@pytest.mark.parametrize("pointer", ["*fp16", "*fp32"])
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
def test_tf32_fails_without_the_pass_and_passes_with_it(precision, pointer, tmp_path):
    from ninetoothed_ascend.compile_check import StageError

    source = KERNEL.replace("PRECISION", precision)

    with pytest.raises(StageError, match="please use input_precision='hf32' on Ascend"):
        _compile(source, tmp_path, pointer)

    rewritten = run_pipeline(source, (UseHf32InDot,))
    assert rewritten.rewrites == (("UseHf32InDot", 1),)
    assert "func.func" in _compile(rewritten.source, tmp_path, pointer)


@pytest.mark.parametrize("pointer", ["*fp16"])
def test_unconditional_hf32_fails_for_fp16(pointer, tmp_path):
    """Why the pass decides by dtype: hf32 is refused for anything but fp32 x fp32."""

    from ninetoothed_ascend.compile_check import StageError

    with pytest.raises(StageError, match="'hf32' must be used with f32 \\* f32 = f32"):
        _compile(KERNEL.replace("PRECISION", "hf32"), tmp_path, pointer)
