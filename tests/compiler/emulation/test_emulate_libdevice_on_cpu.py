"""EmulateLibdeviceOnCpu: triton-ascend's libdevice as core Triton or NumPy on the CPU."""

import pytest
from helpers import rewrite
from libdevice_helpers import MAPPED, PORTABLE, npu_call

from ninetoothed_ascend.compiler.emulation.emulate_libdevice_on_cpu import (
    EmulateLibdeviceOnCpu,
)


@pytest.mark.parametrize("name", MAPPED)
def test_cpu_mapping_calls_core_triton_or_numpy(name):
    source, _ = rewrite(EmulateLibdeviceOnCpu, npu_call(name))
    function = PORTABLE[name]

    assert "extra.ascend" not in source and "extra.cann" not in source
    assert "ld." not in source
    if function.cpu is None:
        assert f"ninetoothed_numpy_elementwise({name!r}" in source
    else:
        assert "@triton.jit" in source
