"""DeferAutotune, on small modules (level 1)."""

import collections

from helpers import rewrite

from ninetoothed_ascend.compiler.npu.defer_autotune import DeferAutotune


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
