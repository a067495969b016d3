"""ScalarizePaddedTileLowerBounds: pass tests on small ASTs (level 1) and its reproducer through the adapter (level 2)."""

import pathlib

import pytest
from helpers import assert_adapter_crashes_then_cured, assert_no_rewrite, rewrite

from ninetoothed_ascend.compiler.npu.scalarize_padded_tile_lower_bounds import (
    ScalarizePaddedTileLowerBounds,
)
from ninetoothed_ascend.compiler.npu.scalarize_tile_lower_bounds import (
    ScalarizeTileLowerBounds,
)
from ninetoothed_ascend.compiler.passes import run_pipeline

GUARD = "(tl.arange(0, P)[:, None] < H)"


def test_padded_lower_bounds_become_index_bounds():
    source, count = rewrite(
        ScalarizePaddedTileLowerBounds,
        f"""
        import triton.language as tl
        tl.store(p, x, mask={GUARD} & (i * H + tl.arange(0, P)[:, None] >= 0) & ((tl.arange(0, P)[:, None] + H * j >= 0) & (i * H + tl.arange(0, P)[:, None] < n)))
        """,
    )

    assert (
        f"mask={GUARD} & (i >= 0) & ((j >= 0) & (i * H + tl.arange(0, P)[:, None] < n))"
        in source
    )
    assert count == 2


def test_the_other_factor_is_the_index():
    # NineToothed's pairs of dilated half tiles: ``index * 2 * (D // 2) + arange(0, Q)``.
    source, count = rewrite(
        ScalarizePaddedTileLowerBounds,
        """
        import triton
        import triton.language
        triton.language.load(p, mask=(triton.language.arange(0, Q)[None, :] < D // 2) & (k * 2 * (D // 2) + triton.language.arange(0, Q)[None, :] >= 0), other=0)
        """,
    )

    assert "& (k * 2 >= 0)" in source
    assert count == 1


@pytest.mark.parametrize(
    "mask",
    [
        # no guard at all
        "(i * H + tl.arange(0, P)[:, None] >= 0) & (j < n)",
        # the guard bounds the arange by something other than the factor
        "(tl.arange(0, P)[:, None] < G) & (i * H + tl.arange(0, P)[:, None] >= 0)",
        # the guard is on another arange (other subscript, other size)
        "(tl.arange(0, P)[None, :] < H) & (i * H + tl.arange(0, P)[:, None] >= 0)",
        "(tl.arange(0, Q)[:, None] < H) & (i * H + tl.arange(0, P)[:, None] >= 0)",
        # the guard is not a conjunct of the mask
        f"{GUARD} | (i * H + tl.arange(0, P)[:, None] >= 0)",
        f"(c & {GUARD}) | (i * H + tl.arange(0, P)[:, None] >= 0)",
        # the bound is not a conjunct of the mask
        f"{GUARD} & ((i * H + tl.arange(0, P)[:, None] >= 0) | c)",
        # not a lower bound at zero of a product plus an arange from zero
        f"{GUARD} & (i * H + tl.arange(0, P)[:, None] >= 1)",
        f"{GUARD} & (i * H + tl.arange(0, P)[:, None] > 0)",
        f"{GUARD} & (i + H + tl.arange(0, P)[:, None] >= 0)",
        "(tl.arange(1, P)[:, None] < H) & (i * H + tl.arange(1, P)[:, None] >= 0)",
    ],
)
def test_masks_without_an_exact_rewrite_are_left_alone(mask):
    assert_no_rewrite(
        ScalarizePaddedTileLowerBounds,
        f"import triton.language as tl\ntl.load(p, mask={mask}, other=0)",
    )


def test_only_masks_are_rewritten():
    assert_no_rewrite(
        ScalarizePaddedTileLowerBounds,
        f"import triton.language as tl\nk = {GUARD} & (i * H + tl.arange(0, P)[:, None] >= 0)",
    )


@pytest.mark.ascend
@pytest.mark.parametrize("pointer", ["*fp16", "*fp32"])
def test_adapter_padded_lower_bound_crash_and_its_cure(pointer, tmp_path):
    """The reproducer crashes triton-adapter-opt (16 of 16 compiles when measured); ScalarizeTileLowerBounds leaves it as it is, this pass cures it."""

    from reproducers import adapter_padded_lower_bound_crash as reproducer

    original = pathlib.Path(reproducer.__file__).read_text()
    assert run_pipeline(original, (ScalarizeTileLowerBounds,)).rewrites == ()

    rewritten = run_pipeline(original, (ScalarizePaddedTileLowerBounds,))
    assert rewritten.rewrites == (("ScalarizePaddedTileLowerBounds", 6),)
    assert_adapter_crashes_then_cured(
        reproducer.repro,
        rewritten.source,
        {"x_ptr": pointer, "y_ptr": pointer},
        {"H": 3, "P": 4},
        tmp_path,
    )
