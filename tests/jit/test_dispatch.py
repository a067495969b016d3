"""The per-kernel ``__call__`` (``jit/dispatch.py``): same results and errors as the generic path."""

import pytest
import torch
from helpers import load_example
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.launch import read_launch_facts
from ninetoothed_ascend.jit import dispatch
from ninetoothed_ascend.jit.handle import Handle


def test_handles_get_a_call_specialized_to_their_launch_function():
    kernel = load_example("add").kernel

    assert type(kernel) is not Handle and isinstance(kernel, Handle)
    assert type(kernel).__call__ is not Handle.__call__


def test_specialized_call_runs_the_variant_by_position_and_by_keyword():
    module = load_example("rms_norm")
    input, weight = module.inputs("cpu", torch.float32)
    expected = module.reference(input, weight)
    parameters = module.kernel.entry.launch["parameters"]
    output = torch.empty_like(input)
    arguments = (input, weight.view(1, -1), 1e-6, input.shape[-1], output, 1024)

    module.kernel(*arguments)
    torch.testing.assert_close(output, expected)

    output.zero_()
    module.kernel(**dict(zip(parameters, arguments)))
    torch.testing.assert_close(output, expected)


def test_specialized_call_keeps_the_generic_errors():
    kernel = load_example("add").kernel
    on_cpu = torch.ones(4)
    on_meta = torch.ones(4, device="meta")

    with pytest.raises(
        ninetoothed_ascend.VariantUnavailableError,
        match=f"kernel `{kernel.kernel_name}` got only meta tensors",
    ):
        kernel(on_meta, on_meta, on_meta)

    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        kernel(on_cpu, on_cpu)


def test_a_parameter_named_like_the_generated_code_keeps_the_generic_call():
    kernel = load_example("add").kernel
    first, *_ = kernel.entry.launch["parameters"]
    source = kernel.source("cuda").replace(first, "self")
    entry = kernel.entry
    entry = type(entry)(
        entry.kernel_name,
        entry.launch_name,
        entry.variants | {"cuda": type(entry.variants["cuda"])(source)},
        launch=read_launch_facts(source, entry.kernel_name, entry.launch_name),
    )

    assert type(dispatch.new_handle(kernel.kernel_name, kernel.key, entry)) is Handle


@pytest.mark.parametrize("emulate", ("0", "1"))
def test_a_kernel_that_skips_an_optional_input_runs_with_a_meta_placeholder(
    emulate, monkeypatch
):
    monkeypatch.setenv("NINETOOTHED_ASCEND_EMULATE_NPU", emulate)

    def arrangement(input, bias, output):
        return input.tile((4,)), bias.tile((4,)), output.tile((4,))

    def application(input, bias, output):
        output = input * 2  # noqa: F841

    kernel = ninetoothed_ascend.make(
        arrangement, application, (Tensor(1), Tensor(1), Tensor(1))
    )
    input = torch.arange(6.0)
    output = torch.empty(6)

    kernel(input, torch.empty(0, device="meta"), output)

    torch.testing.assert_close(output, input * 2)
