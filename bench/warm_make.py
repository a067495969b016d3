"""``make`` (cold and warm) vs ``ninetoothed.make`` for example kernels, on this machine.

Every number is the first ``make`` of a fresh process, timed around that one
call: the example module is executed with ``make``/``jit`` replaced by a stub
that only captures their arguments, then the real function is called with
them. Per example and repeat, one process each for:

* ``ninetoothed.make``: plain NineToothed (generation, its file written and
  imported). On a GPU it asks Triton's driver for the device's properties,
  as ``make`` does. Without a GPU, under the stand-in device properties
  ninetoothed-ascend uses then, since plain NineToothed cannot run on a
  machine without one;
* cold ``make`` + the variant a call needs: an empty cache, ``make``, then
  ``handle.variant(V)`` (the variant imported; ``make`` built and stored it),
  where V is the device type a call most likely makes here
  (``ninetoothed_ascend.host.likely_call_device_type``: ``cuda``, ``npu``,
  else ``cpu``), or ``--variant``'s, which the measuring process then takes
  for the likely one (``npu`` stands for an Ascend host: building and
  importing the NPU variant needs no NPU);
* cold ``make`` + all three variants: an empty cache, ``make``, then
  ``handle.build()`` (what ``warm`` does);
* warm ``make``: the cache the previous process filled. ``first`` is the
  first ``make`` of the process, which also computes the environment digest
  of the key once per process; ``next`` is a second ``make`` of the kernel
  in the same process (a hit from the repeats before).

On a GPU, what a process pays once before its first launch, whichever
call asks first, is paid before any timer in every mode: the CUDA runtime
(about 0.18 s on an H100), torch's CUDA state (about 20 ms) and Triton's
driver (about 15 ms, two subprocesses). Timed, they went to whichever
``make`` came first, plain or not (``--time-process-start`` times them
too). Without a GPU there is none of them.

With ``--after NAME``, each measuring process first makes the example
NAME, untimed (with the variant a call needs; with ``ninetoothed.make`` in
the plain mode), and the kernel timed is the process's second: what a
library that makes many kernels pays for each after its first, without
what a process pays once (the environment's digest in the key, the cache's
directories, first calls into libraries). In the warm mode NAME is found
in the cache too, since the process that filled it made it first as well.

Each timed call starts after a full garbage collection (``gc.collect()``),
in every mode: a process owes one for what it imported,
and it fell due in whichever call allocated next, so that one call of a
mode could pay 100 ms the other modes paid before their timers.

Run by ``.venv-ascend``'s Python with ``--variant npu``, triton-ascend's
``triton.jit`` imports both NineToothed's module and the NPU variant, as on
an Ascend host.

Medians over the repeats; ratios are the medians' ratios. ``--clock cpu``
times the CPU time of the measuring process instead of the elapsed time.

    python bench/warm_make.py [--repeats 5] [--names add matmul ...] [--clock cpu]
        [--time-process-start] [--variant cuda|npu|cpu] [--after NAME]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
NAMES = ("add", "softmax", "rms_norm", "matmul", "flash_attention")


def example_path(name):
    """The example module ``examples/**/<name>.py`` (``pathlib.Path``); ``SystemExit`` naming ``name`` where there is none."""

    found = next(EXAMPLES.rglob(f"{name}.py"), None)

    if found is None:
        raise SystemExit(f"no example named {name!r} under {EXAMPLES}")

    return found


#: ``--clock``: elapsed time, or the CPU time of the measuring process alone
#: (steadier on a machine that other work shares; excludes waiting on I/O).
CLOCKS = {"wall": "perf_counter", "cpu": "process_time"}

#: Code that defines ``captured_call(path)``, which runs the example module at
#: ``path`` with ``make``/``jit`` captured and returns the ``(name, args,
#: kwargs)`` of its one call, and ``real`` (the functions).
CAPTURE_CALL = """
real = {name: getattr(ninetoothed_ascend, name) for name in ("make", "jit")}


