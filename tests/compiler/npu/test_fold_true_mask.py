"""FoldTrueMask, on small modules (level 1)."""

from helpers import assert_no_rewrite, rewrite

from ninetoothed_ascend.compiler.npu.fold_true_mask import FoldTrueMask


def test_fold_true_mask_in_loads_and_stores():
    source, count = rewrite(
        FoldTrueMask,
        """
        import triton.language as tl
        x = tl.load(p, mask=True & (i < n) & (j < m), other=None)
        triton.language.store(q, x, mask=True & (i < n))
        """,
    )

    assert "True" not in source
    assert "mask=(i < n) & (j < m)" in source
    assert "mask=i < n" in source
    assert count == 2


def test_fold_true_mask_leaves_integer_and_outside_masks():
    source = assert_no_rewrite(
        FoldTrueMask,
        """
        import triton.language as tl
        y = True & n
        tl.store(q, True & n, mask=m)
        """,
    )

    assert source.count("True & n") == 2
