"""ConfineMaskedLanes, on small modules (level 1).

The lowered level (a masked gather load faults before the pass and not
after, fenced) is in tests/check/test_lowered_run.py; every example,
fenced, in tests/check/test_lowered_examples.py.
"""

import ast
import textwrap

import pytest
from helpers import assert_no_rewrite, rewrite

from ninetoothed_ascend.compiler.npu.broadcast_load_pointer import BroadcastLoadPointer
from ninetoothed_ascend.compiler.npu.confine_masked_lanes import ConfineMaskedLanes
from ninetoothed_ascend.compiler.npu.contiguous_flat_access import ContiguousFlatAccess
from ninetoothed_ascend.compiler.npu.transpose_strided_tiles import (
    TransposeStridedTiles,
)
from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import FitUnifiedBuffer
from ninetoothed_ascend.compiler.pipelines import NPU


def _kernel(body, parameters="x_pointer, y_pointer, n, c, s"):
    lines = textwrap.indent(textwrap.dedent(body).strip(), "    ")

    return f"""
import triton
import triton.language as tl

@triton.jit
def kernel({parameters}):
    offs = tl.arange(0, 16)
{lines}
"""


def _loads(source):
    return [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.load"
    ]


def test_a_masked_gather_load_reads_offset_zero_on_its_masked_out_lanes():
    # The offset times the mask: 0 where the mask is off.
    source, count = rewrite(
        ConfineMaskedLanes,
        _kernel(
            "x = tl.load(x_pointer + (offs // c * s + offs % c), mask=offs < n, other=0)"
        ),
    )

    assert count == 1
    (load,) = _loads(source)
    assert ast.unparse(load.args[0]) == (
        "x_pointer + (offs // c * s + offs % c) * (offs < n)"
    )
    assert ast.unparse(load.keywords[0].value) == "offs < n"


@pytest.mark.parametrize(
    "statement",
    [
        # Affine: triton-adapter-opt folds the mask into the copied extent.
        "x = tl.load(x_pointer + offs * s, mask=offs < n, other=0)",
        "x = tl.load(x_pointer + (c * 16 + offs), mask=offs < n, other=0)",
        # A gather without a mask reads only what it addresses.
        "x = tl.load(x_pointer + offs // c * s)",
        "x = tl.load(x_pointer + offs // c * s, mask=None)",
        # Stores: triton-adapter-opt guards each lane of a gather store.
        "tl.store(y_pointer + offs // c * s, 0, mask=offs < n)",
        # No summand is the tensor's pointer (one parameter, alone): nothing
        # to point a lane at.
        "x = tl.load(pointers, mask=offs < n, other=0)",
        "x = tl.load(x_pointer + n + offs // c, mask=offs < n, other=0)",
        # A // of a program's scalar is no gather.
        "x = tl.load(x_pointer + (n // c + offs), mask=offs < n, other=0)",
    ],
)
def test_leaves_loads_whose_masked_out_lanes_are_not_read(statement):
    assert_no_rewrite(
        ConfineMaskedLanes,
        _kernel(f"pointers = x_pointer + offs // c\n{statement}"),
    )


def test_an_index_tensor_is_a_gather_and_a_per_program_index_is_not():
    source, count = rewrite(
        ConfineMaskedLanes,
        _kernel(
            """
            index = tl.load(y_pointer + offs, mask=offs < n, other=0)
            entry = tl.load(y_pointer + c + tl.arange(0, 1))
            a = tl.load(x_pointer + index * s, mask=offs < n, other=0)
            b = tl.load(x_pointer + (entry * s + offs), mask=offs < n, other=0)
            """
        ),
    )

    assert count == 1
    assert "x_pointer + index * s * (offs < n)" in source
    assert "x_pointer + (entry * s + offs)" in source


def test_the_pointer_may_come_through_a_name_assigned_once():
    source, count = rewrite(
        ConfineMaskedLanes,
        _kernel(
            """
            pointers = x_pointer
            x = tl.load(pointers + offs % c, mask=offs < n, other=0)
            """
        ),
    )

    assert count == 1
    assert "pointers + offs % c * (offs < n)" in source


def test_a_layout_flag_confines_only_the_gather_branch_with_its_mask():
    # ContiguousFlatAccess's shape: the affine branch under the flag, the
    # digits otherwise; the mask drops the digit bounds under the same flag.
    source, count = rewrite(
        ConfineMaskedLanes,
        _kernel(
            "x = tl.load(x_pointer + (c * s + (offs * s if FLAG else offs // c * s + offs % c)), "
            "mask=(offs < n if FLAG else (offs < n) & (offs // c < s)), other=0)",
            parameters="x_pointer, y_pointer, n, c, s, FLAG: tl.constexpr",
        ),
    )

    assert count == 1
    (load,) = _loads(source)
    assert ast.unparse(load.args[0]) == (
        "x_pointer + (c * s + offs * s if FLAG else "
        "(c * s + offs // c * s + offs % c) * ((offs < n) & (offs // c < s)))"
    )


def test_a_flag_in_an_and_of_the_mask_is_decided_in_place():
    source, _ = rewrite(
        ConfineMaskedLanes,
        _kernel(
            "x = tl.load(x_pointer + (offs if FLAG else offs % c), "
            "mask=(c < n) & (offs < n if FLAG else offs % c < s), other=0)",
            parameters="x_pointer, y_pointer, n, c, s, FLAG: tl.constexpr",
        ),
    )

    assert (
        "x_pointer + (offs if FLAG else offs % c * ((c < n) & (offs % c < s)))"
        in source
    )


def test_two_tiles_multiplied_are_a_gather():
    source, count = rewrite(
        ConfineMaskedLanes,
        _kernel("x = tl.load(x_pointer + offs * offs, mask=offs < n, other=0)"),
    )

    assert count == 1
    assert "x_pointer + offs * offs * (offs < n)" in source


def test_runs_after_the_layout_passes_and_before_the_unified_buffer_and_broadcast():
    position = NPU.index(ConfineMaskedLanes)

    assert NPU.index(ContiguousFlatAccess) < position
    assert NPU.index(TransposeStridedTiles) < position
    assert position < NPU.index(FitUnifiedBuffer)
    assert position < NPU.index(BroadcastLoadPointer)
