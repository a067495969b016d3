"""Warm ``make`` vs ``ninetoothed.make`` for the example kernels, on the CPU.

For each example, a fresh process with an empty cache imports it once (cold:
code generation), then fresh processes with the warm cache each time:

* the example's import, which runs ``ninetoothed_ascend.make`` (a cache hit);
* ``ninetoothed.make`` on the same arrangement, application and tensors
  (NineToothed generates the code again on every call), under the same
  stand-in device properties, since there is no GPU here.

Both are timed in the same process, so their ratio is the number to read.

    python bench/warm_make.py [--repeats 5]
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
NAMES = ("add", "softmax", "rms_norm", "matmul")

MEASURE = """
import importlib.util, json, sys, time
import ninetoothed
from ninetoothed_ascend.jit import ninetoothed_adapter

path = sys.argv[1]
spec = importlib.util.spec_from_file_location("example", path)
module = importlib.util.module_from_spec(spec)
start = time.perf_counter()
spec.loader.exec_module(module)
warm = time.perf_counter() - start

import ninetoothed_ascend

with ninetoothed_ascend.disabled(), ninetoothed_adapter.driver_reporting(
    ninetoothed_adapter.device_properties()
):
    start = time.perf_counter()
    if hasattr(module, "tensors"):
        ninetoothed.make(module.arrangement, module.application, module.tensors)
    else:
        ninetoothed.jit(getattr(module, module.kernel.kernel_name))
    plain = time.perf_counter() - start

print(json.dumps({"make": warm, "ninetoothed.make": plain}))
"""


def measure(path, cache_dir):
    env = os.environ | {"NINETOOTHED_ASCEND_CACHE_DIR": cache_dir}
    completed = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )

    return json.loads(completed.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()

    print(
        "| kernel | cold make (ms) | warm make (ms) | ninetoothed.make (ms) | speed-up |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")

    for name in NAMES:
        path = next(EXAMPLES.rglob(f"{name}.py"))

        with tempfile.TemporaryDirectory() as cache_dir:
            cold = measure(path, cache_dir)["make"]
            runs = [measure(path, cache_dir) for _ in range(arguments.repeats)]

        warm = statistics.median(run["make"] for run in runs)
        plain = statistics.median(run["ninetoothed.make"] for run in runs)
        ratio = statistics.median(run["ninetoothed.make"] / run["make"] for run in runs)
        print(
            f"| {name} | {cold * 1e3:.1f} | {warm * 1e3:.2f} | {plain * 1e3:.1f} | {ratio:.0f}x |"
        )


if __name__ == "__main__":
    main()
