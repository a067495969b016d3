"""Per-call cost of the launch-time argument check (``jit/arguments.py``) on the CPU.

The check wraps a variant's launch function; here it wraps a launch function
that does nothing, so that what is timed is the check alone: the wrapped
function minus the bare one, each timed with ``timeit`` over ``--calls``
calls, ``--rounds`` times alternating; the minimum (the least disturbed
round, as ``timeit`` recommends on a shared machine) and the median are
reported. Kernels: the add
example (three 1-D tensors whose sizes must match) and the matmul example
(three 2-D tensors, one pair of sizes that must match); per tensor the
check also reads its dtype, its storage's size (element offsets below
2**31) and, for a tensor the kernel reads, whether it is a ``meta`` tensor.

    python bench/argument_check.py [--calls 100000] [--rounds 15]
"""

import argparse
import importlib.util
import pathlib
import statistics
import timeit

import torch

from ninetoothed_ascend.jit import arguments

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(relative):
    spec = importlib.util.spec_from_file_location(
        relative.replace("/", "_"), EXAMPLES / relative
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    return module.kernel


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=15)
    options = parser.parse_args()

    cases = {
        "add": (
            load("elementwise/add.py"),
            tuple(torch.empty(4096) for _ in range(3)),
        ),
        "matmul": (
            load("matmul/matmul.py"),
            (torch.empty(64, 32), torch.empty(32, 48), torch.empty(64, 48)),
        ),
    }

    def nothing(*args):
        return None

    print(
        "| kernel | checks | bare call, min / median (ns) "
        "| checked call, min / median (ns) | check alone, min / median (ns) |"
    )
    print("| --- | --- | ---: | ---: | ---: |")

    for name, (handle, args) in cases.items():
        required = handle.requirements
        checked = arguments.checked(nothing, required, name, "cpu")
        times = {"bare": [], "checked": []}

        for _ in range(options.rounds):
            for label, function in (("bare", nothing), ("checked", checked)):
                seconds = timeit.timeit(
                    "function(a, b, c)",
                    globals={
                        "function": function,
                        "a": args[0],
                        "b": args[1],
                        "c": args[2],
                    },
                    number=options.calls,
                )
                times[label].append(seconds / options.calls * 1e9)

        bare, wrapped = times["bare"], times["checked"]
        alone = [w - b for w, b in zip(wrapped, bare)]
        checks = (
            f"{len(required.ndims)} ndim, dtype and offset, "
            f"{len(required.accessed)} meta, {len(required.equal_sizes)} size groups"
        )
        print(
            f"| {name} | {checks} "
            + " ".join(
                f"| {min(t):.0f} / {statistics.median(t):.0f}"
                for t in (bare, wrapped, alone)
            )
            + " |"
        )


if __name__ == "__main__":
    main()
