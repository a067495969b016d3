"""Run the downstream library's test suite three ways and print each way's pass counts.

The transparent import promises no behaviour change: a test of a library
built on plain NineToothed that passes without ninetoothed-ascend passes
with it. This runs ``tests/downstream/suite`` (its kernels made on first
call from ndim/dtype/flags with ``functools.cache``, optional inputs as
``meta`` placeholders, a precision switch in the kernel, N-D element-wise
through one flattened arrangement) in fresh processes:

* ``plain``: NineToothed alone (needs a CUDA GPU: plain NineToothed cannot
  make a kernel without a driver);
* ``import``: ``NINETOOTHED_ASCEND=1`` (the CUDA variant on a GPU, the CPU
  variant on the CPU);
* ``emulated``: ``NINETOOTHED_ASCEND=1 NINETOOTHED_ASCEND_EMULATE_NPU=1``
  (the NPU variant, emulated on the tensors' device).

Each way gets an empty cache directory of its own.

    python scripts/downstream_compare.py [--ways plain,import,emulated] [PYTEST ARGS]

CI runs ``-m "not full"`` (18 tests); the whole stand-in library (206
tests, every kernel made in the same worker processes) is the default. On a
GPU, with many xdist workers as the library's own suite ran::

    python scripts/downstream_compare.py --ways plain,import,emulated -n 14 -p no:randomly

Prints one JSON line per way (``{"way", "passed", "failed", "skipped",
"errors", "failures": [test ids]}``) and exits 1 when a way that ran
passed fewer tests than ``plain`` (or, without ``plain``, than the first way).
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

ROOT = pathlib.Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "downstream" / "suite"

WAYS = {
    "plain": {"NINETOOTHED_ASCEND": "0"},
    "import": {"NINETOOTHED_ASCEND": "1"},
    "emulated": {"NINETOOTHED_ASCEND": "1", "NINETOOTHED_ASCEND_EMULATE_NPU": "1"},
}


def run_way(way, pytest_args):
    """Run the suite one ``way``; return ``dict`` of its counts and failed test ids."""

    with tempfile.TemporaryDirectory(prefix=f"downstream-{way}-") as directory:
        report = pathlib.Path(directory) / "junit.xml"
        env = {
            name: value
            for name, value in os.environ.items()
            if name != "NINETOOTHED_ASCEND_EMULATE_NPU"
        }
        env.update(WAYS[way])
        env["NINETOOTHED_ASCEND_CACHE_DIR"] = str(pathlib.Path(directory) / "cache")
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, (str(ROOT / "src"), env.get("PYTHONPATH")))
        )
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                str(SUITE),
                f"--confcutdir={SUITE.parent}",
                "-p",
                "no:cacheprovider",
                "-q",
                f"--junitxml={report}",
                *pytest_args,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            check=False,
        )

        return {"way": way, **_counts(report)}


def _counts(report):
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0, "failures": []}

    if not report.exists():
        counts["errors"] = 1

        return counts

    for case in ElementTree.parse(report).iter("testcase"):
        outcome = next(
            (
                child.tag
                for child in case
                if child.tag in ("failure", "error", "skipped")
            ),
            None,
        )
        test_id = f"{case.get('classname')}::{case.get('name')}"

        if outcome is None:
            counts["passed"] += 1
        elif outcome == "skipped":
            counts["skipped"] += 1
        else:
            counts["failed" if outcome == "failure" else "errors"] += 1
            counts["failures"].append(test_id)

    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ways", default=",".join(WAYS))
    arguments, pytest_args = parser.parse_known_args(argv)
    results = [run_way(way, pytest_args) for way in arguments.ways.split(",")]

    for result in results:
        print(json.dumps(result))

    baseline = results[0]["passed"]

    return int(any(result["passed"] < baseline for result in results))


if __name__ == "__main__":
    sys.exit(main())
