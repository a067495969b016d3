"""The lowered level over every launch of recorded manifests (the ntops corpus): faults, errors, per module.

Each kernel of each manifest (``ninetoothed-ascend record``; the ntops
corpus: ``scripts/ntops_corpus.py record``, one manifest per round) is run
by ``ninetoothed-ascend check --run --manifest ... --json`` in the
triton-ascend environment (``--python``, default ``.venv-ascend/bin/python``
of the repository): the NPU variant compiled as its recorded launch compiles
it (the first config its autotuner tries), lowered to native code, run on
the CPU over the whole grid with every tensor between guard pages, with
normal samples in floating-point tensors and zeros in integer ones. A
manifest holds no reference, so results are not compared: each launch is
``ran`` (no fault), ``fault`` (a read or write outside a tensor, or another
fatal signal, with the kernel, the operation and the tensor), ``differ``
(the two fenced placements left different bytes: the kernel read bytes that
are not its tensors'), or ``error`` (``ttir``, ``ttadapter`` or the lowering
failed: the compile check's findings, not the lowered level's).

Kernels run ``--batch`` per process, ``--jobs`` processes at a time, sharing
one cache directory (``--cache-dir``, default a new temporary one), so a
shared object lowered once is reused. A process that fails as a whole is
split until the launch that fails it is found. The table printed gives, per
ntops module (the kernel's ``origin``), the launches and each outcome, then
every fault and error grouped by its first line; ``--json`` writes every
launch's result.

    .venv-ascend/bin/python scripts/lowered_corpus.py MANIFEST_DIR_OR_FILES... [--jobs N]
        [--batch K] [--timeout S] [--non-contiguous] [--json OUT] [--cache-dir DIR]
"""

import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: The outcomes of one launch, as ``check --run`` reports them.
OUTCOMES = ("ran", "fault", "differ", "error")


def manifests(paths):
    """The manifest files among ``paths`` (files, or directories of ``*.json`` that are not ``*.report.json``), sorted."""

    found = []

    for path in map(pathlib.Path, paths):
        if path.is_dir():
            found.extend(
                item
                for item in sorted(path.glob("*.json"))
                if not item.name.endswith(".report.json") and item.name != "record.json"
            )
        else:
            found.append(path)

    return found


