"""The CPU variant's passes, on small modules, and run in Triton's interpreter."""

import math

import numpy
import pytest
import torch
from helpers import rewrite

from ninetoothed_ascend.ascendify import LowerClamp, RewriteError, run_pipeline
from ninetoothed_ascend.compiler.cpu.interpreter import (
    BindLanguageModule,
    FixAutotuneConfig,
    IndexLoopBounds,
    InterpretLanguageFunctions,
)
from ninetoothed_ascend.compiler.pipelines import CPU as PIPELINE
from ninetoothed_ascend.runtime import interpreted


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


def test_fix_autotune_config_picks_the_largest_tile():
    source, count = rewrite(
        FixAutotuneConfig,
        """
        import triton
        k_tuned = triton.autotune(configs=[
            triton.Config({'A': 64, 'B': 32}, num_warps=8),
            triton.Config({'A': 32, 'B': 128}, num_warps=8),
            triton.Config({'A': 64, 'B': 128}, num_warps=8),
        ], key=['n'])(k)
        def launch(x):
            k_tuned[lambda meta: (1,)](x)
        """,
    )

    assert "k_tuned = k" in source
    assert "k_tuned[lambda meta: (1,)](x, A=64, B=128)" in source
    assert count == 1


CLAMP_KERNEL = """
import triton
import triton.language

@triton.jit
def clamp_kernel(x_pointer, y_pointer, low, high, n: triton.language.constexpr):
    offsets = triton.language.arange(0, n)
    x = triton.language.load(x_pointer + offsets)
    triton.language.store(y_pointer + offsets, triton.language.clamp(x, low, high{nan}))

def launch(x, y, low, high):
    clamp_kernel[(1,)](x, y, low, high, x.numel())
"""


@pytest.mark.parametrize(
    "nan", ["", ", propagate_nan=triton.language.PropagateNan.ALL"]
)
def test_lowered_clamp_computes_what_clamp_computes(nan):
    """Emulation on the CPU interpreter: same values, NaN included."""

    source = CLAMP_KERNEL.format(nan=nan)
    x = torch.tensor([-3.0, -1.0, 0.5, 2.0, math.nan, math.inf, -math.inf, 1.0])
    results = []

    for passes in (PIPELINE, (LowerClamp, *PIPELINE)):
        namespace = {}
        exec(compile(run_pipeline(source, passes).source, "<clamp>", "exec"), namespace)
        y = torch.empty_like(x)
        namespace["launch"](x, y, -1.5, 1.5)
        results.append(y)

    numpy.testing.assert_array_equal(results[0].numpy(), results[1].numpy())
    assert "language.clamp(" not in run_pipeline(source, (LowerClamp,)).source


def test_index_loop_bounds_wraps_range_arguments_in_kernels_only():
    source, count = rewrite(
        IndexLoopBounds,
        """
        import triton
        @triton.jit
        def kernel(n):
            for k in range(n):
                pass
        def launch(n):
            return range(n)
        """,
    )

    assert "for k in range(ninetoothed_loop_bound(n))" in source
    assert "return range(n)" in source
    assert count == 1

    namespace = {}
    exec(source.replace("@triton.jit", ""), namespace)
    bound = namespace["ninetoothed_loop_bound"]

    class Scalar:
        handle = type("Handle", (), {"data": numpy.array([7], dtype=numpy.int32)})()

    assert bound(Scalar()) == 7 and type(bound(Scalar())) is int
    assert bound(5) == 5


def test_interpreted_copies_interpret_their_callees_and_leave_triton_alone():
    import triton
    import triton.language as tl

    sort = interpreted(tl.sort)
    namespace = sort.__wrapped__.__globals__

    # sort calls sort_impl: interpreted; max passes _elementwise_max to a
    # reduction: kept, so the interpreter recognizes it.
    assert isinstance(
        namespace["sort_impl"], triton.runtime.interpreter.InterpretedFunction
    )
    assert isinstance(
        interpreted(tl.max).__wrapped__.__globals__["_elementwise_max"],
        triton.runtime.JITFunction,
    )
    assert isinstance(tl.standard.sort_impl, triton.runtime.JITFunction)
    assert interpreted(tl.sort).__wrapped__ is sort.__wrapped__
