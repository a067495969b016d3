"""Every config of every example through BiShengIR (bishengir-compile of ascendnpu-ir), contiguous and non-contiguous inputs.

Level 3 (BiShengIR up to the external hivmc step; nothing runs on an NPU).
Needs .venv-ascend (triton-ascend 3.2.0, ascendnpu-ir). Per kernel, dtype and
input kind (each shape case of ``CASES`` with ``--cases all``, else the
first): each config's outcome (reached hivmc, UB overflow with bytes, error,
timeout) and seconds per stage. Prints a markdown summary, or JSON.

    NINETOOTHED_ASCEND_CACHE_DIR=$(mktemp -d) .venv-ascend/bin/python bench/bishengir_sweep.py \\
        --jobs 2 --timeout 600 --markdown sweep.md --json sweep.json
"""

import argparse
import collections
import dataclasses
import json
import pathlib
import subprocess
import sys
import time

from ninetoothed_ascend import examples
from ninetoothed_ascend.check import bishengir
from ninetoothed_ascend.check.compile_check import BiShengIRStage, check_variant

KINDS = ("contiguous", "non-contiguous")


def sweep(paths, stage, configs, kinds=KINDS, all_cases=False, log=sys.stderr):
    """Yield one ``dict`` per example, shape case, dtype and input kind, with each config's outcome and seconds.

    :param configs: ``"all"``, ``"launch"`` or ``"ends"`` (the smallest and
        the largest config the launch tries, by the UB model's bytes: what
        tests/check/test_bishengir.py compiles).
    :param all_cases: every shape case of an example's ``CASES``, else the first.
    """

    for path in examples.find_modules(paths):
        module = examples.load_module(path)
        cases = examples.cases(module)

        for case_index, case in enumerate(cases if all_cases else cases[:1]):
            yield from _sweep_case(
                path, module, case_index, case, stage, configs, kinds, log
            )


def _sweep_case(path, module, case_index, case, stage, configs, kinds, log):
    for dtype in examples.dtypes(module):
        for kind in kinds:
            inputs = module.inputs("cpu", dtype, **case)

            if kind == "non-contiguous":
                inputs = examples.noncontiguous(inputs)

            row = {
                "example": path.stem,
                "case": case_index,
                "dtype": str(dtype).removeprefix("torch."),
                "inputs": kind,
            }
            start = time.perf_counter()

            try:
                results = check_variant(
                    module.kernel,
                    module.launch,
                    *inputs,
                    configs="launch" if configs == "ends" else configs,
                    extremes="bytes" if configs == "ends" else None,
                    bishengir=stage,
                )
            except (
                Exception
            ) as error:  # any failure is a row of the report; the sweep goes on
                row |= {
                    "error": f"{type(error).__name__}: {error}"[:500],
                    "configs": [],
                }
            else:
                row["configs"] = [
                    {
                        "config": result.config,
                        **dataclasses.asdict(result.bishengir),
                        # after the BiShengIR fields, whose "seconds" is that stage's alone
                        "seconds": result.seconds,
                    }
                    for result in results
                ]

            row["seconds"] = time.perf_counter() - start
            print(_summary(row), file=log, flush=True)

            yield row


def _summary(row):
    if "error" in row:
        return f"{row['example']} {row['dtype']} {row['inputs']}: {row['error']}"

    counts = collections.Counter(config["outcome"] for config in row["configs"])

    return (
        f"{_name(row)} {row['dtype']} {row['inputs']}: "
        + ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items()))
        + f" ({row['seconds']:.1f} s)"
    )


def _name(row):
    return f"{row['example']}[{row.get('case', 0)}]"


def markdown(rows, header):
    """A markdown report: totals, then every config that did not reach hivmc, then seconds per kernel."""

    configs = [config for row in rows for config in row["configs"]]
    counts = collections.Counter(config["outcome"] for config in configs)
    lines = [
        header,
        "",
        f"{len(configs)} configs: "
        + ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items())),
        f"{sum('error' in row for row in rows)} kernel/dtype/input cases failed before BiShengIR.",
        "",
        "| example | dtype | inputs | config | outcome | UB needed (B) | BiShengIR s |",
        "|---|---|---|---|---|---:|---:|",
    ]

    for row in rows:
        if "error" in row:
            lines.append(
                f"| {_name(row)} | {row['dtype']} | {row['inputs']} | - | "
                f"{row['error'][:120].replace('|', '/')} | | |"
            )

        for config in row["configs"]:
            if config["outcome"] != "hivmc":
                values = ", ".join(
                    f"{name.rsplit('prefix_', 1)[-1]}={value}"
                    for name, value in config["config"].items()
                )
                lines.append(
                    f"| {_name(row)} | {row['dtype']} | {row['inputs']} | {values} | "
                    f"{config['outcome']} | {config['ub_required_bytes'] or ''} | "
                    f"{config['seconds'].get('bishengir', 0):.1f} |"
                )

    lines += [
        "",
        "| example | dtype | inputs | configs | seconds (all stages) |",
        "|---|---|---|---:|---:|",
    ]
    lines += [
        f"| {_name(row)} | {row['dtype']} | {row['inputs']} | {len(row['configs'])} | {row['seconds']:.1f} |"
        for row in rows
    ]

    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["examples"])
    parser.add_argument("--arch", default=bishengir.DEFAULT_ARCH)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument(
        "--configs",
        choices=("all", "launch", "ends"),
        default="all",
        help="every config in the variant's source, those the autotuner tries for the launch, "
        "or the smallest and the largest of those",
    )
    parser.add_argument(
        "--cases",
        choices=("first", "all"),
        default="first",
        help="each example's first shape case, or every case of its CASES",
    )
    parser.add_argument("--markdown", type=pathlib.Path)
    parser.add_argument("--json", type=pathlib.Path)
    arguments = parser.parse_args()

    if (line := bishengir.missing()) is not None:
        sys.exit(line)

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    header = (
        f"BiShengIR sweep, {time.strftime('%Y-%m-%d', time.gmtime())}, commit {commit}, "
        f"{arguments.arch}, ascendnpu-ir {bishengir.version()}, configs: {arguments.configs}, "
        f"cases: {arguments.cases}"
    )

    with BiShengIRStage(
        arguments.arch, jobs=arguments.jobs, timeout=arguments.timeout
    ) as stage:
        rows = list(
            sweep(
                arguments.paths,
                stage,
                arguments.configs,
                all_cases=arguments.cases == "all",
            )
        )

    # JSON first: a report that fails to format must not lose a sweep of many minutes.
    if arguments.json:
        arguments.json.write_text(
            json.dumps({"header": header, "rows": rows}, indent=1, default=str)
        )

    report = markdown(rows, header)

    if arguments.markdown:
        arguments.markdown.write_text(report)

    print(report)


if __name__ == "__main__":
    main()
