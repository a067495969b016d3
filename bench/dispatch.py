"""Per-call dispatch overhead of a handle vs calling the CUDA variant's launch function directly.

Needs a CUDA GPU. Uses the add example on a small vector, so that the launch
itself is as cheap as it gets and the overhead is as visible as it gets.
The two ways of calling alternate in rounds; each round times ``--calls``
back-to-back calls (host time per call, the GPU queue is drained between
rounds), and the medians are reported with their difference and ratio.

    python bench/dispatch.py [--calls 2000] [--rounds 30]
"""

import argparse
import importlib.util
import pathlib
import statistics
import time

import torch

import ninetoothed_ascend
from ninetoothed_ascend.jit.dispatch import new_handle

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def time_calls(function, args, calls):
    torch.cuda.synchronize()
    start = time.perf_counter()

    for _ in range(calls):
        function(*args)

    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()

    return elapsed / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--size", type=int, default=4096)
    arguments = parser.parse_args()

    spec = importlib.util.spec_from_file_location(
        "add", EXAMPLES / "elementwise" / "add.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    handle = module.kernel
    direct = handle.variant("cuda")
    x, y = (torch.randn(arguments.size, device="cuda") for _ in range(2))
    z = torch.empty_like(x)
    args = (x, y, z)

    for function in (handle, direct):  # autotune and compile before timing
        function(*args)
        time_calls(function, args, 100)

    via_handle, via_launch = [], []

    for _ in range(arguments.rounds):
        via_handle.append(time_calls(handle, args, arguments.calls))
        via_launch.append(time_calls(direct, args, arguments.calls))

    # The dispatch alone: handles whose launch function does nothing, with
    # the kernel's specialized ``__call__`` and with the generic one.
    def nothing(*args):
        return None

    launches = {"cuda": nothing}
    specialized = new_handle(
        handle.kernel_name, handle.key, handle.entry, launches=launches
    )
    generic = ninetoothed_ascend.Handle(
        handle.kernel_name, handle.key, handle.entry, launches=launches
    )
    dispatch_only = {
        name: statistics.median(
            time_calls(isolated, args, arguments.calls)
            - time_calls(nothing, args, arguments.calls)
            for _ in range(arguments.rounds)
        )
        for name, isolated in (("specialized", specialized), ("generic", generic))
    }

    handle_us = statistics.median(via_handle) * 1e6
    launch_us = statistics.median(via_launch) * 1e6
    print(f"device: {torch.cuda.get_device_name()}")
    print(f"launch function directly: {launch_us:.2f} us/call")
    print(f"through the handle:       {handle_us:.2f} us/call")
    print(
        f"dispatch overhead:        {handle_us - launch_us:.3f} us/call "
        f"({(handle_us / launch_us - 1) * 100:.2f} %)"
    )
    for name, seconds in dispatch_only.items():
        print(
            f"dispatch alone, {name} __call__ (no-op launch): {seconds * 1e6:.3f} us/call"
        )


if __name__ == "__main__":
    main()
