"""How close a cold ``make`` + the variant a call needs can come to ``ninetoothed.make`` if its passes cost nothing.

Fresh processes, as ``bench/warm_make.py`` runs them, one after another in
each repeat, each timing the first call of its process:

* ``ninetoothed.make``: plain NineToothed (its generation, its file written
  and imported), timed as ``bench/warm_make.py`` times it
  (``PLAIN_MAKE``): without a GPU, under the stand-in device properties
  ninetoothed-ascend uses then;
* ``make`` + variant: an empty cache, ``make`` (which builds the variant a
  call needs here, or ``--variant``'s), then ``handle.variant(V)``;
* ``make`` with every pass of V's pipeline removed in the measuring process
  (``pipelines.VARIANTS[V] = ()``), plus the import of the real variant
  (the median of the previous mode's): what a ``make`` that stores a
  rewritten variant pays whatever its passes cost. That is the cache key
  (the definition and the environment, with the digest of this package's
  sources), the lock, one parse of NineToothed's source with the launch
  requirements read from it, one unparse, the store of NineToothed's
  source, the variant and the entry, and the variant's import. The import
  is taken from the real variant because NineToothed's source, which the
  variant without passes is, imports differently (``triton.jit`` kernels).
  A variant whose passes took no time could not be built faster than this.

With ``--after NAME``, each measuring process first makes the example NAME
(untimed, with its passes), as ``bench/warm_make.py --after`` does: the
kernel timed is then the process's second.

Run by ``.venv-ascend``'s Python with ``--variant npu``, both
``ninetoothed.make``'s module and the NPU variant are imported by
triton-ascend's ``triton.jit``, as on an Ascend host (where the table's
import column matters: triton-ascend reads a kernel's source twice).

Medians over the repeats; ratios are the medians' ratios to
``ninetoothed.make``; ``--clock cpu`` (the default) times the CPU time of
the measuring process. For a host without a GPU: the variant a call needs
is the CPU variant there, or with ``--variant npu`` the NPU variant, as on
an Ascend host (built and imported without an NPU). On a CUDA host it is
NineToothed's own source, which no pass rewrites.

    PYTHONPATH=src python bench/make_floor.py [--repeats 11] [--names add ...]
        [--clock cpu] [--variant cpu|npu] [--after NAME]
"""

import argparse
import statistics
import tempfile

from warm_make import (
    AFTER,
    CAPTURE_CALL,
    CLOCKS,
    NAMES,
    PLAIN_MAKE,
    example_path,
    run_measurement,
)

MEASURE = (
    """
import importlib.util, json, sys, time
import torch
import ninetoothed
import ninetoothed_ascend
from ninetoothed_ascend import host
from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.jit import ninetoothed_adapter

path, mode, clock, wanted, after = sys.argv[1:]
clock = getattr(time, clock)
cuda = torch.cuda.is_available()
"""
    + CAPTURE_CALL
    + PLAIN_MAKE
    + """
device = wanted
host.likely_call_device_type = lambda: device
"""
    + AFTER
    + """
name, args, kwargs = captured_call(path)

if mode == "plain":
    _, seconds = plain(name, args, kwargs)
    print(json.dumps({"seconds": seconds}))
    sys.exit()

if mode == "floor":
    pipelines.VARIANTS[wanted] = ()

handle, made = timed(lambda: real[name](*args, **kwargs))
imported = 0

if mode == "variant":
    # The floor's import is the real variant's: NineToothed's source, which
    # the variant without passes is, imports differently.
    _, imported = timed(lambda: handle.variant(wanted))

print(
    json.dumps(
        {
            "seconds": made + imported,
            "make": made,
            "import": imported,
            "rewrites": list(handle.rewrites(wanted)),
        }
    )
)
"""
)

MODES = ("plain", "variant", "floor")


def measure(path, mode, clock, variant, after=None):
    with tempfile.TemporaryDirectory() as cache:
        return run_measurement(
            MEASURE,
            (str(path), mode, CLOCKS[clock], variant, str(after or "")),
            cache,
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--names", nargs="+", default=NAMES)
    parser.add_argument("--clock", choices=CLOCKS, default="cpu")
    parser.add_argument("--variant", choices=("cpu", "npu"), default="cpu")
    parser.add_argument(
        "--after",
        type=example_path,
        metavar="NAME",
        help="an example each process makes first, so the kernel timed is its second",
    )
    arguments = parser.parse_args()
    after = arguments.after

    print(
        f"| kernel | ninetoothed.make (ms) | make + {arguments.variant} variant (ms) "
        "| ratio | the variant's import (ms) "
        "| no pass: make + the variant's import (ms) | ratio |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")

    for name in arguments.names:
        path = example_path(name)
        runs = {mode: [] for mode in (*MODES, "import")}

        for _ in range(arguments.repeats):
            for mode in MODES:
                result = measure(path, mode, arguments.clock, arguments.variant, after)

                if mode == "floor" and result["rewrites"]:
                    raise AssertionError(f"{name}: a pass ran: {result['rewrites']}")

                runs[mode].append(result["make" if mode == "floor" else "seconds"])

                if mode == "variant":
                    runs["import"].append(result["import"])

        median = {
            mode: statistics.median(values) * 1e3 for mode, values in runs.items()
        }
        median["floor"] += median["import"]
        print(
            f"| {name} | {median['plain']:.1f} | {median['variant']:.1f} "
            f"| {median['variant'] / median['plain']:.2f}x | {median['import']:.1f} "
            f"| {median['floor']:.1f} "
            f"| {median['floor'] / median['plain']:.2f}x |",
            flush=True,
        )

    print(
        f"\nclock: {arguments.clock}"
        + (f"; each process made {after.stem} first" if after else "")
    )


if __name__ == "__main__":
    main()