def run_batch(python, document, kernels, arguments, directory):
    """Run ``kernels`` (manifest kernel dicts) of ``document`` in one process; return one result ``dict`` per kernel."""

    with tempfile.NamedTemporaryFile(
        "w", suffix=".json", dir=directory, delete=False
    ) as handle:
        json.dump(dict(document, kernels=kernels), handle)
        sub = handle.name

    command = [
        python,
        "-c",
        "from ninetoothed_ascend.cli import main; main()",
        "check",
        "--run",
        "--manifest",
        sub,
        "--json",
        "--cache-dir",
        str(arguments.cache_dir),
    ]

    if arguments.timeout:
        command += ["--timeout", str(arguments.timeout)]

    if arguments.non_contiguous:
        command.append("--non-contiguous")

    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, cwd=ROOT, check=False
        )
    finally:
        os.unlink(sub)

    try:
        report = json.loads(completed.stdout[completed.stdout.index("{") :])
        results = report["results"]
    except (ValueError, KeyError):
        results = None

    if results is None or len(results) != len(kernels):
        if len(kernels) > 1:
            middle = len(kernels) // 2

            return run_batch(
                python, document, kernels[:middle], arguments, directory
            ) + run_batch(python, document, kernels[middle:], arguments, directory)

        message = (completed.stderr or completed.stdout).strip().splitlines()
        results = [
            {
                "outcome": "error",
                "detail": f"the process failed (exit {completed.returncode}): "
                + (message[-1] if message else ""),
                "seconds": None,
            }
        ]

    return [
        {
            "module": _module(kernel),
            "kernel": kernel["kernel_name"],
            "dtypes": "/".join(
                sorted(
                    {
                        arg["dtype"]
                        for arg in kernel["calls"][0]["args"]
                        if "dtype" in arg
                    }
                )
            )
            if kernel.get("calls")
            else "",
            "outcome": result["outcome"],
            "detail": result["detail"],
            "seconds": result["seconds"],
        }
        for kernel, result in zip(kernels, results)
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument(
        "--python", default=str(ROOT / ".venv-ascend" / "bin" / "python")
    )
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--non-contiguous", action="store_true")
    parser.add_argument("--json", type=pathlib.Path)
    parser.add_argument("--cache-dir", type=pathlib.Path)
    arguments = parser.parse_args()
    scratch = tempfile.TemporaryDirectory(prefix="lowered-corpus-")

    if arguments.cache_dir is None:
        arguments.cache_dir = pathlib.Path(scratch.name) / "cache"

    work = []

    for path in manifests(arguments.paths):
        document = json.loads(path.read_text())
        kernels = document["kernels"]
        work.extend(
            (document, kernels[start : start + arguments.batch])
            for start in range(0, len(kernels), arguments.batch)
        )

    results = []

    with concurrent.futures.ThreadPoolExecutor(max_workers=arguments.jobs) as pool:
        futures = [
            pool.submit(
                run_batch, arguments.python, document, kernels, arguments, scratch.name
            )
            for document, kernels in work
        ]

        for future in concurrent.futures.as_completed(futures):
            results.extend(future.result())
            print(f"{len(results)} launches done", file=sys.stderr, flush=True)

            if arguments.json:
                arguments.json.write_text(json.dumps(results, indent=1))

    report(results, arguments)


def report(results, arguments):
    """Print the table per module and the faults and errors grouped by their first line."""

    print(
        f"{datetime.date.today()}, {len(results)} launches, "
        f"{'non-contiguous' if arguments.non_contiguous else 'recorded'} layouts, "
        f"`{' '.join(sys.argv)}`"
    )
    print()
    print("| module | launches | " + " | ".join(OUTCOMES) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in OUTCOMES) + " |")
    by_module = collections.defaultdict(collections.Counter)

    for result in results:
        by_module[result["module"]][result["outcome"]] += 1

    for module in sorted(by_module):
        counts = by_module[module]
        print(
            f"| {module} | {sum(counts.values())} | "
            + " | ".join(str(counts[outcome]) for outcome in OUTCOMES)
            + " |"
        )

    totals = collections.Counter(result["outcome"] for result in results)
    print(
        f"| all | {len(results)} | "
        + " | ".join(str(totals[outcome]) for outcome in OUTCOMES)
        + " |"
    )

    for outcome in ("fault", "differ", "error"):
        groups = collections.defaultdict(list)

        for result in results:
            if result["outcome"] == outcome:
                groups[_first_line(result["detail"])].append(result)

        if not groups:
            continue

        print()
        print(f"{outcome}s:")

        for message, members in sorted(groups.items(), key=lambda item: -len(item[1])):
            names = sorted({f"{m['module']} ({m['dtypes']})" for m in members})
            print(f"- {len(members)} x {message}")
            print(f"  {', '.join(names)}")


def _module(kernel):
    application = (kernel.get("origin") or {}).get("application", "")

    return (
        application.split(":")[0].removeprefix("ntops.kernels.")
        or kernel["kernel_name"]
    )


def _first_line(detail):
    # Paths and numbers vary per launch; the message does not.
    line = (detail or "").splitlines()[0] if detail else ""
    line = re.sub(r"/\S+\.mlir", "<module>", line)
    line = re.sub(r"program \(\d+, \d+, \d+\)", "program (...)", line)
    line = re.sub(r"at line \d+", "at line N", line)
    line = re.sub(r"\b\d+ bytes?\b", "N bytes", line)
    line = re.sub(r"tensor_\d+", "tensor_N", line)

    return line[:300]


if __name__ == "__main__":
    main()
