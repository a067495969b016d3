"""The three variants of the example kernels, and per-call dispatch."""

import ninetoothed
import pytest
import torch
from conftest import EXAMPLE_NAMES
from helpers import example_cases, load_example, shared_example

import ninetoothed_ascend
from ninetoothed_ascend import examples
from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.passes import Pass, RewriteError
from ninetoothed_ascend.jit import ninetoothed_adapter


def ninetoothed_reference_source(module):
    """What plain NineToothed generates for the example, under the same device properties."""

    # Plain NineToothed: importing ninetoothed_ascend replaced ninetoothed.make.
    with (
        ninetoothed_ascend.disabled(),
        ninetoothed_adapter.driver_reporting(ninetoothed_adapter.device_properties()),
    ):
        if hasattr(module, "tensors"):
            handle = ninetoothed.make(
                module.arrangement,
                module.application,
                module.tensors,
                kernel_name=module.kernel.kernel_name,
            )
        else:
            handle = ninetoothed.jit(getattr(module, module.kernel.kernel_name))

    with open(ninetoothed_adapter.handle_path(handle), encoding="utf-8") as file:
        return file.read()


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_cuda_variant_is_ninetoothed_output_byte_for_byte(name):
    module = load_example(name)

    assert module.kernel.source("cuda") == ninetoothed_reference_source(module)


@pytest.mark.parametrize(("name", "dtype", "case"), example_cases("cpu"))
def test_cpu_tensors_run_the_cpu_variant_and_match_torch(name, dtype, case):
    """Level 4 (emulation on the CPU interpreter): the handle's result equals torch's."""

    module = shared_example(name)
    result = examples.compare(module, module.kernel, "cpu", dtype, case)

    assert result.matches, f"max abs error {result.max_abs_error}"


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_npu_variant_differs_from_cuda_by_the_reported_rewrites(name):
    module = load_example(name)
    rewrites = dict(module.kernel.rewrites("npu"))

    assert rewrites["FoldTrueMask"] >= 1
    assert "True &" in module.kernel.source("cuda")
    assert "True &" not in module.kernel.source("npu")


class OnAnotherDevice(torch.Tensor):
    """A CPU tensor that reports a device type this machine has no hardware for."""

    is_cpu = False
    device = torch.device("xpu")


def test_mixed_device_types_raise():
    module = load_example("add")
    on_cpu = torch.ones(4)
    elsewhere = torch.ones(4).as_subclass(OnAnotherDevice)

    with pytest.raises(
        ninetoothed_ascend.MixedDevicesError, match="kernel `add`.*cpu and xpu"
    ):
        module.kernel(on_cpu, elsewhere, on_cpu)


def test_device_type_without_variant_raises():
    module = load_example("add")
    elsewhere = torch.ones(4).as_subclass(OnAnotherDevice)

    with pytest.raises(
        ninetoothed_ascend.VariantUnavailableError, match="device type 'xpu'"
    ):
        module.kernel(elsewhere, elsewhere, elsewhere)


def test_variant_forces_one_variant():
    module = load_example("add")
    input, other = module.inputs("cpu", torch.float32)

    output = module.launch(module.kernel.variant("cpu"), input, other)

    torch.testing.assert_close(output, input + other)


def test_unknown_variant_name_raises():
    with pytest.raises(KeyError, match="'tpu' is not a variant"):
        load_example("add").kernel.source("tpu")


class _Refuses(Pass):
    def visit_Module(self, node):
        raise RewriteError(
            "this kernel uses a construct Ascend lacks.",
            "Rewrite the kernel without it.",
        )


def test_npu_failure_leaves_cuda_and_cpu_variants_working(monkeypatch):
    monkeypatch.setitem(pipelines.VARIANTS, "npu", (_Refuses,))
    module = load_example("add")
    input, other = module.inputs("cpu", torch.float32)

    torch.testing.assert_close(
        module.launch(module.kernel, input, other), input + other
    )
    assert module.kernel.source("cuda")

    with pytest.raises(
        ninetoothed_ascend.VariantUnavailableError,
        match=r"the npu variant of kernel `add` cannot be built for triton-ascend: "
        r"pass _Refuses: this kernel uses a construct Ascend lacks. Rewrite the kernel without it.",
    ):
        module.kernel.variant("npu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without a GPU")
def test_generation_needs_no_driver():
    import triton

    with pytest.raises(RuntimeError, match="active drivers"):
        triton.runtime.driver.active.get_current_device()

    assert load_example("matmul").kernel.source("cuda")

    # The stand-in driver was scoped to generation.
    with pytest.raises(RuntimeError, match="active drivers"):
        triton.runtime.driver.active.get_current_device()
