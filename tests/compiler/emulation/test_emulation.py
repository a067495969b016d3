"""Emulation: the NPU variant with its Ascend-only symbols mapped, run on the CPU interpreter against torch, and its dispatch."""

import sys

import pytest
import torch
from helpers import example_cases, load_example, shared_example

import ninetoothed_ascend
from ninetoothed_ascend import examples
from ninetoothed_ascend.compiler import emulation, pipelines
from ninetoothed_ascend.compiler.passes import (
    Pass,
    RewriteError,
)


@pytest.mark.parametrize(("name", "dtype", "case"), example_cases("emulation"))
def test_emulated_npu_variant_matches_torch_on_the_cpu(name, dtype, case):
    """Level 3 (CPU interpreter): every example's NPU variant, emulated, against torch."""

    module = shared_example(name)
    result = examples.compare(module, module.kernel.emulated("cpu"), "cpu", dtype, case)

    assert result.matches, f"max abs error {result.max_abs_error}"


def test_libdevice_example_npu_variant_uses_the_ascend_module_and_runs_emulated():
    module = shared_example("libdevice_math")
    npu = module.kernel.source("npu")
    emulated = module.kernel.emulated_source("cpu")

    assert "triton.language.extra.ascend import libdevice" in npu
    assert dict(emulated.rewrites)["EmulateLibdeviceOnCpu"] >= 3
    assert "numpy_elementwise('tanh'" in emulated.source

    result = examples.compare(
        module, module.kernel.emulated("cpu"), "cpu", torch.float32
    )

    assert result.matches, f"max abs error {result.max_abs_error}"


def _spy(monkeypatch, handle, method):
    calls = []
    original = getattr(handle, method)

    def spy(name):
        calls.append(name)

        return original(name)

    monkeypatch.setattr(handle, method, spy)

    return calls


@pytest.mark.parametrize("value", ["1", None])
def test_the_environment_variable_switches_cpu_dispatch_to_the_emulated_npu_variant(
    monkeypatch, value
):
    if value is None:
        monkeypatch.delenv(emulation.ENVIRONMENT_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(emulation.ENVIRONMENT_VARIABLE, value)

    module = load_example("add")
    emulated = _spy(monkeypatch, module.kernel, "emulated")
    variants = _spy(monkeypatch, module.kernel, "variant")
    input, other = module.inputs("cpu", torch.float32)

    torch.testing.assert_close(
        module.launch(module.kernel, input, other), input + other
    )
    torch.testing.assert_close(
        module.launch(module.kernel, input, other), input + other
    )

    # Chosen once, at the first call with CPU tensors.
    assert (emulated, variants) == ((["cpu"], []) if value else ([], ["cpu"]))


def test_emulation_failure_names_kernel_variant_pass_and_remedy(monkeypatch):
    class Refuses(Pass):
        def visit_Module(self, node):
            raise RewriteError("cannot map this.", "Do something else.")

    monkeypatch.setitem(pipelines.EMULATIONS, "cpu", (Refuses,))
    module = load_example("add")

    with pytest.raises(
        ninetoothed_ascend.VariantUnavailableError,
        match=r"the npu variant of kernel `add` cannot be emulated on cpu: "
        r"pass Refuses: cannot map this. Do something else.",
    ):
        module.kernel.emulated("cpu")


def test_unknown_device_type_cannot_emulate():
    with pytest.raises(KeyError, match="'npu' cannot emulate"):
        load_example("add").kernel.emulated("npu")


def _cuda_make_ir_for_signature(kernel, signature, constants):
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    options = backend.parse_options({})
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)

    return str(
        ASTSource(
            kernel, signature | dict.fromkeys(constants, "constexpr"), constants
        ).make_ir(
            target,
            options,
            backend.get_codegen_implementation(options),
            backend.get_module_map(),
            context,
        )
    )


#: ``(kernel's cache key, signature, constants)`` of each compile that passed
#: CUDA Triton's frontend in this process. Shape cases of one example and
#: dtype often give the same signature and constants (a size is an ``i32``
#: whatever its value): the same input to the same frontend, compiled once.
_PASSED_FRONTEND = set()


@pytest.mark.parametrize(("name", "dtype", "case"), example_cases("emulation"))
def test_emulated_cuda_variant_of_every_example_passes_cuda_tritons_frontend(
    name, dtype, case, pristine_triton_language
):
    """Without a GPU: the module ``handle.emulated("cuda")`` imports, and its kernel, called as the example calls it, passes CUDA Triton's frontend for sm_90 with each autotune config."""

    from ninetoothed_ascend.check import compile_check

    module = shared_example(name)
    handle = module.kernel
    emulated = sys.modules[handle.emulated("cuda").__module__]
    kernel, arguments = compile_check.compile_arguments(
        emulated, handle, module.launch, module.inputs("cpu", dtype, **case), "cuda"
    )

    for signature, constants in arguments:
        compile_input = (
            kernel.cache_key,
            repr(sorted(signature.items())),
            repr(sorted(constants.items(), key=repr)),
        )

        if compile_input not in _PASSED_FRONTEND:
            assert "tt.func" in _cuda_make_ir_for_signature(
                kernel, signature, constants
            )
            _PASSED_FRONTEND.add(compile_input)
