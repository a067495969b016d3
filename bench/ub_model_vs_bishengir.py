"""The UB model against BiShengIR's memory plan, for every example x dtype x case x config.

Runs in the triton-ascend environment with ``ascendnpu-ir`` installed (no NPU):
each config the NPU variant's autotuner tries for the example's launch is
compiled as that launch compiles it (integers equal to 1 specialized) through
``ttir`` and ``ttadapter``, then through ``bishengir-compile`` up to the
external ``hivmc`` step with ``--enable-memory-display``. Per config:

* ``model``: :func:`~ninetoothed_ascend.compiler.npu.ub.model.footprint` as
  ``FitUnifiedBuffer`` evaluates it (4 bytes per element, the dtype being
  unknown then), with the launch's constexprs and specialized integers;
* ``bishengir``: the planned UB bytes (the end of the highest buffer of
  BiShengIR's memory plan, ``memory_info_*.json``), or, for an overflow, the
  bytes of "ub overflow, requires N bits";
* ``ratio``: model / bishengir; ``under``: BiShengIR overflowed where the
  model said the config fits.

BiShengIR results are cached by the Linalg text in ``--raw`` (JSON), so that
the table can be regenerated after a model change without recompiling.

    nice python bench/ub_model_vs_bishengir.py [PATHS] [--jobs 2] [--raw FILE] > table.md
"""

import argparse
import ast
import concurrent.futures
import hashlib
import json
import pathlib
import statistics
import sys

from ninetoothed_ascend import examples
from ninetoothed_ascend.check import bishengir, compile_check
from ninetoothed_ascend.compiler.facts import stored_layout
from ninetoothed_ascend.compiler.npu.ub.model import footprint
from ninetoothed_ascend.compiler.syntax import import_aliases
from ninetoothed_ascend.compiler.target import soc

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _bishengir(linalg, options, timeout):
    result = bishengir.compile_linalg(
        linalg, options=options, memory_report=True, timeout=timeout
    )

    return {
        "outcome": result.outcome,
        "bytes": result.ub_required_bytes
        if result.outcome == "ub_overflow"
        else result.planned_ub_bytes,
        "seconds": round(result.seconds, 2),
        "message": "" if result.outcome in ("hivmc", "ub_overflow") else result.message,
    }


def rows(paths, raw, jobs, timeout, dtypes, ends):
    """Yield one ``dict`` per (example, dtype, case, config)."""

    pending = []

    for path in examples.find_modules(paths):
        module = examples.load_module(path)
        handle = module.kernel
        tree = ast.parse(handle.source("npu"))
        aliases = import_aliases(tree)
        kernel = next(
            node
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name == handle.kernel_name
        )
        # Which constexprs choose a transposed access: kept with the variant.
        layout = stored_layout(handle.entry.variants["npu"].facts, kernel.name)

        for dtype in examples.dtypes(module):
            if dtypes and str(dtype).removeprefix("torch.") not in dtypes:
                continue

            for index, case in enumerate(examples.cases(module)):
                inputs = module.inputs("cpu", dtype, **case)
                jit, arguments = compile_check.launch_arguments(
                    handle.module("npu"), handle, module.launch, inputs
                )

                if ends and len(arguments) > ends + 1:
                    arguments = arguments[:1] + arguments[-ends:]

                for config, signature, constants, attrs, options in arguments:
                    try:
                        linalg, _ = compile_check.compile_stages(
                            jit, signature, constants, attrs=attrs, options=options
                        )
                    except compile_check.StageError as error:
                        print(f"{path.stem} {dtype} {config}: {error}", file=sys.stderr)
                        continue

                    # As FitUnifiedBuffer measures: 4 bytes per element (the
                    # dtype is not known when configs are chosen), with the
                    # launch's specialized integers.
                    model = footprint(kernel, aliases, constants, layout=layout)
                    key = hashlib.sha256(
                        repr((linalg, bishengir.option_flags(options))).encode()
                    ).hexdigest()
                    row = {
                        "kernel": handle.kernel_name,
                        "dtype": str(dtype).removeprefix("torch."),
                        "case": index,
                        "config": "x".join(str(value) for value in config.values()),
                        "model": model.peak,
                    }
                    pending.append((row, key, linalg, options))

    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        futures = {
            key: pool.submit(_bishengir, linalg, options, timeout)
            for _, key, linalg, options in pending
            if key not in raw
        }

        for row, key, _, _ in pending:
            if key not in raw:
                raw[key] = futures[key].result()

            yield row | raw[key]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(EXAMPLES)])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument(
        "--raw", type=pathlib.Path, help="BiShengIR results cache (JSON)"
    )
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--dtype", action="append", help="only these (float16, ...)")
    parser.add_argument(
        "--ends",
        type=int,
        default=0,
        help="per launch, only the smallest config and the N largest (0: all)",
    )
    arguments = parser.parse_args()
    raw = (
        json.loads(arguments.raw.read_text())
        if arguments.raw is not None and arguments.raw.exists()
        else {}
    )
    budget = soc().ub_bytes
    table = []

    try:
        for row in rows(
            arguments.paths,
            raw,
            arguments.jobs,
            arguments.timeout,
            arguments.dtype,
            arguments.ends,
        ):
            table.append(row)
    finally:
        if arguments.raw is not None:
            arguments.raw.write_text(json.dumps(raw))

    print(
        "| kernel | dtype | case | config | model | bishengir | outcome | ratio | under |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    ratios = []
    under = []

    for row in table:
        measured = row["bytes"] or 0
        ratio = row["model"] / measured if measured else None
        missed = row["outcome"] == "ub_overflow" and row["model"] <= budget

        if ratio is not None:
            ratios.append(ratio)

        if missed:
            under.append(row)

        print(
            f"| {row['kernel']} | {row['dtype']} | {row['case']} | {row['config']} "
            f"| {row['model']} | {measured} | {row['outcome']} "
            f"| {'' if ratio is None else f'{ratio:.2f}'} | {'yes' if missed else ''} |"
        )

    outcomes = {}

    for row in table:
        outcomes[row["outcome"]] = outcomes.get(row["outcome"], 0) + 1

    print()
    print(
        f"ascendnpu-ir {bishengir.version()}, {soc().name}, {budget}-byte UB; "
        f"configs: {len(table)}; BiShengIR outcomes: {outcomes}"
    )
    print(
        f"BiShengIR overflows where the model accepts: {len(under)}"
        + "".join(
            f"\n- {row['kernel']} {row['dtype']} case {row['case']} {row['config']}: "
            f"model {row['model']}, BiShengIR {row['bytes']}"
            for row in under
        )
    )
    print(
        f"model under BiShengIR's bytes (ratio < 1): {sum(ratio < 1 for ratio in ratios)}"
    )

    if ratios:
        print(
            f"ratio model / BiShengIR: median {statistics.median(ratios):.2f}, "
            f"min {min(ratios):.2f}, max {max(ratios):.2f}"
        )


if __name__ == "__main__":
    main()
