"""DropAscendLaunchOptions: on a small module (level 1) and on the NPU variant of a row sort, whose launch ``SolveSyncByInjection`` gives ``sync_solver=False``."""

from helpers import rewrite, sort_rows

from ninetoothed_ascend.compiler.emulation.drop_ascend_launch_options import (
    DropAscendLaunchOptions,
)

MODULE = """
import triton
import triton.language as tl

@triton.jit
def kernel(x_pointer):
    tl.store(x_pointer, 1)

def launch_kernel(x):
    kernel[(1,)](x, num_warps=8, sync_solver=False)
"""


def test_a_launch_loses_the_options_only_triton_ascend_takes():
    source, count = rewrite(DropAscendLaunchOptions, MODULE)

    assert count == 1
    assert source.splitlines()[-1] == "    kernel[1,](x, num_warps=8)"


def test_the_emulations_of_a_sort_launch_without_the_sync_solver():
    kernel = sort_rows()

    assert "sync_solver=False" in kernel.source("npu")
    assert "sync_solver" not in kernel.emulated_source("cuda").source
    assert "sync_solver" not in kernel.emulated_source("cpu").source
