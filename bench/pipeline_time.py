"""CPU time of each variant's pass pipeline on NineToothed's source, best of N, in one process.

For the kernels of ``bench/warm_make.py`` by default. NineToothed's source
is generated once per kernel (``handle.source("cuda")``), then each
pipeline of :data:`ninetoothed_ascend.compiler.pipelines.VARIANTS` is run on
it ``--repeats`` times; the fastest run counts (``time.process_time``).
With ``--first``, each pipeline runs once in a fresh process instead (what
a cold ``make`` pays: the first run of a pipeline in a process), best of
``--repeats`` processes. With ``--by-pass``, the parse, each pass that ran
and the unparse of the fastest run are listed too (``ast.parse`` and
``ast.unparse`` wherever called, in passes too, which then count twice).
Works on older trees too (``PYTHONPATH=<tree>/src``), whose pass machinery
lived in ``ninetoothed_ascend.ascendify.base``.

    NINETOOTHED_ASCEND_CACHE_DIR=$(mktemp -d) PYTHONPATH=src python bench/pipeline_time.py [--names add ...] [--repeats 3] [--first | --by-pass]
"""

import argparse
import ast
import functools
import importlib.util
import json
import pathlib
import subprocess
import sys
import time

import ninetoothed_ascend

try:
    from ninetoothed_ascend.compiler.passes import Pass, run_pipeline
except ImportError:
    from ninetoothed_ascend.ascendify.base import Pass, run_pipeline
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
    parser.add_argument(
        "--by-pass",
        action="store_true",
        help="also list the parse, each pass that ran and the unparse (ms)",
    )
    arguments = parser.parse_args()
    milliseconds = {}
    steps = _timed_steps() if arguments.by_pass else None

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
            best, best_steps = float("inf"), {}

            for _ in range(arguments.repeats):
                if steps is not None:
                    steps.clear()

                start = time.process_time()
                run_pipeline(source, passes, target)
                seconds = time.process_time() - start

                if seconds < best:
                    best, best_steps = seconds, dict(steps or {})

            milliseconds[f"{name} {variant}"] = round(best * 1000, 1)

            if steps is not None:
                milliseconds[f"{name} {variant} by step"] = {
                    step: round(seconds * 1000, 2)
                    for step, seconds in best_steps.items()
                }

    print(json.dumps(milliseconds, indent=1))


def _timed_steps():
    # CPU time of ``ast.parse``, ``ast.unparse`` and each pass's ``run`` in
    # this process, by name, summed until the dict is cleared.
    steps = {}

    def timed(owner, attribute, step=None):
        function = getattr(owner, attribute)

        @functools.wraps(function)
        def wrapper(self_or_first, *args, **kwargs):
            start = time.process_time()

            try:
                return function(self_or_first, *args, **kwargs)
            finally:
                name = step or type(self_or_first).__name__
                steps[name] = steps.get(name, 0) + time.process_time() - start

        setattr(owner, attribute, wrapper)

    timed(ast, "parse", "parse (all)")
    timed(ast, "unparse", "unparse (all)")
    timed(Pass, "run")

    return steps


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
