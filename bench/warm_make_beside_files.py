"""Warm ``make`` in a program that writes files in its own directory, as training and test scripts do.

The directory of the running script is ``sys.path[0]``, and each process
writes one file there (a log). Each example is made by a fresh process of
such a script against a cache that earlier processes filled; the time is
the first ``make`` of the process (wall clock), as ``warm first`` in
``bench/warm_make.py``, whose processes run with ``-c`` from a directory
nothing writes to (on a GPU, the CUDA runtime and Triton's driver are
started before the timer, as there). Medians over ``--repeats``
processes, after two that fill the cache and its memos.

    PYTHONPATH=src python bench/warm_make_beside_files.py [--repeats 9] [--names add ...]
"""

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from warm_make import CAPTURE, NAMES, example_path

SCRIPT = (
    """
import importlib.util, os, pathlib, sys, time
import torch, ninetoothed, ninetoothed_ascend

path = sys.argv[1]

# Untimed, as in bench/warm_make.py: what any program that launches on a GPU
# pays once, whichever call asks first (the CUDA runtime, Triton's driver).
if torch.cuda.is_available():
    import triton

    triton.runtime.driver.active.get_current_device()
"""
    + CAPTURE
    + """
start = time.perf_counter()
real[name](*args, **kwargs)
seconds = time.perf_counter() - start
(pathlib.Path(__file__).parent / f"log-{os.getpid()}.txt").write_text("done\\n")
print(seconds)
"""
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--names", nargs="+", default=NAMES)
    arguments = parser.parse_args()

    print("| kernel | warm make, first of the process (ms) |")
    print("| --- | ---: |")

    for name in arguments.names:
        example = example_path(name)

        with (
            tempfile.TemporaryDirectory() as cache,
            tempfile.TemporaryDirectory() as project,
        ):
            script = pathlib.Path(project) / "train.py"
            script.write_text(SCRIPT)
            env = os.environ | {"NINETOOTHED_ASCEND_CACHE_DIR": cache}
            times = [
                float(
                    subprocess.run(
                        [sys.executable, str(script), str(example)],
                        env=env,
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout.split()[-1]
                )
                for _ in range(arguments.repeats + 2)
            ]

        print(f"| {name} | {statistics.median(times[2:]) * 1e3:.2f} |", flush=True)


if __name__ == "__main__":
    main()
