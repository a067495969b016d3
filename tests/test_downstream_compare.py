"""The downstream library's suite passes identically under the import and with the NPU variant emulated (CPU; plain NineToothed needs a GPU)."""

import json
import pathlib
import subprocess
import sys

SCRIPT = (
    pathlib.Path(__file__).resolve().parent.parent / "scripts" / "downstream_compare.py"
)


def test_downstream_suite_passes_the_same_with_the_cpu_and_the_emulated_npu_variant():
    completed = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--ways",
            "import,emulated",
            "-p",
            "no:randomly",
            "-p",
            "no:xdist",
            "-m",
            "not full",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    results = {
        result["way"]: result
        for result in map(json.loads, completed.stdout.splitlines())
    }

    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert results["import"]["passed"] == results["emulated"]["passed"] == 18
    assert results["import"]["failures"] == results["emulated"]["failures"] == []
