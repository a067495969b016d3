"""Each example's NPU variant against its CUDA variant, on the same device: time ratios (level 4, emulation).

With ``--device cuda`` (the default) both variants are compiled by CUDA
Triton and launched on CUDA tensors: the CUDA variant is NineToothed's
source, the NPU variant the NPU pipeline's output (UB-fitted configs,
persistent grid of ``min(tasks, cores)`` programs, sub-blocks). Each is
autotuned over its own configs by its first call, then timed with
``triton.testing.do_bench`` (median, L2 flushed between repetitions).
"Cores": on an NPU the persistent grid is one program per vector core (or
AI core, with ``tl.dot``), each running one program at a time. A GPU
reports neither count, so ``--cores`` sets both (read when the NPU variant
is generated). The GPU's analogue of "a core, busy with one program" is a
resident program slot: an SM holds 64 warps (H100) and NineToothed
launches 8 warps per program, so the default is :data:`PROGRAMS_PER_SM`
programs per SM. Fewer programs leave the GPU short of the memory
parallelism it needs: ``--cores 132`` (one per SM on an H100) or
``--cores 48`` (the Atlas A2 vector-core count) measure that, not the
rewrites (docs/benchmarks.md). The ratio says what the Ascend rewrites cost or
save *on a GPU*; it is not an NPU measurement.

With ``--device cpu`` both run on Triton's interpreter (the CPU variant,
and the NPU source through the CPU pipeline): a slow smoke test that the
script and both variants run, with each output checked against torch.

Shapes: on CUDA, an example's ``BENCH_CASES`` (keyword arguments to its
``inputs``) if it defines them; else, and always on the CPU, its ``CASES``,
else its default inputs.

    python bench/npu_vs_cuda.py [PATHS] [--device cuda|cpu] [--dtype float16]
        [--cores N] [--rep MS]

The table ends with each group's largest and geometric-mean ratio, and, for
the elementwise and reduction groups (:data:`BOUNDED_GROUPS`), whether every
ratio is within :data:`BOUND`.
"""

import argparse
import collections
import functools
import os
import pathlib
import statistics
import time

import torch

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

#: Example groups (directories) whose NPU variant should take at most BOUND x the CUDA variant's time.
BOUNDED_GROUPS = ("elementwise", "activation", "math", "normalization", "reduction")
BOUND = 1.25

#: Default persistent-grid programs per SM on CUDA: 64 resident warps / 8 warps per program.
PROGRAMS_PER_SM = 8


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
    parser.add_argument(
        "--cores",
        type=int,
        help="persistent-grid programs (default: PROGRAMS_PER_SM x the GPU's SMs; on the CPU, the SoC's)",
    )
    parser.add_argument("--rep", type=int, default=100, help="do_bench ms")
    arguments = parser.parse_args()

    if arguments.cores is None and arguments.device == "cuda":
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        arguments.cores = PROGRAMS_PER_SM * sms

    if arguments.cores is not None:
        # Read when the NPU variant is generated (part of the cache key).
        os.environ["NINETOOTHED_ASCEND_NUM_VECTORCORE"] = str(arguments.cores)
        os.environ["NINETOOTHED_ASCEND_NUM_AICORE"] = str(arguments.cores)

    from ninetoothed_ascend import examples

    dtype = getattr(torch, arguments.dtype)
    device = arguments.device

    if device == "cuda":
        import triton

        print(
            f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
            f"triton {triton.__version__}, persistent grid: {arguments.cores} programs"
        )

    baseline = "CUDA" if device == "cuda" else "CPU"
    print(
        f"| group | kernel | case | {baseline} variant (ms) | NPU variant (ms) "
        f"| NPU / {baseline} | both match torch |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ratios = collections.defaultdict(list)

    for path in examples.find_modules(arguments.paths):
        module = examples.load_module(path)
        handle = module.kernel
        group = path.parent.name

        if dtype not in examples.dtypes(module):
            continue

        cases = examples.cases(module)

        if device == "cuda":
            cases = getattr(module, "BENCH_CASES", cases)

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
                    f"| {group} | {handle.kernel_name} | {label} "
                    f"| failed: {type(error).__name__}: {error} | | | |"
                )
                continue

            ratios[group].append(npu_time / cuda_time)
            print(
                f"| {group} | {handle.kernel_name} | {label} | {cuda_time * 1e3:.4f} "
                f"| {npu_time * 1e3:.4f} | {npu_time / cuda_time:.2f} | {ok} |"
            )

    print()
    print(f"| group | runs | largest NPU / {baseline} | geometric mean | bound |")
    print("| --- | --- | --- | --- | --- |")

    for group, values in ratios.items():
        bound = (
            ("met" if max(values) <= BOUND else "NOT met") + f" (<= {BOUND})"
            if group in BOUNDED_GROUPS and device == "cuda"
            else "none"
        )
        print(
            f"| {group} | {len(values)} | {max(values):.2f} "
            f"| {statistics.geometric_mean(values):.2f} | {bound} |"
        )


if __name__ == "__main__":
    main()
