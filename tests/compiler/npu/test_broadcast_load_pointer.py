"""BroadcastLoadPointer: a load whose mask is larger than its pointer block.

Level 1 (the AST) in the CUDA Triton environment, level 2 (ttir and
ttadapter) in the triton-ascend one.
"""

import importlib.util

import pytest
from helpers import assert_no_rewrite, rewrite

from ninetoothed_ascend.compiler.npu.broadcast_load_pointer import BroadcastLoadPointer
from ninetoothed_ascend.compiler.passes import run_pipeline
from ninetoothed_ascend.compiler.pipelines import NPU

#: The shape of NineToothed's load of a tile expanded inside the program:
#: the pointer spans the columns only, the mask rows and columns.
KERNEL = """
import triton
import triton.language

@triton.jit
def kernel(bias_pointer, output_pointer, size):
    columns = triton.language.arange(0, 32)[None, :]
    bias = triton.language.load(bias_pointer + triton.language.arange(0, 32)[None, :], mask=(triton.language.arange(0, 32)[:, None] < 32) & (triton.language.arange(0, 32)[None, :] < size), other=0)
    triton.language.store(output_pointer + triton.language.arange(0, 32)[:, None] * 32 + columns, bias + 1)
"""


def test_rewrites_a_load_whose_mask_spans_an_axis_its_pointer_lacks():
    source, count = rewrite(BroadcastLoadPointer, KERNEL)

    assert count == 1
    # The column term bounds the pointer's own axis: the block is loaded
    # under it alone, a mask triton-adapter-opt folds into the copied
    # extent, and the whole mask selects afterwards.
    assert (
        "bias = ninetoothed_ascend_load_under_mask_of_pointer(bias_pointer + "
        "triton.language.arange(0, 32)[None, :], "
        "triton.language.arange(0, 32)[None, :] < size, "
        "(triton.language.arange(0, 32)[:, None] < 32) & (triton.language.arange(0, 32)[None, :] < size), 0)"
    ) in source
    helper = source[source.index("def ninetoothed_ascend_load_under_mask_of_pointer") :]
    helper = helper[: helper.index("@triton.jit")]
    assert "mask=mask_of_pointer" in helper
    assert helper.count("triton.language.load(") == 1


def test_a_mask_term_over_both_kinds_of_axes_keeps_the_reduction():
    source, count = rewrite(
        BroadcastLoadPointer,
        KERNEL.replace(
            "(triton.language.arange(0, 32)[:, None] < 32)",
            "(triton.language.arange(0, 32)[:, None] < triton.language.arange(0, 32)[None, :])",
        ),
    )

    assert count == 1
    assert "bias = ninetoothed_ascend_load_under_mask_0(bias_pointer +" in source
    # The helper reduces the mask over axis 0 only, and loads once.
    helper = source[source.index("def ninetoothed_ascend_load_under_mask_0") :]
    helper = helper[: helper.index("@triton.jit")]
    assert "axis=0, keep_dims=True" in helper
    assert "axis=1" not in helper
    assert helper.count("triton.language.load(") == 1


@pytest.mark.parametrize(
    "load",
    [
        # Pointer and mask span the same axes.
        "triton.language.load(p + triton.language.arange(0, 8)[:, None] + triton.language.arange(0, 8)[None, :], mask=triton.language.arange(0, 8)[:, None] < n, other=0)",
        # No mask.
        "triton.language.load(p + triton.language.arange(0, 8)[None, :])",
        # A keyword the helper would not pass on.
        "triton.language.load(p + triton.language.arange(0, 8)[None, :], mask=triton.language.arange(0, 8)[:, None] < n, other=0, eviction_policy='evict_last')",
        # A pointer through a name bound to a block: its axes are unknown.
        "triton.language.load(p + rows, mask=triton.language.arange(0, 8)[:, None] < n, other=0)",
    ],
)
def test_leaves_loads_it_need_not_or_cannot_judge(load):
    assert_no_rewrite(
        BroadcastLoadPointer,
        f"""
        import triton
        import triton.language

        @triton.jit
        def kernel(p, n):
            rows = triton.language.arange(0, 8)[None, :] * 8
            x = {load}
        """,
    )


def test_one_helper_per_set_of_missing_axes():
    source, count = rewrite(
        BroadcastLoadPointer,
        """
        import triton
        import triton.language

        @triton.jit
        def kernel(p, n):
            a = triton.language.load(p + triton.language.arange(0, 8)[None, :], mask=triton.language.arange(0, 8)[:, None] < n, other=0)
            b = triton.language.load(p + triton.language.arange(0, 8)[None, :] * 2, mask=triton.language.arange(0, 8)[:, None] < n, other=0)
            c = triton.language.load(p, mask=(triton.language.arange(0, 8)[:, None] < n) & (triton.language.arange(0, 8)[None, :] < n), other=0)
        """,
    )

    assert count == 3
    assert source.count("def ninetoothed_ascend_load_under_mask_0(") == 1
    assert source.count("def ninetoothed_ascend_load_under_mask_0_1(") == 1


def test_is_in_the_npu_pipeline():
    assert BroadcastLoadPointer in NPU


def _compile(source, tmp_path):
    from ninetoothed_ascend.check.compile_check import compile_stages

    path = tmp_path / "load_broadcast.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signature = {"bias_pointer": "*fp16", "output_pointer": "*fp16", "size": "i32"}

    return compile_stages(module.kernel, signature, {})[0]


@pytest.mark.ascend
def test_mask_larger_than_pointer_fails_without_broadcast_load_pointer(tmp_path):
    """Level 2: Triton 3.2's frontend refuses the load as NineToothed writes it; the pass's rewrite clears ttir and ttadapter."""

    from ninetoothed_ascend.check.compile_check import StageError

    with pytest.raises(
        StageError,
        match=r"Cannot broadcast, the expanded size of the tensor \(1\) must match "
        r"the existing size \(32\) at non-singleton dimension 0: \[32, 32\], \[1, 32\]",
    ):
        _compile(KERNEL, tmp_path)

    rewritten = run_pipeline(KERNEL, (BroadcastLoadPointer,))

    assert rewritten.rewrites == (("BroadcastLoadPointer", 1),)
    assert "func.func" in _compile(rewritten.source, tmp_path)
