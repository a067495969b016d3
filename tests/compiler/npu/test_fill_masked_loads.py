"""FillMaskedLoads, on small modules (level 1)."""

from helpers import assert_no_rewrite, rewrite

from ninetoothed_ascend.compiler.npu.fill_masked_loads import FillMaskedLoads


def test_fill_masked_loads_with_zero():
    source, count = rewrite(
        FillMaskedLoads,
        """
        import triton
        import triton.language
        a = triton.language.load(p, mask=m, other=None)
        b = triton.language.load(p, mask=m, other=float('-inf'))
        c = triton.language.load(p)
        """,
    )

    assert "load(p, mask=m, other=0)" in source
    assert "other=float('-inf')" in source
    assert "load(p)" in source
    assert count == 1


def test_fill_masked_loads_ignores_other_calls_named_load():
    source = assert_no_rewrite(
        FillMaskedLoads,
        """
        import numpy
        a = numpy.load(p, mask=m, other=None)
        """,
    )

    assert "other=None" in source
