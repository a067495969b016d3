"""BindLanguageModule, on small modules."""

import pytest
from helpers import rewrite

from ninetoothed_ascend.compiler.cpu.bind_language_module import BindLanguageModule
from ninetoothed_ascend.compiler.passes import RewriteError


def test_bind_language_module():
    source, count = rewrite(
        BindLanguageModule,
        """
        import triton
        import triton.language
        def k(n: triton.language.constexpr):
            return triton.language.arange(0, n)
        """,
    )

    assert "import triton.language as tl" in source
    assert "n: tl.constexpr" in source
    assert "tl.arange(0, n)" in source
    assert count == 2


def test_bind_language_module_refuses_a_foreign_tl():
    with pytest.raises(RewriteError, match="binds `tl` to numpy"):
        rewrite(BindLanguageModule, "import numpy as tl")
