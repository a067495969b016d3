"""Where ``import triton`` is not triton-ascend (the emulations), the NPU variant's autotuner is the one ``triton.autotune`` made."""

import functools

import triton

from ninetoothed_ascend import host
from ninetoothed_ascend.runtime import drop_refused_configs


def test_the_autotuner_is_returned_as_it_is():
    assert not host.triton_package_is_ascend()

    @triton.jit
    def kernel(x, BLOCK_SIZE: triton.language.constexpr):
        pass

    made = []

    @functools.cache
    @drop_refused_configs("kernel", "0" * 64, "Ascend910B1")
    def kernel_with_auto_tuning():
        made.append(
            triton.autotune(
                configs=[triton.Config({"BLOCK_SIZE": 64})],
                key=[],
                do_bench=lambda call, quantiles: [1.0, 1.0, 1.0],
            )(kernel)
        )

        return made[-1]

    assert kernel_with_auto_tuning() is kernel_with_auto_tuning() is made[0]
    assert len(made) == 1
