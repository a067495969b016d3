"""SolveSyncByInjection: on small modules (level 1), and the launch option reaching BiShengIR's command line as ``check`` compiles a launch (level 3)."""

import pytest
import torch
from helpers import (
    assert_no_rewrite,
    launch_sort_rows,
    rewrite,
    rows_to_sort,
    sort_rows,
)

from ninetoothed_ascend.compiler.npu.solve_sync_by_injection import (
    SYNC_SOLVER,
    SolveSyncByInjection,
)

MODULE = """
import triton
import triton.language as tl

@triton.jit
def network(x):
    return tl.standard.sort(x, 0, False)

@triton.jit
def sorts(x_pointer):
    tl.store(x_pointer + tl.arange(0, 16), SORTED)

@triton.jit
def copies(x_pointer):
    tl.store(x_pointer + tl.arange(0, 16), tl.load(x_pointer + tl.arange(0, 16)))

sorts_with_auto_tuning = triton.autotune(configs=[triton.Config({})], key=[])(sorts)

def launch_sorts(x):
    sorts[(1,)](x, num_warps=8)
    sorts_with_auto_tuning[(1,)](x)
    copies[(1,)](x)
"""


@pytest.mark.parametrize(
    "sorted_",
    (
        "network(tl.load(x_pointer + tl.arange(0, 16)))",
        "tl.standard.sort(tl.load(x_pointer + tl.arange(0, 16)))",
    ),
    ids=("through-a-helper", "in-the-kernel"),
)
def test_launches_of_a_kernel_holding_a_sorting_network_solve_sync_by_injection(
    sorted_,
):
    source, count = rewrite(SolveSyncByInjection, MODULE.replace("SORTED", sorted_))

    assert count == 2
    assert source.splitlines()[-3:] == [
        "    sorts[1,](x, num_warps=8, sync_solver=False)",
        "    sorts_with_auto_tuning[1,](x, sync_solver=False)",
        "    copies[1,](x)",
    ]


def test_a_launch_that_states_the_sync_solver_keeps_it():
    source = MODULE.replace("SORTED", "network(tl.load(x_pointer))").replace(
        "sorts[(1,)](x, num_warps=8)", "sorts[(1,)](x, sync_solver=True)"
    )

    source, count = rewrite(SolveSyncByInjection, source)

    assert count == 1
    assert "sorts[1,](x, sync_solver=True)" in source


def test_a_module_without_a_sorting_network_is_left_alone():
    assert_no_rewrite(
        SolveSyncByInjection,
        MODULE.replace(
            "SORTED", "tl.sort(tl.load(x_pointer + tl.arange(0, 16)))"
        ).replace("    return tl.standard.sort(x, 0, False)", "    return x"),
    )


@pytest.mark.ascend
@pytest.mark.parametrize("dtype", (torch.int32, torch.int64))
def test_check_compiles_the_network_with_the_launchs_sync_solver(dtype):
    """What ``check`` hands BiShengIR: the launch's ``sync_solver=False`` as ``--enable-hivm-graph-sync-solver=False``."""

    from ninetoothed_ascend.check import bishengir
    from ninetoothed_ascend.check.compile_check import launch_arguments

    kernel = sort_rows()
    _, arguments = launch_arguments(
        kernel.module("npu"), kernel, launch_sort_rows, (rows_to_sort(dtype),)
    )

    assert [options[SYNC_SOLVER] for *_, options in arguments] == [False]
    assert "--enable-hivm-graph-sync-solver=False" in bishengir.compile_command(
        "kernel.ttadapter.mlir", "kernel", options=arguments[0][-1]
    )
