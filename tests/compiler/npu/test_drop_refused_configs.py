"""DropRefusedConfigs, on small modules (level 1)."""

import ast
import collections
import hashlib
import textwrap

from helpers import rewrite

from ninetoothed_ascend.compiler.npu.defer_autotune import DeferAutotune
from ninetoothed_ascend.compiler.npu.drop_refused_configs import (
    WRAPPER,
    DropRefusedConfigs,
)
from ninetoothed_ascend.compiler.target import Target

SOURCE = """
import functools
import triton as t

@t.jit
def kernel(x, BLOCK_SIZE: t.language.constexpr):
    pass

@functools.cache
def kernel_with_auto_tuning():
    return t.autotune(configs=[t.Config({'BLOCK_SIZE': 64})], key=['x'])(kernel)

def launch(x):
    kernel_with_auto_tuning()[(1,)](x)
"""


def test_the_autotuner_is_wrapped_with_the_kernel_the_variant_and_the_soc():
    source, count = rewrite(DropRefusedConfigs, SOURCE)
    target = Target.from_environment("npu")
    variant = hashlib.sha256(
        ast.unparse(ast.parse(textwrap.dedent(SOURCE))).encode()
    ).hexdigest()

    assert count == 1
    assert (
        f"from ninetoothed_ascend.runtime import drop_refused_configs as {WRAPPER}"
        in source
    )
    assert (
        f"return {WRAPPER}(t.autotune(configs=[t.Config({{'BLOCK_SIZE': 64}})], "
        f"key=['x'])(kernel), 'kernel', '{variant}', '{target.soc.name}')"
    ) in source


def test_after_defer_autotune_the_factory_returns_the_wrapped_autotuner():
    source, _ = rewrite(
        DeferAutotune,
        """
        import triton

        def kernel():
            pass

        tuned = triton.autotune(configs=[1], key=['n'])(kernel)

        def launch(n):
            return tuned[lambda meta: (n,)]
        """,
        then=(DropRefusedConfigs,),
    )
    wrapped = []

    def drop_refused_configs(autotuner, kernel, variant, soc):
        wrapped.append((autotuner, kernel, len(variant), soc))

        return autotuner

    class FakeTriton:
        @staticmethod
        def autotune(configs, key):
            return lambda kernel: collections.defaultdict(lambda: "launcher")

    namespace = {"triton": FakeTriton, WRAPPER: drop_refused_configs}
    body = source.replace("import triton\n", "").replace(
        f"from ninetoothed_ascend.runtime import drop_refused_configs as {WRAPPER}\n",
        "",
    )
    exec(body, namespace)

    assert wrapped == []
    assert namespace["launch"](3) == "launcher"
    assert namespace["launch"](3) == "launcher"
    assert [item[1:] for item in wrapped] == [
        ("kernel", 64, Target.from_environment("npu").soc.name)
    ]


def test_a_module_without_an_autotuner_is_left_as_it_is():
    source, count = rewrite(
        DropRefusedConfigs,
        """
        import triton

        @triton.jit
        def kernel(x):
            pass
        """,
    )

    assert count == 0
    assert WRAPPER not in source


def test_a_call_named_like_autotune_but_not_it_is_left_as_it_is():
    source, count = rewrite(
        DropRefusedConfigs,
        """
        import triton

        def autotune(configs, key):
            return lambda kernel: kernel

        def kernel():
            pass

        tuned = autotune(configs=[1], key=['n'])(kernel)
        """,
    )

    assert count == 0
    assert WRAPPER not in source
