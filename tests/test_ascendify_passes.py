"""Each NPU pass in isolation, on small modules (level 1: pass tests on the AST)."""

import ast
import collections
import itertools
import types

import pytest
from helpers import assert_no_rewrite, rewrite

from ninetoothed_ascend.ascendify import (
    DeferAutotune,
    FillMaskedLoads,
    FoldTrueMask,
    GroupMaskTerms,
    LowerClamp,
    Pass,
    PipelineError,
    RemapLibdevice,
    RewriteError,
    ScalarizeTileLowerBounds,
    UseHf32InDot,
    run_pipeline,
)
from ninetoothed_ascend.compiler.pipelines import NPU as PIPELINE


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


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            "triton.language.clamp(x, lo, hi)",
            "triton.language.minimum(triton.language.maximum(x, lo), hi)",
        ),
        (
            "triton.language.clamp(x, lo, hi, propagate_nan=triton.language.PropagateNan.ALL)",
            "triton.language.minimum(triton.language.maximum(x, lo, "
            "propagate_nan=triton.language.PropagateNan.ALL), hi, "
            "propagate_nan=triton.language.PropagateNan.ALL)",
        ),
        (
            "tl.clamp(x, max=hi, min=lo)",
            "triton.language.minimum(triton.language.maximum(x, lo), hi)",
        ),
    ],
)
def test_lower_clamp(call, expected):
    source, count = rewrite(
        LowerClamp, f"import triton\nimport triton.language as tl\ny = {call}"
    )

    assert source.splitlines()[-1] == f"y = {expected}"
    assert count == 1


FP32 = (
    "('hf32' if b.dtype == triton.language.float32 else 'ieee') "
    "if a.dtype == triton.language.float32 else 'ieee'"
)


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            'tl.dot(a, b, input_precision="tf32")',
            f"tl.dot(a, b, input_precision={FP32})",
        ),
        (
            'tl.dot(a, b, input_precision="tf32x3")',
            "tl.dot(a, b, input_precision='ieee')",
        ),
        ('tl.dot(a, b, acc, "tf32")', f"tl.dot(a, b, acc, {FP32})"),
        ("tl.dot(a, b, allow_tf32=True)", f"tl.dot(a, b, input_precision={FP32})"),
        ("tl.dot(a, b, allow_tf32=False)", "tl.dot(a, b)"),
        (
            'tl.dot(a, b, input_precision="tf32", out_dtype=tl.float16)',
            "tl.dot(a, b, input_precision=(('hf32' if tl.float16 == triton.language.float32 "
            "else 'ieee') if b.dtype == triton.language.float32 else 'ieee') "
            "if a.dtype == triton.language.float32 else 'ieee', out_dtype=tl.float16)",
        ),
    ],
)
def test_use_hf32_in_dot(call, expected):
    source, count = rewrite(UseHf32InDot, f"import triton.language as tl\ny = {call}")

    assert source.splitlines()[-1] == f"y = {expected}"
    assert count == 1


def test_use_hf32_binds_operands_once_before_the_statement():
    source, count = rewrite(
        UseHf32InDot,
        """
        import triton.language as tl
        def kernel(p, q):
            acc = 0
            for k in range(4):
                acc += tl.dot(tl.load(p + k), tl.load(q + k), input_precision="tf32")
            return acc
        """,
    )

    assert count == 1
    assert source.count("tl.load(") == 2
    assert (
        "        ninetoothed_ascend_dot_operand_0 = tl.load(p + k)\n"
        "        ninetoothed_ascend_dot_operand_1 = tl.load(q + k)\n"
        "        acc += tl.dot(ninetoothed_ascend_dot_operand_0, ninetoothed_ascend_dot_operand_1, "
        "input_precision=('hf32' if ninetoothed_ascend_dot_operand_1.dtype == triton.language.float32 "
        "else 'ieee') if ninetoothed_ascend_dot_operand_0.dtype == triton.language.float32 else 'ieee')\n"
        "    return acc" in source
    )


def test_use_hf32_binds_operands_before_their_statement_in_every_statement_list():
    # Each ``dot`` is in another kind of statement list; its operands are
    # bound just before the statement holding it, in that list.
    source, count = rewrite(
        UseHf32InDot,
        """
        import triton.language as tl
        def kernel(p, flag):
            if flag:
                a = tl.dot(tl.load(p), b, input_precision="tf32")
            else:
                a = tl.dot(tl.load(p + 1), b, input_precision="tf32")
            while flag:
                a = tl.dot(tl.load(p + 2), b, input_precision="tf32")
            with context:
                a = tl.dot(tl.load(p + 3), b, input_precision="tf32")
            try:
                a = tl.dot(tl.load(p + 4), b, input_precision="tf32")
            except ValueError:
                a = tl.dot(tl.load(p + 5), b, input_precision="tf32")
            finally:
                a = tl.dot(tl.load(p + 6), b, input_precision="tf32")
            return a
        """,
    )

    assert count == 7
    lines = source.splitlines()

    for offset in ("p", "p + 1", "p + 2", "p + 3", "p + 4", "p + 5", "p + 6"):
        (position,) = [
            index
            for index, line in enumerate(lines)
            if line.endswith(f" = tl.load({offset})")
        ]
        binding, statement = lines[position], lines[position + 1]
        indent = binding[: len(binding) - len(binding.lstrip())]
        operand = binding.strip().split(" = ")[0]

        assert operand.startswith("ninetoothed_ascend_dot_operand_")
        assert statement.startswith(f"{indent}a = tl.dot({operand}, b, ")


