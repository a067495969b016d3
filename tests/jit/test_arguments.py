"""Launch-time argument checks of the NPU and CPU variants.

NineToothed's launch reads a shorter operand as padding, a 2-D tensor given
to a 1-D kernel along its first dimension, and fails inside the generated
source on a 0-d tensor; the variants that are ours refuse these with a
``ValueError`` that names the kernel, the variant, the argument, and expected
against given.
"""

import dataclasses

import pytest
import torch
from conftest import EXAMPLE_NAMES
from helpers import shared_example

from ninetoothed_ascend import examples
from ninetoothed_ascend.jit import arguments


def add(*shapes):
    module = shared_example("add")
    return module.kernel, [torch.ones(shape) for shape in shapes]


@pytest.mark.parametrize(
    "shapes, message",
    [
        (
            [(100,), (90,), (100,)],
            "argument 2 (`{1}`) must have size 100 in dimension 0, as argument 1 "
            "(`{0}`) has in dimension 0 (the arrangement reads them together); "
            "given 90 (shape (90,))",
        ),
        (
            [(10, 10), (10, 10), (10, 10)],
            "argument 1 (`{0}`) must have 1 dimensions, given a tensor of shape "
            "(10, 10) (2 dimensions)",
        ),
        (
            [(), (), ()],
            "argument 1 (`{0}`) must have 1 dimensions, given a tensor of shape () "
            "(0 dimensions)",
        ),
    ],
    ids=["shorter-operand", "2-d-to-1-d", "0-d"],
)
def test_the_cpu_variant_refuses_arguments_the_arrangement_cannot_take(shapes, message):
    kernel, tensors = add(*shapes)
    parameters = kernel.requirements.parameters
    before = [tensor.clone() for tensor in tensors]

    with pytest.raises(ValueError) as raised:
        kernel(*tensors)

    assert str(raised.value) == "kernel `add` (cpu variant): " + message.format(
        *parameters
    )
    # Refused before launching: nothing was written.
    assert all(torch.equal(a, b) for a, b in zip(tensors, before))


def test_arguments_that_match_run():
    kernel, (x, y, output) = add((100,), (100,), (100,))

    kernel(x, y, output)

    assert torch.equal(output, x + y)


def test_not_a_tensor_is_named():
    kernel, (x, y, _) = add((4,), (4,), (4,))

    with pytest.raises(
        TypeError, match="must be a torch.Tensor with 1 dimensions, given float"
    ):
        kernel(x, y, 3.0)


def test_meta_tensors_are_checked_by_shape_only():
    # Placeholders of tensors a kernel does not read (add's, as if it read
    # none): their shapes are checked, their data never.
    kernel = shared_example("add").kernel
    required = kernel.requirements
    launched = []
    checked = arguments.checked(
        lambda *args: launched.append(args),
        dataclasses.replace(required, accessed=()),
        "add",
        "npu",
    )
    x, y = (torch.empty(8, device="meta") for _ in range(2))

    checked(x, y, torch.empty(8, device="meta"))

    assert len(launched) == 1

    with pytest.raises(ValueError, match="must have size 8 in dimension 0"):
        checked(x, y, torch.empty(9, device="meta"))

    # add reads all three.
    assert required.accessed == (0, 1, 2)


def test_the_cuda_variant_keeps_ninetoothed_behaviour_unless_asked(monkeypatch):
    monkeypatch.delenv(arguments.CHECK_VARIABLE, raising=False)

    assert arguments.requested("cpu") and arguments.requested("npu")
    assert not arguments.requested("cuda")

    monkeypatch.setenv(arguments.CHECK_VARIABLE, "1")

    assert arguments.requested("cuda")


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_example_s_own_inputs_pass_the_check(name):
    # What the check requires is read from the source alone: the examples'
    # own calls, of every case, contiguous or not, must all pass it.
    module = shared_example(name)
    kernel = module.kernel

    if kernel.requirements is None:
        pytest.skip(f"{name}'s launch is not checked (no requirements read)")

    checked = arguments.checked(lambda *args: None, kernel.requirements, name, "cpu")

    class Handle:
        def __call__(self, *args, **kwargs):
            return checked(*args, **kwargs)

    for case in examples.cases(module):
        for inputs in (
            module.inputs("cpu", examples.dtypes(module)[0], **case),
            examples.noncontiguous(
                module.inputs("cpu", examples.dtypes(module)[0], **case)
            ),
        ):
            try:
                module.launch(Handle(), *inputs)
            except (ValueError, TypeError) as error:
                assert f"kernel `{name}`" not in str(error), str(error)
            except Exception:  # the launch's own work on a result not computed
                pass
