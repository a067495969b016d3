"""CPU time of each variant's pass pipeline on NineToothed's source, best of N, in one process.

For the kernels of ``bench/warm_make.py`` by default. NineToothed's source
is generated once per kernel (``handle.source("cuda")``), then each
pipeline of :data:`ninetoothed_ascend.compiler.pipelines.VARIANTS` is run on
it ``--repeats`` times; the fastest run counts (``time.process_time``).
With ``--first``, each pipeline runs once in a fresh process instead (what
a cold ``make`` pays: the first run of a pipeline in a process), best of
``--repeats`` processes.
Works on older trees too (``PYTHONPATH=<tree>/src``), whose pass machinery
lived in ``ninetoothed_ascend.ascendify.base``.

    NINETOOTHED_ASCEND_CACHE_DIR=$(mktemp -d) PYTHONPATH=src python bench/pipeline_time.py [--names add ...] [--repeats 3] [--first]
"""

import argparse
import importlib.util
import json
import pathlib
import subprocess
import sys
import time

import ninetoothed_ascend

try:
    from ninetoothed_ascend.compiler.passes import run_pipeline
except ImportError:
    from ninetoothed_ascend.ascendify.base import run_pipeline
from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.target import Target

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
NAMES = ("add", "softmax", "rms_norm", "matmul", "flash_attention")


def cuda_source(name):
    """NineToothed's source of example ``name``: its module run with ``make``/``jit`` captured, then made."""

    captured = []
    real = {
        function: getattr(ninetoothed_ascend, function) for function in ("make", "jit")
    }

    for function in real:
        setattr(
            ninetoothed_ascend,
            function,
            lambda *args, _function=function, **kwargs: captured.append(
                (_function, args, kwargs)
            ),
        )

    try:
        (path,) = EXAMPLES.glob(f"**/{name}.py")
        spec = importlib.util.spec_from_file_location("example", path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    finally:
        for function, original in real.items():
            setattr(ninetoothed_ascend, function, original)

    ((function, args, kwargs),) = captured

    return real[function](*args, **kwargs).source("cuda")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", nargs="+", default=NAMES)
    parser.add_argument("--variants", nargs="+", default=list(pipelines.VARIANTS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--first",
        action="store_true",
        help="time each pipeline's first run, in a fresh process per run",
    )
    arguments = parser.parse_args()
    milliseconds = {}

    for name in arguments.names:
        if arguments.first:
            for variant in arguments.variants:
                milliseconds[f"{name} {variant}"] = min(
                    _first_run(name, variant) for _ in range(arguments.repeats)
                )

            continue

        source = cuda_source(name)

        for variant in arguments.variants:
            passes = pipelines.VARIANTS[variant]
            target = Target.from_environment(variant)
            best = float("inf")

            for _ in range(arguments.repeats):
                start = time.process_time()
                run_pipeline(source, passes, target)
                best = min(best, time.process_time() - start)

            milliseconds[f"{name} {variant}"] = round(best * 1000, 1)

    print(json.dumps(milliseconds, indent=1))


def _first_run(name, variant):
    # A fresh process of this script, timing one run (``--repeats 1``).
    output = subprocess.run(
        [
            sys.executable,
            __file__,
            "--names",
            name,
            "--variants",
            variant,
            "--repeats",
            "1",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout

    return json.loads(output)[f"{name} {variant}"]


if __name__ == "__main__":
    main()
