"""PersistentGrid: on small modules (level 1) and on the examples' launches."""

import ast

import pytest
import torch
from helpers import rewrite, shared_example
from ub_helpers import AUTOTUNED, record_launch

from ninetoothed_ascend.compiler.npu.persistent_grid import PersistentGrid
from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import (
    kernel_configs,
)
from ninetoothed_ascend.compiler.passes import RewriteError
from ninetoothed_ascend.compiler.target import soc


def test_persistent_grid_loops_over_tasks_and_caps_the_grid():
    source, count = rewrite(PersistentGrid, AUTOTUNED)

    assert count == 1
    assert "ninetoothed_first_task = triton.language.program_id(0)" in source
    assert (
        "ninetoothed_num_tasks = (n + B - 1) // B\n"
        "    for pid in range(ninetoothed_first_task, ninetoothed_num_tasks, "
        "triton.language.num_programs(0)):\n        x = " in source
    )
    assert (
        "lambda meta: (min((p.size(0) + meta['B'] - 1) // meta['B'], "
        "ninetoothed_num_cores(False)),)" in source
    )


def test_persistent_grid_uses_ai_cores_for_dot_kernels():
    source, _ = rewrite(
        PersistentGrid,
        """
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(a, b, c, n):
            pid = tl.program_id(0)
            tl.store(c, tl.dot(tl.load(a), tl.load(b)))
        def launch(a, b, c):
            kernel[lambda meta: (a.size(0),)](a, b, c, a.size(0))
        """,
    )

    assert "ninetoothed_num_cores(True)" in source


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ("(a.size(0), 2)", "not a one-element tuple"),
        ("(a.size(1),)", "uses `a.size\\(1\\)`"),
    ],
)
def test_persistent_grid_refuses_what_it_cannot_rewrite(grid, message):
    with pytest.raises(RewriteError, match=message):
        rewrite(
            PersistentGrid,
            f"""
            import triton
            import triton.language as tl
            @triton.jit
            def kernel(a, n):
                pid = tl.program_id(0)
            def launch(a):
                kernel[lambda meta: {grid}](a, a.size(0))
            """,
        )


def test_npu_grid_never_exceeds_the_cores_even_for_two_billion_elements():
    module = shared_example("add")
    size = 2**31 - 1
    inputs = tuple(torch.empty(size, device="meta") for _ in range(2))
    grid, _, _ = record_launch(module, inputs)
    configs = kernel_configs(ast.parse(module.kernel.source("npu")))[0][1]

    for config in configs:
        tasks = -(-size // next(iter(config.values())))

        assert tasks > 65535
        assert grid(config) == (soc().num_vectorcore,)


def test_npu_grid_is_the_task_count_when_it_is_smaller_than_the_cores():
    module = shared_example("add")
    inputs = tuple(torch.empty(100, device="meta") for _ in range(2))
    grid, _, _ = record_launch(module, inputs)
    (name,) = kernel_configs(ast.parse(module.kernel.source("npu")))[0][1][0]

    assert grid({name: 64}) == (2,)


def test_persistent_grid_gives_each_task_its_own_copy_of_reassigned_parameters():
    source, _ = rewrite(
        PersistentGrid,
        """
        import triton
        import triton.language as tl
        @triton.jit
        def kernel(offsets, n, seq_len):
            pid = tl.program_id(0)
            x = seq_len + 1
            seq_len = tl.load(offsets + pid + 1) - tl.load(offsets + pid)
            tl.store(offsets, seq_len + x)
        def launch(a):
            kernel[lambda meta: (a.size(0),)](a, a.size(0), 3)
        """,
    )

    assert "x = seq_len + 1" in source
    assert "seq_len_in_task = tl.load(offsets + pid + 1)" in source
    assert "tl.store(offsets, seq_len_in_task + x)" in source
