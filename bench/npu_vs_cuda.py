"""Each example's NPU variant against its CUDA variant, on the same device: time ratios (level 3, emulation).

With ``--device cuda`` (the default) both variants are compiled by CUDA
Triton and launched on CUDA tensors: the CUDA variant is NineToothed's
source, the NPU variant the ``ascendify`` output (UB-fitted configs,
persistent grid of ``min(tasks, cores)`` programs, sub-blocks). Each is
autotuned over its own configs by its first call, then timed with
``triton.testing.do_bench`` (median). On a GPU the driver reports no
``num_vectorcore``, so the NPU variant's persistent grid uses the SoC
setting (48 vector / 24 AI cores by default; ``--cores N`` sets both to N,
e.g. the GPU's SM count, to separate the grid's effect from the configs').
The ratio says what the Ascend rewrites cost or save *on a GPU*; it is not
an NPU measurement.

With ``--device cpu`` both run on Triton's interpreter (the CPU variant,
and the NPU source through the CPU pipeline): a slow smoke test that the
script and both variants run, with each output checked against torch.

Shapes: an example's ``BENCH_CASES`` (keyword arguments to its ``inputs``)
if it defines them, else its ``CASES``, else its default inputs.

    python bench/npu_vs_cuda.py [PATHS] [--device cuda|cpu] [--dtype float16]
        [--cores N] [--rep MS]
"""

import argparse
import functools
import os
import pathlib
import statistics
import time

import torch

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def time_cuda(function, rep):
    import triton.testing

    return triton.testing.do_bench(function, rep=rep) * 1e-3


def time_cpu(function, repeats=1):
    times = []

    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)

    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(EXAMPLES)])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--cores", type=int, help="persistent-grid programs")
    parser.add_argument("--rep", type=int, default=100, help="do_bench ms")
    arguments = parser.parse_args()

    if arguments.cores is not None:
        # Read when the NPU variant is generated (part of the cache key).
        os.environ["NINETOOTHED_ASCEND_NUM_VECTORCORE"] = str(arguments.cores)
        os.environ["NINETOOTHED_ASCEND_NUM_AICORE"] = str(arguments.cores)

    from ninetoothed_ascend import examples

    dtype = getattr(torch, arguments.dtype)
    device = arguments.device

    if device == "cuda":
        print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")

    baseline = "CUDA" if device == "cuda" else "CPU"
    print(
        f"| kernel | case | {baseline} variant (ms) | NPU variant (ms) "
        f"| NPU / {baseline} | both match torch |"
    )
    print("| --- | --- | --- | --- | --- | --- |")

    for path in examples.find_modules(arguments.paths):
        module = examples.load_module(path)
        handle = module.kernel

        if dtype not in examples.dtypes(module):
            continue

        cases = getattr(module, "BENCH_CASES", examples.cases(module))

        for case in cases:
            label = (
                ",".join(f"{key}={value}" for key, value in case.items()) or "default"
            )
            inputs = module.inputs(device, dtype, **case)

            try:
                cuda = handle.variant(device)
                npu = handle.emulated(device)

                if device == "cuda":
                    timer = lambda function: time_cuda(function, arguments.rep)  # noqa: E731
                else:
                    timer = time_cpu

                ok = all(
                    examples.compare(module, launch, device, dtype, case).matches
                    for launch in (cuda, npu)
                )
                cuda_time = timer(functools.partial(module.launch, cuda, *inputs))
                npu_time = timer(functools.partial(module.launch, npu, *inputs))
            except Exception as error:  # one failing example must not hide the rest
                print(
                    f"| {handle.kernel_name} | {label} | failed: {type(error).__name__}: {error} | | | |"
                )
                continue

            print(
                f"| {handle.kernel_name} | {label} | {cuda_time * 1e3:.4f} "
                f"| {npu_time * 1e3:.4f} | {npu_time / cuda_time:.2f} | {ok} |"
            )


if __name__ == "__main__":
    main()
