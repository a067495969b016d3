"""ScalarizeTileLowerBounds, on small modules (level 1)."""

import pytest
from helpers import assert_no_rewrite, rewrite

from ninetoothed_ascend.compiler.npu.scalarize_tile_lower_bounds import (
    ScalarizeTileLowerBounds,
)


def test_scalarize_tile_lower_bounds():
    source, count = rewrite(
        ScalarizeTileLowerBounds,
        """
        import triton.language as tl
        tl.store(p, x, mask=(i * B + tl.arange(0, B)[:, None] >= 0) & (tl.arange(0, B)[None, :] + B * j >= 0) & (i * B + tl.arange(0, B)[:, None] < n))
        """,
    )

    assert "mask=(i >= 0) & (j >= 0) & (i * B + tl.arange(0, B)[:, None] < n)" in source
    assert count == 2


@pytest.mark.parametrize(
    "term",
    [
        "tl.arange(0, B) >= 0",  # constant start: no runtime lower bound
        "i * B + tl.arange(0, C) >= 0",  # tile size differs from the factor
        "i * B + tl.arange(1, B) >= 0",  # arange does not start at 0
        "i * B + tl.arange(0, B) >= 1",  # bound is not 0
        "i * B + tl.arange(0, B) > 0",
    ],
)
def test_scalarize_tile_lower_bounds_leaves_other_comparisons(term):
    assert_no_rewrite(
        ScalarizeTileLowerBounds,
        f"import triton.language as tl\ntl.load(p, mask={term})",
    )


def test_scalarize_tile_lower_bounds_only_in_masks():
    assert_no_rewrite(
        ScalarizeTileLowerBounds,
        "import triton.language as tl\nk = i * B + tl.arange(0, B) >= 0",
    )
