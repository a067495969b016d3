"""Where ``import triton`` is not triton-ascend (the emulations), the NPU variant's autotuner is the one ``triton.autotune`` made."""

import triton

from ninetoothed_ascend import host
from ninetoothed_ascend.runtime import drop_refused_configs


def test_the_autotuner_is_returned_as_it_is():
    assert not host.triton_package_is_ascend()

    @triton.jit
    def kernel(x, BLOCK_SIZE: triton.language.constexpr):
        pass

    autotuner = triton.autotune(
        configs=[triton.Config({"BLOCK_SIZE": 64})],
        key=[],
        do_bench=lambda call, quantiles: [1.0, 1.0, 1.0],
    )(kernel)

    assert drop_refused_configs(autotuner, "kernel", "0" * 64, "Ascend910B1") is (
        autotuner
    )
