"""The emulation pass :class:`DropSoftwarePipelining`."""

import ast

from ninetoothed_ascend.compiler.passes import Pass
from ninetoothed_ascend.compiler.syntax import keyword

#: The ``num_stages`` the emulation launches with: Triton's pipeliner leaves
#: a loop of one stage as written, so its loads take one buffer each.
UNPIPELINED = 1


class DropSoftwarePipelining(Pass):
    """Launch every config of the emulated NPU variant with ``num_stages=1``.

    Constraint: triton-ascend ignores ``num_stages`` (its autotune guide:
    configs set block sizes and ``multibuffer``; ``num_warps`` and
    ``num_stages`` are not supported), so the NPU variant's configs keep
    NineToothed's value while their block sizes are chosen for the Unified
    Buffer (``FitUnifiedBuffer``), not for CUDA's shared memory. On CUDA,
    Triton's software pipeliner gives each load in a loop ``num_stages``
    shared-memory buffers, and a block size NineToothed never pairs with
    NineToothed's ``num_stages`` can exceed what a GPU holds: ntops'
    scaled-dot-product attention emulated on an H200 raised
    ``OutOfResources`` (307,200 and 327,680 B of shared memory, 232,448
    available) at configs the autotuner could not skip, one left after
    pruning. One stage changes neither the blocks nor what the kernel
    computes, only how loads overlap, and is what the NPU does with the
    field: nothing.

    :Constraint: triton-ascend ignores `num_stages`; on CUDA it multiplies
        the shared memory a loop's loads take, so the NPU variant's configs
        can exceed a GPU's shared memory
    :Source: triton-ascend autotune guide (docs/en/examples/06_autotune_example.md);
        ntops' `test_scaled_dot_product_attention` emulated on an H200
        (docs/verification.md); `tests/compiler/emulation/test_drop_software_pipelining.py`
    :Rewrites: `num_stages=K` of every `triton.Config` and kernel launch
        becomes `num_stages=1`
    """

    def finish(self, tree):
        calls = [call for _, call in self.module.launches()]

        for _, autotune in self.module.autotune_calls():
            configs = keyword(autotune, "configs")

            if configs is not None and isinstance(configs.value, ast.List):
                calls.extend(configs.value.elts)

        for call in calls:
            for item in getattr(call, "keywords", ()):
                if item.arg == "num_stages" and not (
                    isinstance(item.value, ast.Constant)
                    and item.value.value == UNPIPELINED
                ):
                    item.value = ast.Constant(UNPIPELINED)
                    self.rewrote()
