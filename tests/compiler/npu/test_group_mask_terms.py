"""GroupMaskTerms, on small modules (level 1)."""

import ast
import itertools
import types

import pytest
from helpers import assert_no_rewrite, rewrite

from ninetoothed_ascend.compiler.npu.group_mask_terms import GroupMaskTerms

_INTERLEAVED_MASK = (
    "(i < n) & (tl.arange(0, 4)[:, None] < m) & (tl.arange(0, 8)[None, :] < k)"
    " & (i >= 0) & (tl.arange(0, 4)[:, None] < m)"
    " & (i * 4 + tl.arange(0, 4)[:, None] < n) & (tl.arange(0, 8)[None, :] >= j)"
)


def test_group_mask_terms_combines_scalars_then_rows_then_columns():
    source, count = rewrite(
        GroupMaskTerms,
        f"""
        import triton.language as tl
        x = tl.load(p, mask={_INTERLEAVED_MASK}, other=0)
        """,
    )

    assert count == 1
    assert (
        "mask=(i < n) & (i >= 0)"
        " & ((tl.arange(0, 4)[:, None] < m) & (i * 4 + tl.arange(0, 4)[:, None] < n))"
        " & ((tl.arange(0, 8)[None, :] < k) & (tl.arange(0, 8)[None, :] >= j))"
    ) in source


def test_group_mask_terms_keeps_the_mask_elementwise():
    numpy = pytest.importorskip("numpy")
    source, _ = rewrite(GroupMaskTerms, f"tl.store(p, x, mask={_INTERLEAVED_MASK})\n")
    (rewritten,) = (
        keyword.value
        for call in ast.walk(ast.parse(source))
        if isinstance(call, ast.Call)
        for keyword in call.keywords
        if keyword.arg == "mask"
    )
    tl = types.SimpleNamespace(arange=numpy.arange)

    for i, n, m, k, j in itertools.product(
        (-1, 0, 2), (0, 3, 9), (0, 2, 4), (1, 8), (0, 5)
    ):
        names = {"tl": tl, "i": i, "n": n, "m": m, "k": k, "j": j}
        expected = eval(_INTERLEAVED_MASK, names)
        actual = eval(compile(ast.Expression(rewritten), "mask", "eval"), names)

        numpy.testing.assert_array_equal(
            numpy.broadcast_to(actual, expected.shape), expected
        )


def test_group_mask_terms_puts_constant_terms_last():
    """The frontend makes ``(0 < 1)`` a Python bool, and fails on ``bool & tensor`` (silu_and_mul)."""

    source, _ = rewrite(
        GroupMaskTerms,
        "import triton.language as tl\n"
        "tl.store(p, x, mask=(0 < 1) & (tl.arange(0, 8)[None, :] < k) & (i < n) & (tl.arange(0, 4)[:, None] < m))\n",
    )

    assert (
        "mask=(i < n) & (tl.arange(0, 8)[None, :] < k) & (tl.arange(0, 4)[:, None] < m) & (0 < 1))"
        in source
    )


def test_group_mask_terms_leaves_grouped_masks_and_other_arguments():
    assert_no_rewrite(
        GroupMaskTerms,
        """
        import triton.language as tl
        x = tl.load(p, mask=(i < n) & (tl.arange(0, 4)[:, None] < m) & (tl.arange(0, 8)[None, :] < k), other=0)
        y = (tl.arange(0, 8)[None, :] < k) & (i < n)
        tl.store(q, y, mask=tl.arange(0, 8) < k)
        """,
    )
