"""A call with zero elements launches nothing on the NPU and stays right on the other variants.

Level 1 (what the NPU variant's launch function does, the kernel replaced by
a recorder) and level 4 (the emulated NPU variant and the CPU variant on
Triton's interpreter, against torch). Nothing here ran on an NPU.
"""

import pytest
import torch
from helpers import load_example


def npu_launches(module, *inputs):
    handle = module.kernel
    npu = handle.module("npu")
    launched = f"{handle.kernel_name}_with_auto_tuning"
    launched = launched if launched in vars(npu) else handle.kernel_name
    saved, grids = vars(npu)[launched], []

    class Recorder:
        def __call__(self):
            return self

        def __getitem__(self, grid):
            grids.append(grid)

            return lambda *args, **kwargs: None

    vars(npu)[launched] = Recorder()

    try:
        module.launch(getattr(npu, handle.launch_name), *inputs)
    finally:
        vars(npu)[launched] = saved

    return grids


@pytest.mark.parametrize("size", [0, 1, 5000])
def test_npu_variant_launches_only_when_there_are_tasks(size):
    module = load_example("add")
    inputs = tuple(torch.empty(size) for _ in range(2))

    assert len(npu_launches(module, *inputs)) == (1 if size else 0)


def test_a_row_kernel_launches_only_when_there_are_rows():
    # One task per row: zero rows launch nothing, three rows launch once.
    module = load_example("softmax")

    assert npu_launches(module, torch.empty(0, 8)) == []
    assert len(npu_launches(module, torch.empty(3, 8))) == 1


@pytest.mark.parametrize("variant", ["cpu", "emulated"])
def test_empty_add_is_empty_on_the_interpreter(variant):
    module = load_example("add")
    launch = (
        module.kernel.emulated("cpu")
        if variant == "emulated"
        else module.kernel.variant("cpu")
    )
    input, other = torch.empty(0), torch.empty(0)

    output = module.launch(launch, input, other)

    assert output.shape == (0,)