def captured_call(path):
    captured = []

    def stub(name):
        def capture(*args, **kwargs):
            captured.append((name, args, kwargs))
        return capture

    for name in real:
        setattr(ninetoothed_ascend, name, stub(name))
    spec = importlib.util.spec_from_file_location("example", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    for name, function in real.items():
        setattr(ninetoothed_ascend, name, function)
    (call,) = captured
    return call
"""

#: Code that defines ``timed(function)`` (``(result, seconds)`` by the
#: measuring process's ``clock``, after a full garbage collection) and
#: ``plain(name, args, kwargs)``, which times ``ninetoothed.make`` (or
#: ``jit``) alone, as plain NineToothed runs it: with the GPU's own driver
#: where ``cuda``, else under the stand-in device properties
#: ninetoothed-ascend uses without a GPU. Under triton-ascend
#: (``.venv-ascend``) NineToothed's source is imported by triton-ascend's
#: ``triton.jit``, as on an Ascend host.
PLAIN_MAKE = """
import gc

import triton


def timed(function):
    # A full collection the process owes for what it imported is paid first,
    # in every mode: it falls due in whichever call allocates next, and a
    # collection of the whole heap after importing torch and Triton takes
    # longer than a warm make.
    gc.collect()
    start = clock()
    result = function()
    return result, clock() - start


def plain(name, args, kwargs):
    # ``ninetoothed.make`` timed, the setting of the stage around it not.
    make = lambda: getattr(ninetoothed, name)(*args, **kwargs)

    with ninetoothed_ascend.disabled():
        if cuda:  # NineToothed asks the GPU's driver itself
            return timed(make)

        with ninetoothed_adapter.driver_reporting(
            ninetoothed_adapter.device_properties()
        ):
            # triton-ascend's ``triton.autotune`` asks the active driver for
            # its benchmarker when the generated module is imported (an
            # Ascend host's driver has one); the stand-in answers with none.
            triton.runtime.driver.active.get_benchmarker = lambda: None
            return timed(make)

"""

#: :data:`CAPTURE_CALL`, then ``name``, ``args`` and ``kwargs`` of the call
#: of the example module at ``path``.
CAPTURE = CAPTURE_CALL + "name, args, kwargs = captured_call(path)\n"

#: Code that, where ``after`` names an example, makes it first, untimed,
#: with ``mode``'s make (plain NineToothed's, or ``make`` and the variant for
#: ``device``), as a library makes its kernels one after another: what a
#: process pays once is paid before the timer.
AFTER = """
if after:
    other = captured_call(after)

    if mode == "plain":
        plain(*other)
    else:
        real[other[0]](*other[1], **other[2]).variant(device)
"""

MEASURE = (
    """
import importlib.util, json, sys, time
import torch
import ninetoothed
import ninetoothed_ascend
from ninetoothed_ascend import host
from ninetoothed_ascend.jit import ninetoothed_adapter

path, mode, clock, time_process_start, wanted, after = sys.argv[1:]
clock = getattr(time, clock)
time_process_start = time_process_start == "1"
# Untimed: any CUDA program starts the CUDA runtime once (about 0.18 s on an
# H100), whichever call asks first; every mode asks here.
cuda = torch.cuda.is_available()

if cuda and not time_process_start:
    # Torch's CUDA state and Triton's driver: created once by any program
    # that launches a Triton kernel on the GPU, whichever call asks first.
    import triton

    triton.runtime.driver.active.get_current_device()

if wanted:
    # The host whose calls are on ``wanted`` tensors, where ``make`` builds
    # that variant itself (an Ascend host imports torch_npu).
    host.likely_call_device_type = lambda: wanted

device = host.likely_call_device_type()
"""
    + CAPTURE_CALL
    + PLAIN_MAKE
    + AFTER
    + """
name, args, kwargs = captured_call(path)

if mode == "plain":
    _, seconds = plain(name, args, kwargs)
    print(json.dumps({"seconds": seconds}))
    sys.exit()

handle, make = timed(lambda: real[name](*args, **kwargs))

if mode == "variant":
    _, variant = timed(lambda: handle.variant(device))
    print(json.dumps({"seconds": make + variant, "device": device}))
elif mode == "all":
    _, build = timed(handle.build)
    print(json.dumps({"seconds": make + build}))
else:
    _, again = timed(lambda: real[name](*args, **kwargs))
    print(json.dumps({"seconds": make, "next": again}))
"""
)


def run_measurement(code, arguments, cache_dir):
    """Run ``code`` in a fresh Python process with ``arguments`` (``str``) and cache directory ``cache_dir``; return the JSON its last line prints."""

    completed = subprocess.run(
        [sys.executable, "-c", code, *arguments],
        env=os.environ | {"NINETOOTHED_ASCEND_CACHE_DIR": str(cache_dir)},
        capture_output=True,
        text=True,
        check=True,
    )

    return json.loads(completed.stdout.strip().splitlines()[-1])


def measure(path, mode, cache_dir, clock, time_process_start, variant=None, after=None):
    return run_measurement(
        MEASURE,
        (
            str(path),
            mode,
            CLOCKS[clock],
            str(int(time_process_start)),
            variant or "",
            str(after or ""),
        ),
        cache_dir,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--names", nargs="+", default=NAMES)
    parser.add_argument("--clock", choices=CLOCKS, default="wall")
    parser.add_argument(
        "--time-process-start",
        action="store_true",
        help="on a GPU, time torch's CUDA state and Triton's driver in the first "
        "make of each process",
    )
    parser.add_argument(
        "--variant",
        choices=("cuda", "npu", "cpu"),
        help="the variant a call needs (default: the likely one here); make builds "
        "it; npu stands for an Ascend host, whose first call needs the NPU "
        "variant (built without an NPU)",
    )
    parser.add_argument(
        "--after",
        type=example_path,
        metavar="NAME",
        help="an example each measuring process makes first, untimed (with its "
        "variant; plain NineToothed's make in the plain mode): the cost of a "
        "kernel after the first of a process",
    )
    arguments = parser.parse_args()
    after = arguments.after

    print(
        "| kernel | ninetoothed.make (ms) | make + variant (ms) | ratio "
        "| make + all three (ms) | ratio | warm make, first / next (ms) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    device = None
    start = arguments.time_process_start

    for name in arguments.names:
        path = example_path(name)
        runs = {mode: [] for mode in ("plain", "variant", "all", "warm", "next")}

        with tempfile.TemporaryDirectory() as warm_cache:
            for repeat in range(arguments.repeats):
                for mode in ("plain", "variant", "all"):
                    with tempfile.TemporaryDirectory() as cold_cache:
                        result = measure(
                            path,
                            mode,
                            cold_cache,
                            arguments.clock,
                            start,
                            arguments.variant,
                            after,
                        )
                    runs[mode].append(result["seconds"])
                    device = result.get("device", device)

                # Filled and found as the host of ``--variant`` would.
                if repeat == 0:
                    measure(
                        path,
                        "variant",
                        warm_cache,
                        arguments.clock,
                        start,
                        arguments.variant,
                        after,
                    )

                result = measure(
                    path,
                    "warm",
                    warm_cache,
                    arguments.clock,
                    start,
                    arguments.variant,
                    after,
                )
                runs["warm"].append(result["seconds"])

                if repeat > 0:  # the first warm run made the second kernel
                    runs["next"].append(result["next"])

        median = {
            mode: statistics.median(values) * 1e3
            for mode, values in runs.items()
            if values
        }
        print(
            f"| {name} | {median['plain']:.1f} | {median['variant']:.1f} "
            f"| {median['variant'] / median['plain']:.2f}x | {median['all']:.1f} "
            f"| {median['all'] / median['plain']:.2f}x "
            f"| {median['warm']:.2f} / {median.get('next', float('nan')):.2f} |",
            flush=True,
        )

    print(
        f"\nvariant a call needs (make builds it): {device}; clock: {arguments.clock}"
        + (f"; each process made {after.stem} first" if after else "")
    )


if __name__ == "__main__":
    main()
