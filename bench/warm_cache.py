"""Cold vs warmed cache for a 20-kernel program, and ``warm -j 1`` vs ``-j 2``, on the CPU.

The program is the test fixture ``tests/downstream`` (an operator library on
plain NineToothed, made dual-variant by ``import ninetoothed_ascend``): it makes
each of its 20 element-wise kernels at run time and runs it on CPU tensors.

1. ``ninetoothed-ascend record`` runs it once and writes a manifest.
2. For each repeat, in fresh cache directories:
   * cold: the program with an empty cache;
   * warmed: ``warm MANIFEST`` first (not timed), then the program;
   * ``warm MANIFEST -j 1`` and ``-j 2`` (timed by the command's ``--json``).

The program reports the seconds its imports took (torch, Triton, NineToothed,
this package: the same cold or warm), then, from there, the seconds to its
first result (first kernel made and run) and to its last, and the seconds
spent making the 20 kernels (cache lookups, or generation when cold). Medians.

    python bench/warm_cache.py [--repeats 3]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOWNSTREAM = ROOT / "tests" / "downstream"
CLI = [sys.executable, "-c", "from ninetoothed_ascend.cli import main; main()"]

PROGRAM = """
import time
start = time.perf_counter()
import json, torch
import ninetoothed_ascend
from downstream_ops import ops
imported = time.perf_counter()
x = torch.randn(3, 100)
y = torch.rand(3, 100) + 0.5
times, making = [], 0.0
for op in ops.OPS:
    before = time.perf_counter()
    ops.kernel(op, x.ndim, x.dtype)
    making += time.perf_counter() - before
    ops.run(op, x, y)
    times.append(time.perf_counter() - imported)
print(json.dumps({"imports": imported - start, "first": times[0], "all": times[-1],
                  "make": making}))
"""


def environment(cache_dir):
    path = os.pathsep.join([str(ROOT / "src"), str(DOWNSTREAM)])
    return os.environ | {
        "NINETOOTHED_ASCEND_CACHE_DIR": str(cache_dir),
        "PYTHONPATH": path,
    }


def run(command, cache_dir):
    completed = subprocess.run(
        command, env=environment(cache_dir), capture_output=True, text=True, check=True
    )
    return completed.stdout


def program(cache_dir):
    start = time.perf_counter()
    result = json.loads(
        run([sys.executable, "-c", PROGRAM], cache_dir).splitlines()[-1]
    )
    return result | {"process": time.perf_counter() - start}


def warm(manifest, cache_dir, jobs):
    output = run(CLI + ["warm", str(manifest), "-j", str(jobs), "--json"], cache_dir)
    report = json.loads(output)
    assert report["counts"]["built"] == 20, report["counts"]
    return report["seconds"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    rows = {"cold": [], "warmed": []}
    throughput = {1: [], 2: []}

    with tempfile.TemporaryDirectory() as base:
        base = pathlib.Path(base)
        manifest = base / "manifest.json"
        run(
            CLI
            + [
                "record",
                "-o",
                str(manifest),
                "--",
                sys.executable,
                "-m",
                "downstream_ops",
            ],
            base / "recorded",
        )

        for repeat in range(arguments.repeats):
            rows["cold"].append(program(base / f"cold{repeat}"))
            warm(manifest, base / f"warmed{repeat}", 2)
            rows["warmed"].append(program(base / f"warmed{repeat}"))

            for jobs in throughput:
                throughput[jobs].append(
                    warm(manifest, base / f"j{jobs}-{repeat}", jobs)
                )

    print(
        "| cache | imports (s) | first result after imports (s) "
        "| all 20 results after imports (s) | in make, 20 kernels (s) | process wall (s) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")

    for name, results in rows.items():
        medians = [
            statistics.median(r[k] for r in results)
            for k in ("imports", "first", "all", "make", "process")
        ]
        print(f"| {name} | " + " | ".join(f"{m:.2f}" for m in medians) + " |")

    print()
    print("| warm | seconds for 20 kernels (median) | kernels/s | all runs (s) |")
    print("| --- | ---: | ---: | --- |")

    for jobs, seconds in throughput.items():
        median = statistics.median(seconds)
        runs = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"| -j {jobs} | {median:.2f} | {20 / median:.1f} | {runs} |")

    print(f"\nload average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
