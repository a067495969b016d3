"""FixAutotuneConfig: the interpreter runs one config, the NPU variant's deferred autotuner included."""

import textwrap
import types

import triton.language
from helpers import rewrite

from ninetoothed_ascend.compiler.cpu.fix_autotune_config import FixAutotuneConfig
from ninetoothed_ascend.compiler.npu.defer_autotune import DeferAutotune
from ninetoothed_ascend.compiler.passes import (
    run_pipeline,
)


def test_the_cpu_emulation_fixes_the_autotuner_where_defer_autotune_makes_it():
    # No pass turns DeferAutotune's factory back: FixAutotuneConfig replaces
    # the autotuner in the factory, and the launch through it passes the
    # config the module-level form gets.
    source = textwrap.dedent(
        """
        import triton

        @triton.jit
        def kernel(x, BLOCK: triton.language.constexpr):
            pass
        tuned = triton.autotune(configs=[triton.Config({'BLOCK': 32}), triton.Config({'BLOCK': 64})], key=[])(kernel)

        def launch(x):
            tuned[1,](x)
        """
    )
    deferred = run_pipeline(source, (DeferAutotune,)).source
    fixed = {
        form: run_pipeline(text, (FixAutotuneConfig,))
        for form, text in (("module", source), ("deferred", deferred))
    }
    launched = {form: [] for form in fixed}

    class Kernel:
        def __init__(self, calls):
            self.calls = calls

        def __getitem__(self, grid):
            return lambda *args, **kwargs: self.calls.append((grid, args, kwargs))

    for form, rewritten in fixed.items():
        recording = types.SimpleNamespace(
            jit=lambda function, calls=launched[form]: Kernel(calls),
            language=triton.language,
        )
        namespace = {"triton": recording}
        exec(rewritten.source.replace("import triton\n", ""), namespace)
        namespace["launch"]("x")

    assert "functools.cache" in deferred
    assert all("autotune" not in rewritten.source for rewritten in fixed.values())
    assert fixed["deferred"].rewrites == (("FixAutotuneConfig", 1),)
    assert launched["deferred"] == launched["module"] == [((1,), ("x",), {"BLOCK": 64})]


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
