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
import triton as t

@t.jit
def kernel(x, BLOCK_SIZE: t.language.constexpr):
    pass

kernel_with_auto_tuning = t.autotune(configs=[t.Config({'BLOCK_SIZE': 64})], key=['x'])(kernel)

def launch(x):
    kernel_with_auto_tuning[(1,)](x)
"""


def _deferred(source):
    # As the NPU pipeline runs them: DeferAutotune, then the pass.
    return rewrite(DeferAutotune, source, then=(DropRefusedConfigs,))[0]


def test_the_factory_is_decorated_with_the_kernel_the_variant_and_the_soc():
    tree = ast.parse(textwrap.dedent(SOURCE))
    facts = {}
    DeferAutotune(Target.from_environment("npu"), facts).run(tree)
    variant = hashlib.sha256(ast.unparse(tree).encode()).hexdigest()
    count = DropRefusedConfigs(Target.from_environment("npu"), facts).run(tree)
    source = ast.unparse(tree)

    assert count == 1
    assert (
        f"from ninetoothed_ascend.runtime import drop_refused_configs as {WRAPPER}"
        in source
    )
    assert (
        "@functools.cache\n"
        f"@{WRAPPER}('kernel', '{variant}', "
        f"'{Target.from_environment('npu').soc.name}')\n"
        "def kernel_with_auto_tuning():\n"
        "    return t.autotune("
    ) in source


def test_the_decorated_factory_wraps_the_autotuner_once_at_the_first_launch():
    source = _deferred(
        """
        import triton

        def kernel():
            pass

        tuned = triton.autotune(configs=[1], key=['n'])(kernel)

        def launch(n):
            return tuned[lambda meta: (n,)]
        """
    )
    wrapped = []

    def drop_refused_configs(kernel, variant, soc):
        def decorate(factory):
            def made():
                wrapped.append((kernel, len(variant), soc))

                return factory()

            return made

        return decorate

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
    assert namespace["launch"](4) == "launcher"
    assert wrapped == [("kernel", 64, Target.from_environment("npu").soc.name)]


def test_without_deferred_autotuners_nothing_is_rewritten():
    # No factory of DeferAutotune (the fact it publishes): a module-level
    # autotuner is left to it, and a module without one is left as it is.
    for source in (
        SOURCE,
        """
        import triton

        @triton.jit
        def kernel(x):
            pass
        """,
    ):
        rewritten, count = rewrite(DropRefusedConfigs, source)

        assert count == 0
        assert WRAPPER not in rewritten
