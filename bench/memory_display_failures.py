"""How often ``bishengir-compile`` fails on a config it compiles, with ``--enable-memory-display`` and without.

Level 3 (BiShengIR up to the external hivmc step; nothing runs on an NPU).
Needs .venv-ascend (triton-ascend 3.2.0, ascendnpu-ir). Every config the
launch of each example tries (first shape case, each dtype, contiguous
inputs) is compiled to Linalg once, then through ``bishengir-compile``
``--runs`` times with the command a launch runs and ``--runs`` times with
``--enable-memory-display`` added (what ``check --memory-report`` runs),
``--jobs`` compiles at once. Each run is one process: no retry. Prints, per
command, the runs and how many reached hivmc, overflowed or failed, and each
failure's first line. The claim it measures is in ``check/bishengir.py``
(``compile_linalg``) and docs/ascend.md.

    NINETOOTHED_ASCEND_CACHE_DIR=$(mktemp -d) .venv-ascend/bin/python \\
        bench/memory_display_failures.py examples/attention --runs 10 --jobs 2
"""

import argparse
import collections
import concurrent.futures
import pathlib
import subprocess
import tempfile

from ninetoothed_ascend import examples
from ninetoothed_ascend.check import bishengir, compile_check


def linalg_texts(paths):
    """The distinct (Linalg text, launch options) of every config the examples' launches try."""

    texts = {}

    for path in examples.find_modules(paths):
        module = examples.load_module(path)
        case = examples.cases(module)[0]

        for dtype in examples.dtypes(module):
            inputs = module.inputs("cpu", dtype, **case)

            jit, arguments = compile_check.launch_arguments(
                module.kernel.module("npu"), module.kernel, module.launch, inputs
            )

            for _, signature, constants, attrs, options in arguments:
                linalg, _ = compile_check.compile_stages(
                    jit, signature, constants, attrs=attrs, options=options
                )
                texts.setdefault(linalg, options)

    return list(texts.items())


def run(linalg, options, display):
    """One ``bishengir-compile`` process: ``(outcome, first line of its message)``."""

    command = bishengir.compile_command("kernel.mlir", "kernel", options=options)

    if display:
        command[-2:-2] = ["--enable-memory-display"]

    with tempfile.TemporaryDirectory() as directory:
        (pathlib.Path(directory) / "kernel.mlir").write_text(linalg)
        completed = subprocess.run(
            command, cwd=directory, capture_output=True, text=True, errors="replace"
        )

    result = bishengir.parse_output(completed.stdout + completed.stderr)

    return result.outcome, result.message.partition("\n")[0][:160]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["examples"])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    arguments = parser.parse_args()
    texts = linalg_texts(arguments.paths)
    tasks = [
        (linalg, options, display)
        for display in (False, True)
        for linalg, options in texts
        for _ in range(arguments.runs)
    ]

    with concurrent.futures.ProcessPoolExecutor(arguments.jobs) as pool:
        outcomes = list(pool.map(run, *zip(*tasks)))

    print(
        f"ascendnpu-ir {bishengir.version()}: {len(texts)} configs, "
        f"{arguments.runs} runs each per command, {arguments.jobs} at once"
    )

    for display in (False, True):
        runs = [
            outcome
            for (_, _, shown), outcome in zip(tasks, outcomes)
            if shown == display
        ]
        counts = collections.Counter(outcome for outcome, _ in runs)
        label = "with --enable-memory-display" if display else "the launch's command"
        print(
            f"{label}: {len(runs)} runs, "
            + ", ".join(
                f"{count} {outcome}" for outcome, count in sorted(counts.items())
            )
        )

        for (outcome, message), count in collections.Counter(
            run for run in runs if run[0] in ("error", "timeout")
        ).items():
            print(f"    {count} {outcome}: {message}")


if __name__ == "__main__":
    main()
