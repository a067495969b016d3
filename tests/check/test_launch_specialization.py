"""Level 2: the compile check compiles what triton-ascend 3.2's JIT compiles for the recorded launch (integers equal to 1 as constants, divisibility by 16)."""

import pytest
import torch
from helpers import shared_example

from ninetoothed_ascend.check.compile_check import (
    compile_arguments,
    compile_stages,
    launch_arguments,
)

pytestmark = pytest.mark.ascend


def _add_arguments(*inputs):
    module = shared_example("add")
    handle = module.kernel

    return launch_arguments(handle.module("npu"), handle, module.launch, inputs)


def test_a_stride_of_one_becomes_a_constant_and_pointers_are_divisible_by_16():
    kernel, arguments = _add_arguments(
        *shared_example("add").inputs("cpu", torch.float32)
    )
    config, signature, constants, attrs, _ = arguments[-1]
    strides = [name for name in kernel.arg_names if name.endswith("_stride_0")]
    pointers = [
        kernel.arg_names.index(name)
        for name in signature
        if signature[name].startswith("*")
    ]

    assert len(strides) == 3
    assert all(constants[name] == 1 for name in strides)
    assert set(pointers) <= set(attrs.to_dict()["arg_properties"]["tt.divisibility"])
    assert config.items() <= constants.items()


def test_a_pointer_off_16_byte_alignment_is_not_marked_divisible():
    input, other = shared_example("add").inputs("cpu", torch.float32)
    # One element into a larger buffer: the data pointer is 4 bytes past an aligned one.
    shifted = torch.empty(input.numel() + 1)[1:].copy_(input)
    kernel, arguments = _add_arguments(shifted, other)
    _, signature, _, attrs, _ = arguments[0]
    divisible = attrs.to_dict()["arg_properties"]["tt.divisibility"]
    first, second, _ = (
        kernel.arg_names.index(name) for name in signature if signature[name] == "*fp32"
    )

    assert first not in divisible
    assert second in divisible


def test_the_specialized_kernel_has_unit_stride_accesses_where_the_plain_one_has_unknown_strides():
    """examples/elementwise/add.py fp32, its largest block: every ``memref`` view of the launch is ``strided<[1]>``."""

    module = shared_example("add")
    handle = module.kernel
    inputs = module.inputs("cpu", torch.float32)
    kernel, plain = compile_arguments(
        handle.module("npu"), handle, module.launch, inputs, "npu"
    )
    _, specialized = launch_arguments(
        handle.module("npu"), handle, module.launch, inputs
    )
    signature, constants = plain[-1]
    _, launch_signature, launch_constants, attrs, _ = specialized[-1]

    unspecialized, _ = compile_stages(kernel, signature, constants)
    launched, _ = compile_stages(
        kernel, launch_signature, launch_constants, attrs=attrs
    )

    assert "strided<[?]" in unspecialized
    assert "strided<[?]" not in launched
    assert "strided<[1]" in launched
