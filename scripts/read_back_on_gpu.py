"""On a CUDA GPU: the saved-statistics instance norm with and without SynchronizeReadBack's barriers, and as NineToothed makes it.

``examples/normalization/instance_norm_saved_stats.py`` stores each plane's
mean and variance, then reads them back. This runs its emulated NPU variant
as the handle builds it (with the barriers), the same source with every
``triton.language.debug_barrier()`` taken out, the handle's CUDA variant
(NineToothed's source byte for byte, no barrier) and plain
``ninetoothed.make``'s kernel, each dtype and shape case ``--repeats``
times, against torch, and prints one line per run and a summary per form.
The statistics start as NaN, so a load that misses its store shows as a
mismatch.

    NINETOOTHED_ASCEND_CACHE_DIR=$(mktemp -d) python3 scripts/read_back_on_gpu.py [--repeats 3]
"""

import argparse
import pathlib

import ninetoothed

import ninetoothed_ascend
from ninetoothed_ascend import examples
from ninetoothed_ascend.cache import Variant
from ninetoothed_ascend.jit.handle import import_variant

EXAMPLE = (
    pathlib.Path(__file__).resolve().parent.parent
    / "examples"
    / "normalization"
    / "instance_norm_saved_stats.py"
)

BARRIER = "triton.language.debug_barrier()"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()

    module = examples.load_module(EXAMPLE)
    handle = module.kernel
    source = handle.emulated_source("cuda").source

    with ninetoothed_ascend.disabled():
        plain = ninetoothed.make(
            module.arrangement,
            module.application,
            module.tensors,
            kernel_name=handle.kernel_name,
        )

    forms = {
        "with barriers": handle.emulated("cuda"),
        "without barriers": getattr(
            import_variant(
                Variant(source.replace(BARRIER, "pass")),
                "npu_emulated_cuda_without_barriers",
            ),
            handle.launch_name,
        ),
        "CUDA variant": handle.variant("cuda"),
        "plain ninetoothed.make": plain,
    }

    for form, launch in forms.items():
        matches = runs = 0

        for dtype in examples.dtypes(module):
            for case in examples.cases(module):
                for repeat in range(arguments.repeats):
                    result = examples.compare(module, launch, "cuda", dtype, case)
                    matches += result.matches
                    runs += 1
                    print(form, dtype, case, repeat, result.matches, flush=True)

        print(f"{form}: {matches} of {runs} runs match torch", flush=True)


if __name__ == "__main__":
    main()
