"""FoldMathConstants: constant ``math`` expressions become literals for Triton 3.2's frontend."""

import importlib.util
import math
import pathlib

import pytest
import torch
from helpers import load_example, rewrite

from ninetoothed_ascend import ascendify
from ninetoothed_ascend.ascendify import run_pipeline
from ninetoothed_ascend.ascendify.math_constants import FoldMathConstants
from ninetoothed_ascend.jit import variants


def test_folds_the_tanh_gelu_constant_where_math_is_not_imported():
    source, count = rewrite(
        FoldMathConstants,
        """
        def kernel(x):
            return 0.5 * x * (1 + tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))
        """,
    )

    assert count == 1
    assert "math" not in source
    assert repr(math.sqrt(2 / math.pi)) in source


def test_folds_the_largest_constant_expression_and_keeps_the_rest():
    source, count = rewrite(
        FoldMathConstants,
        """
        import math

        def kernel(x):
            return x * (1 / math.sqrt(2.0)) + -math.log(2) + math.pow(2, 0.5) * x
        """,
    )

    assert count == 3
    assert source.splitlines()[-1].strip() == (
        f"return x * {1 / math.sqrt(2.0)!r} + -{math.log(2)!r} + {math.pow(2, 0.5)!r} * x"
    )


def test_folds_through_an_alias_of_math():
    source, count = rewrite(
        FoldMathConstants,
        """
        import math as m

        def kernel(x):
            return x * m.sqrt(2.0)
        """,
    )

    assert (count, source.splitlines()[-1].strip()) == (
        1,
        f"return x * {math.sqrt(2.0)!r}",
    )


@pytest.mark.parametrize(
    "expression",
    [
        "math.sqrt(x)",  # not a constant
        "math.sqrt(-1.0)",  # raises
        "math.exp(1000.0)",  # overflows
        "math.inf",  # not finite
        "math.sqrt(2.0, key=1)",  # keywords
        "2.0 / 3.0",  # no ``math``
    ],
)
def test_leaves_what_it_cannot_or_need_not_fold(expression):
    source, count = rewrite(
        FoldMathConstants,
        f"""
        def kernel(x):
            return {expression}
        """,
    )

    assert count == 0
    assert source.splitlines()[-1].strip() == f"return {expression}"


def test_folds_the_operands_of_a_power_but_not_the_power():
    source, count = rewrite(
        FoldMathConstants,
        """
        def kernel(x):
            return 10 ** 10 ** math.e
        """,
    )

    assert (count, source.splitlines()[-1].strip()) == (
        1,
        f"return 10 ** 10 ** {math.e!r}",
    )


@pytest.mark.parametrize(
    "binding",
    ["import numpy as math", "math = other", "from numpy import math"],
)
def test_leaves_math_bound_to_something_else(binding):
    source, count = rewrite(
        FoldMathConstants,
        f"""
        {binding}

        def kernel(x):
            return x * math.sqrt(2.0)
        """,
    )

    assert count == 0
    assert "math.sqrt(2.0)" in source


@pytest.mark.ascend
def test_reproducer_fails_the_frontend_and_the_pass_cures_it(tmp_path):
    """The constraint, measured: with ``math`` imported, Triton 3.2's frontend still fails on the call."""

    from reproducers import constexpr_math_call as reproducer

    from ninetoothed_ascend.compile_check import StageError, compile_stages

    signature, constants = {"x_ptr": "*fp32"}, {"B": 32}

    with pytest.raises(
        StageError, match=r"(?s)\[ttir\].*__index__ returned non-int \(type float\)"
    ):
        compile_stages(reproducer.repro, signature, constants)

    rewritten = run_pipeline(
        pathlib.Path(reproducer.__file__).read_text(), (FoldMathConstants,)
    )
    assert rewritten.rewrites == (("FoldMathConstants", 1),)
    path = tmp_path / "rewritten_constexpr_math_call.py"
    path.write_text(rewritten.source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    linalg, _ = compile_stages(module.repro, signature, constants)
    assert "func.func" in linalg


@pytest.mark.ascend
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_gelu_tanh_passes_the_compile_check_with_the_pass(dtype, monkeypatch):
    """The example that needs it: gelu_tanh's NPU variant clears ttir and ttadapter once the constant is folded."""

    from ninetoothed_ascend.compile_check import check_variant

    monkeypatch.setitem(
        variants._PIPELINES, "npu", (FoldMathConstants, *ascendify.PIPELINE)
    )
    module = load_example("gelu_tanh")

    assert ("FoldMathConstants", 1) in module.kernel.rewrites("npu")
    results = check_variant(module.kernel, module.launch, *module.inputs("cpu", dtype))
    assert results
    assert all("func.func" in result.linalg for result in results)
