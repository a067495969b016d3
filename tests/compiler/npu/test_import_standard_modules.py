"""ImportStandardModules: on small modules, on the CPU variant of a kernel using ``math``, and through the Ascend compile check."""

import importlib.util
import math
import types

import ninetoothed
import ninetoothed.language as ntl
import pytest
import torch
from helpers import rewrite, run_python
from ninetoothed import Tensor
from ninetoothed.language import libdevice

import ninetoothed_ascend
from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.npu.fold_math_constants import FoldMathConstants
from ninetoothed_ascend.compiler.npu.import_standard_modules import (
    ImportStandardModules,
)
from ninetoothed_ascend.compiler.passes import run_pipeline


def test_imports_standard_modules_read_but_never_bound():
    source, count = rewrite(
        ImportStandardModules,
        """
        import triton
        import numpy as np
        def kernel(x, os):
            functools = 1
            return math.sqrt(2 / math.pi) * x + os + functools + len(x) + np.e + cmath.e + torch.pi
        """,
    )

    assert count == 2
    assert source.splitlines()[:2] == ["import cmath", "import math"]
    # A parameter, a local, a builtin, an imported alias and a third-party name are left alone.
    assert "import os" not in source
    assert "import functools" not in source
    assert "import torch" not in source


def test_imports_nothing_when_everything_is_bound():
    source, count = rewrite(ImportStandardModules, "import math\ny = math.pi\n")

    assert count == 0


def _arrangement(input, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((BLOCK_SIZE,)), output.tile((BLOCK_SIZE,))


def _gelu_tanh(input, output):
    x = ntl.cast(input, ntl.float32)
    inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
    # tanh(u) = 2 sigmoid(2u) - 1: the interpreter has no libdevice.
    output = 0.5 * x * (1 + 2 * ntl.sigmoid(2 * inner) - 1)  # noqa: F841


def _gelu_tanh_libdevice(input, output):
    x = ntl.cast(input, ntl.float32)
    inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)
    output = 0.5 * x * (1 + libdevice.tanh(inner))  # noqa: F841


def _without(kernel, pipeline, excluded, tmp_path):
    """A stand-in handle whose variant is built by ``pipeline`` less the passes ``excluded``."""

    source = run_pipeline(
        kernel.source("cuda"),
        tuple(step for step in pipeline if step not in excluded),
    ).source
    path = tmp_path / f"without_{'_'.join(step.__name__ for step in excluded)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    return types.SimpleNamespace(
        module=lambda name: module,
        source=kernel.source,
        kernel_name=kernel.kernel_name,
        launch_name=kernel.launch_name,
        launch=getattr(module, kernel.launch_name),
        # The UB model's layout facts (check_variant reports the model's bytes).
        entry=kernel.entry,
    )


def test_cpu_variant_of_a_kernel_using_math_imports_it_and_runs():
    """Level 3: the CPU variant imports ``math`` and matches torch.

    Without the pass it would run too, by accident: Triton 3.9's interpreter
    copies its own module's globals, ``math`` among them, into the globals
    of every kernel it rewrites (``_compile_and_exec`` in
    triton/runtime/interpreter.py). The NPU variant has no such luck (below).
    """

    x = torch.randn(300, generator=torch.Generator().manual_seed(0))
    expected = torch.nn.functional.gelu(x, approximate="tanh")
    kernel = ninetoothed_ascend.make(_arrangement, _gelu_tanh, (Tensor(1), Tensor(1)))

    assert "import math" not in kernel.source("cuda")
    assert "import math" in kernel.source("cpu")
    output = torch.empty_like(x)
    kernel.variant("cpu")(x, output)
    torch.testing.assert_close(output, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.ascend
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_npu_variant_of_gelu_with_math_and_libdevice_passes_the_compile_check(
    dtype, tmp_path
):
    from ninetoothed_ascend.check.compile_check import StageError, check_variant

    def launch(kernel, input):
        output = torch.empty_like(input)
        kernel(input, output)

        return output

    x = torch.randn(300).to(dtype)
    kernel = ninetoothed_ascend.make(
        _arrangement, _gelu_tanh_libdevice, (Tensor(1), Tensor(1))
    )
    results = check_variant(kernel, launch, x)
    assert all("func.func" in result.linalg for result in results)

    # Unimported, ``math`` is an unknown name to the frontend.
    broken = _without(
        kernel, pipelines.NPU, (ImportStandardModules, FoldMathConstants), tmp_path
    )

    with pytest.raises(StageError, match=r"(?s)\[ttir\].*math"):
        check_variant(broken, launch, x)

    # Imported, it still fails: the frontend makes ``math.pi`` a constexpr
    # that ``math.sqrt`` cannot take.
    broken = _without(kernel, pipelines.NPU, (FoldMathConstants,), tmp_path)

    with pytest.raises(StageError, match="__index__ returned non-int"):
        check_variant(broken, launch, x)


def _cuda_frontend(source, kernel_name, tmp_path):
    """Run CUDA Triton's frontend (``make_ir`` for sm_90; no GPU needed) on a module's kernel; return its error or ``None``.

    In a fresh process: Triton's interpreter, run by other tests, leaves
    ``triton.language`` patched in this one.
    """

    path = tmp_path / f"cuda_{len(list(tmp_path.iterdir()))}.py"
    path.write_text(source)

    return run_python(
        f"""
        import importlib.util, json
        from triton._C.libtriton import ir
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import ASTSource, make_backend

        spec = importlib.util.spec_from_file_location("kernel", {str(path)!r})
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kernel = module.{kernel_name}
        constexprs = [
            name for name, parameter in zip(kernel.arg_names, kernel.params)
            if parameter.is_constexpr
        ]
        signature = {{
            name: "constexpr" if name in constexprs
            else "*fp32" if name.endswith("pointer") else "i32"
            for name in kernel.arg_names
        }}
        constants = {{(kernel.arg_names.index(name),): 128 for name in constexprs}}
        target = GPUTarget("cuda", 90, 32)
        backend = make_backend(target)
        options = backend.parse_options({{}})
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        try:
            ASTSource(kernel, signature, constants).make_ir(
                target, options, backend.get_codegen_implementation(options),
                backend.get_module_map(), context,
            )
            error = None
        except Exception as exception:
            error = str(exception).splitlines()[-1]
        print(json.dumps(error))
        """,
        tmp_path / "cache",
    )


def test_cuda_variant_keeps_ninetoothed_s_missing_import(tmp_path):
    """The CUDA variant is NineToothed's source byte for byte, bug included: CUDA Triton's frontend fails on its unbound ``math``; the same source with the import passes."""

    pytest.importorskip("triton.backends.nvidia")
    kernel = ninetoothed_ascend.make(_arrangement, _gelu_tanh, (Tensor(1), Tensor(1)))

    assert "math is not defined" in _cuda_frontend(
        kernel.source("cuda"), kernel.kernel_name, tmp_path
    )

    fixed = run_pipeline(kernel.source("cuda"), (ImportStandardModules,)).source
    assert _cuda_frontend(fixed, kernel.kernel_name, tmp_path) is None