def test_use_hf32_keeps_ieee():
    assert_no_rewrite(
        UseHf32InDot,
        'import triton.language as tl\ny = tl.dot(a, b, input_precision="ieee")',
    )


PRECISION_IN_BRANCHES = """
import triton.language as tl
def kernel(a, b, flag: tl.constexpr, mode: tl.constexpr):
    if flag == 0:
        precision: tl.constexpr = "tf32"
    else:
        precision: tl.constexpr = "ieee"
    y = tl.dot(a, b, input_precision=precision)
"""


def test_use_hf32_follows_a_precision_bound_in_branches():
    source, count = rewrite(UseHf32InDot, PRECISION_IN_BRANCHES)

    assert count == 1
    assert source.splitlines()[-1] == (
        f"    y = tl.dot(a, b, input_precision=({FP32}) if precision == 'tf32' "
        "else 'ieee' if precision == 'tf32x3' else precision)"
    )


@pytest.mark.parametrize(
    ("precision", "dtype", "expected"),
    [
        ("tf32", "float32", "hf32"),
        ("tf32", "float16", "ieee"),
        ("tf32x3", "float32", "ieee"),
        # The downstream library's matmul: "ieee" chosen in the kernel stays
        # "ieee" for fp32 operands (it read hf32, emulated on a GPU as tf32,
        # 1e-3 off: test_library.py::test_matmul[1] on the H100).
        ("ieee", "float32", "ieee"),
        ("ieee", "float16", "ieee"),
    ],
)
def test_use_hf32_precision_bound_in_branches_means_what_it_says(
    precision, dtype, expected
):
    source, _ = rewrite(UseHf32InDot, PRECISION_IN_BRANCHES)
    (call,) = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "tl.dot"
    ]
    mode = call.keywords[0].value
    tensor = types.SimpleNamespace(dtype=dtype)
    language = types.SimpleNamespace(float32="float32")
    namespace = {
        "a": tensor,
        "b": tensor,
        "precision": precision,
        "triton": types.SimpleNamespace(language=language),
    }

    assert eval(compile(ast.Expression(mode), "<mode>", "eval"), namespace) == expected


@pytest.mark.parametrize(
    "binding",
    [
        "precision = mode",  # not a literal: unknown here
        "precision = 'ieee'",  # no tf32 mode among the literals
    ],
)
def test_use_hf32_leaves_a_precision_it_cannot_follow(binding):
    source = PRECISION_IN_BRANCHES.replace(
        'precision: tl.constexpr = "ieee"', binding
    ).replace('precision: tl.constexpr = "tf32"', binding)

    assert_no_rewrite(UseHf32InDot, source)


def test_use_hf32_leaves_a_precision_parameter():
    assert_no_rewrite(
        UseHf32InDot,
        "import triton.language as tl\n"
        "def kernel(a, b, mode: tl.constexpr):\n"
        "    y = tl.dot(a, b, input_precision=mode)",
    )


def test_remap_libdevice_leaves_other_imports():
    assert_no_rewrite(RemapLibdevice, "from triton.language.extra import cuda")


def test_defer_autotune_imports_without_creating_the_autotuner():
    source, count = rewrite(
        DeferAutotune,
        """
        import triton

        def kernel():
            pass

        kernel_with_auto_tuning = triton.autotune(configs=[1], key=['n'])(kernel)

        def launch(n):
            return kernel_with_auto_tuning[lambda meta: (n,)]
        """,
    )

    assert count == 1

    created = []

    class FakeTriton:
        @staticmethod
        def autotune(configs, key):
            created.append((configs, key))

            return lambda kernel: collections.defaultdict(lambda: "launcher")

    namespace = {"triton": FakeTriton}
    exec(source.replace("import triton\n", ""), namespace)
    assert created == []

    assert namespace["launch"](3) == "launcher"
    assert namespace["launch"](4) == "launcher"
    assert created == [([1], ["n"])]


def test_pipeline_reports_the_failing_pass():
    class Refuses(Pass):
        def visit_Module(self, node):
            raise RewriteError("cannot do X.", "Do Y instead.")

    with pytest.raises(PipelineError, match="pass Refuses: cannot do X. Do Y instead."):
        run_pipeline("x = 1\n", (FoldTrueMask, Refuses))


def test_pipeline_names_a_pass_that_crashes():
    class Crashes(Pass):
        def visit_Module(self, node):
            raise ZeroDivisionError("boom")

    with pytest.raises(
        PipelineError, match="pass Crashes: crashed with ZeroDivisionError"
    ):
        run_pipeline("x = 1\n", (Crashes,))


def test_pipeline_reports_what_fired():
    rewritten = run_pipeline(
        "import triton\nimport triton.language\n"
        "y = triton.language.load(p, mask=True & m, other=None)\n",
        PIPELINE,
    )

    assert rewritten.rewrites == (("FoldTrueMask", 1), ("FillMaskedLoads", 1))
    names = [step.__name__ for step in PIPELINE]
    # Orders the passes rely on: masks are folded before their terms are
    # rewritten; composites of RemapLibdevice may cast to fp64, which
    # LowerFloat64 then lowers; the key is filtered while the autotuner is
    # still a module-level assignment.
    for before, after in (
        ("FoldTrueMask", "ScalarizeTileLowerBounds"),
        ("RemapLibdevice", "LowerFloat64"),
        ("FilterAutotuneKey", "DeferAutotune"),
    ):
        assert names.index(before) < names.index(after)
    assert "load(p, mask=m, other=0)" in rewritten.source
