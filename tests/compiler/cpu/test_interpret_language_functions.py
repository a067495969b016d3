"""InterpretLanguageFunctions, on small modules."""

from helpers import rewrite

from ninetoothed_ascend.compiler.cpu.interpret_language_functions import (
    InterpretLanguageFunctions,
)


def test_interpret_language_functions_only_for_jit_functions():
    source, count = rewrite(
        InterpretLanguageFunctions,
        """
        import triton.language as tl
        y = tl.max(x) + tl.sum(x) + tl.exp(x)
        """,
    )

    assert (
        "ninetoothed_interpreted_max = ninetoothed_ascend_interpreted(tl.max)" in source
    )
    assert (
        "ninetoothed_interpreted_max(x) + ninetoothed_interpreted_sum(x) + tl.exp(x)"
        in source
    )
    assert count == 2


def test_interpret_language_functions_of_the_standard_module():
    """``triton.language.standard.sort``, which the NPU variant calls for 32- and 64-bit integers."""

    source, count = rewrite(
        InterpretLanguageFunctions,
        """
        import triton
        import triton.language as tl
        y = triton.language.standard.sort(x, None, False)
        """,
    )

    assert (
        "ninetoothed_interpreted_standard_sort = "
        "ninetoothed_ascend_interpreted(tl.standard.sort)"
    ) in source
    assert "y = ninetoothed_interpreted_standard_sort(x, None, False)" in source
    assert count == 1
