"""Where ``make`` spends its time: each step of a cold ``make`` + the variant a call needs, or of a warm ``make``, timed around it.

Fresh processes, as ``bench/warm_make.py`` runs them; each step is a
function of the package, timed by a wrapper around it (wall clock, its calls
in the process summed), medians over ``--repeats`` processes. ``cold``:
an empty cache, ``make`` (which builds the CPU variant on a host without a
GPU or NPU, or ``--variant``'s, which the measuring process takes for the
likely one as ``bench/warm_make.py --variant`` does), then
``handle.variant(V)``; then, untimed by ``make``, ``ast.parse`` of
NineToothed's source and ``ast.unparse`` of the variant's tree, which any
rewrite of the source pays whatever its passes. Run by ``.venv-ascend``'s
Python with ``--variant npu``, triton-ascend imports the NPU variant, as
on an Ascend host. ``warm``: the
cache a previous process filled with all three variants, and the memos the
process after it stored; the first ``make`` of the process. With ``--after
NAME``, each process first makes the example NAME, untimed, as
``bench/warm_make.py --after`` does: the steps of a process's second
kernel, without what a process pays once. The wrappers add a few
microseconds per call: compare steps, not totals, with
``bench/warm_make.py``.

    PYTHONPATH=src python bench/make_steps.py [--mode cold|warm] [--names add ...] [--repeats 9]
        [--after NAME] [--variant cpu|npu]
"""

import argparse
import statistics
import tempfile

from warm_make import CAPTURE_CALL, NAMES, example_path, run_measurement

MEASURE = (
    """
import ast, functools, importlib.util, json, sys, time
import torch, ninetoothed, ninetoothed_ascend
from ninetoothed_ascend import host
import ninetoothed_ascend.jit
from ninetoothed_ascend import cache
from ninetoothed_ascend.jit import fingerprint, variants
from ninetoothed_ascend import runtime
from ninetoothed_ascend.runtime import handle

# The subpackage, not the decorator the package exports under its name.
jit = sys.modules["ninetoothed_ascend.jit"]
path, mode, after, wanted = sys.argv[1:]

if wanted:
    # The host whose calls are on ``wanted`` tensors builds that variant in
    # ``make``, as in bench/warm_make.py; without it, this host's likely one.
    host.likely_call_device_type = lambda: wanted
else:
    wanted = "cpu"

steps = {}

def timed(owner, name, step):
    function = getattr(owner, name)

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            steps[step] = steps.get(step, 0) + time.perf_counter() - start

    setattr(owner, name, wrapper)

timed(cache, "default_directory", "cache directory")
timed(jit, "generate_source", "NineToothed's generation")
timed(jit, "definition_digest", "definition digest")
timed(jit, "environment_key", "environment key")
timed(fingerprint, "_describe_environment", "environment (in the key)")
timed(cache.Cache, "load", "cache load")
timed(cache.Cache, "lock", "cache lock (made)")
timed(cache.Cache, "store", "cache store")
timed(jit, "read_launch_facts", "launch facts (a parse of its own)")
timed(fingerprint._Describer, "_describe_symbol", "symbols (in the digest)")
timed(fingerprint, "_package_digest", "package digest (in the environment)")
timed(variants, "launch_facts", "launch facts (in the pipeline)")
# Bound by the CPU variant when it is imported.
timed(runtime, "interpreted", "interpreted triton.language functions")
timed(variants, "run_pipeline", f"{wanted} pipeline")
timed(handle, "import_variant", "import of the variant")
timed(jit, "new_handle", "new handle")
timed(cache, "make_directory", "cache directories")
import filelock

timed(filelock.FileLock, "__enter__", "lock acquire")
timed(filelock.FileLock, "__exit__", "lock release")
"""
    + CAPTURE_CALL
    + """
if after:
    # Another kernel first, as bench/warm_make.py --after makes it.
    other, other_args, other_kwargs = captured_call(after)
    made = real[other](*other_args, **other_kwargs)

    if mode == "cold":
        made.variant(wanted)
    else:
        made.build()

name, args, kwargs = captured_call(path)
steps.clear()
start = time.perf_counter()
kernel = real[name](*args, **kwargs)
steps["make"] = time.perf_counter() - start

if mode == "cold":
    start = time.perf_counter()
    kernel.variant(wanted)
    steps[f"variant ({wanted})"] = time.perf_counter() - start
    # Outside the timed make: what a rewrite costs before any pass.
    start = time.perf_counter()
    ast.parse(kernel.source("cuda"))
    steps["parse of NineToothed's source (after)"] = time.perf_counter() - start
    tree = ast.parse(kernel.source(wanted))
    start = time.perf_counter()
    ast.unparse(tree)
    steps[f"unparse of the {wanted} variant (after)"] = time.perf_counter() - start
elif mode == "fill":
    kernel.build()

print(json.dumps({step: seconds * 1e3 for step, seconds in steps.items()}))
"""
)


def measure(path, mode, cache_dir, after=None, variant=None):
    return run_measurement(
        MEASURE, (str(path), mode, str(after or ""), variant or ""), cache_dir
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("cold", "warm"), default="cold")
    parser.add_argument("--names", nargs="+", default=NAMES)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument(
        "--after",
        type=example_path,
        metavar="NAME",
        help="an example each process makes first (with the variant, or all "
        "three when filling the warm cache), so the kernel timed is its second",
    )
    parser.add_argument(
        "--variant",
        choices=("cpu", "npu"),
        help="the variant a call needs, which make builds (default: make builds "
        "this host's likely one, the CPU variant is timed; npu stands for an "
        "Ascend host; run with .venv-ascend's Python)",
    )
    options = parser.parse_args()
    after = options.after
    columns = {}

    for name in options.names:
        path = example_path(name)
        runs = []

        with tempfile.TemporaryDirectory() as directory:
            if options.mode == "warm":
                measure(path, "fill", directory, after, options.variant)
                # stores the memos
                measure(path, "warm", directory, after, options.variant)

            for _ in range(options.repeats):
                if options.mode == "cold":
                    with tempfile.TemporaryDirectory() as empty:
                        runs.append(
                            measure(path, "cold", empty, after, options.variant)
                        )
                else:
                    runs.append(
                        measure(path, "warm", directory, after, options.variant)
                    )

        columns[name] = {
            step: statistics.median(run.get(step, 0.0) for run in runs)
            for step in runs[0]
        }

    steps = list(dict.fromkeys(step for column in columns.values() for step in column))
    print(f"| step ({options.mode}, ms) | " + " | ".join(columns) + " |")
    print("| --- |" + " ---: |" * len(columns))

    for step in steps:
        values = (f"{column.get(step, 0.0):.2f}" for column in columns.values())
        print(f"| {step} | " + " | ".join(values) + " |")


if __name__ == "__main__":
    main()
