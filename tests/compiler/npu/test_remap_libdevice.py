"""RemapLibdevice: pass tests on ASTs (level 1)."""

import ast
import textwrap

import pytest
from helpers import assert_no_rewrite, rewrite
from libdevice_helpers import NINETOOTHED_IMPORTS

from ninetoothed_ascend.compiler.npu.remap_libdevice import (
    RemapLibdevice,
)
from ninetoothed_ascend.compiler.passes import (
    RewriteError,
)


def test_remap_libdevice_by_kind():
    source, count = rewrite(
        RemapLibdevice,
        NINETOOTHED_IMPORTS
        + textwrap.dedent(
            """
        @triton.jit
        def kernel(x):
            a = ninetoothed_libdevice.tanh(x)
            b = ninetoothed_libdevice.exp(ninetoothed_libdevice.rint(x))
            c = ninetoothed_libdevice.exp10(x) + ninetoothed_libdevice.exp10(x)
            return a, b, c
        """
        ),
    )

    assert count == 5
    assert "ninetoothed_libdevice" not in source
    assert "a = ninetoothed_ascend_libdevice.tanh(x)" in source
    assert (
        "b = triton.language.exp(ninetoothed_ascend_libdevice.nearbyint(x))" in source
    )
    assert (
        "c = ninetoothed_ascend_libdevice_exp10(x) + ninetoothed_ascend_libdevice_exp10(x)"
        in source
    )
    # One composite per name, a triton.jit function after the imports.
    assert source.count("def ninetoothed_ascend_libdevice_exp10(x):") == 1
    tree = ast.parse(source)
    helper = next(
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.endswith("exp10")
    )
    assert ast.unparse(helper.decorator_list[0]) == "triton.jit"
    assert "triton.language.exp2(x * 3.32192809488736" in ast.unparse(helper)
    kernel = next(
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == "kernel"
    )
    assert tree.body.index(helper) < tree.body.index(kernel)


def test_remap_libdevice_reaches_ninetoothed_language_libdevice():
    """NineToothed writes ``ntl.libdevice.tanh(x)`` as ``triton.language.libdevice.tanh(x)``."""

    source, count = rewrite(
        RemapLibdevice,
        "import triton\nimport triton.language\ny = triton.language.libdevice.tanh(x)\n",
    )

    assert count == 1
    assert "y = ninetoothed_ascend_libdevice.tanh(x)" in source
    assert "from triton.language.extra.ascend import libdevice" in source


def test_remap_libdevice_imports_ascend_only_where_needed():
    source, count = rewrite(
        RemapLibdevice,
        NINETOOTHED_IMPORTS + "y = ninetoothed_libdevice.exp(x)\n",
    )

    assert count == 1
    assert "libdevice" not in source
    assert "y = triton.language.exp(x)" in source


def test_remap_libdevice_matches_the_module_not_the_name():
    source, count = rewrite(
        RemapLibdevice,
        """
        import triton.language.extra.cuda.libdevice as anything
        from somewhere import libdevice as ninetoothed_libdevice
        a = anything.tanh(x)
        b = ninetoothed_libdevice.exp10(x)
        """,
    )

    assert count == 1
    assert "a = ninetoothed_ascend_libdevice.tanh(x)" in source
    assert "b = ninetoothed_libdevice.exp10(x)" in source
    assert "from somewhere import libdevice as ninetoothed_libdevice" in source


def test_remap_libdevice_detects_the_module_at_import():
    source, count = rewrite(
        RemapLibdevice, NINETOOTHED_IMPORTS + "y = ninetoothed_libdevice.tanh(x)\n"
    )

    assert count == 1
    assert source.index("triton.language.extra.cann") < source.index(
        "triton.language.extra.ascend"
    )

    # CUDA Triton has neither module: the import names both and says what to do.
    with pytest.raises(
        ImportError, match="extra.cann.libdevice.*extra.ascend.libdevice.*triton-ascend"
    ):
        exec(source, {})


@pytest.mark.parametrize(
    "name, reason",
    [
        ("clz", "integer bit intrinsics"),
        ("add_rd", "directed rounding"),
        ("j0", "Bessel"),
        ("not_a_function", "not in the table"),
    ],
)
def test_remap_libdevice_refuses_what_has_no_equivalent(name, reason):
    with pytest.raises(
        RewriteError, match=rf"libdevice\.{name} has no Ascend equivalent: .*{reason}"
    ):
        rewrite(
            RemapLibdevice, NINETOOTHED_IMPORTS + f"y = ninetoothed_libdevice.{name}(x)"
        )


def test_remap_libdevice_refuses_a_function_passed_around():
    with pytest.raises(RewriteError, match="other than by a call"):
        rewrite(RemapLibdevice, NINETOOTHED_IMPORTS + "f = ninetoothed_libdevice.exp")


def test_remap_libdevice_leaves_other_imports():
    assert_no_rewrite(RemapLibdevice, "from triton.language.extra import cuda")
