"""scripts/ntops-suite.sh: ntops' own tests, written for CUDA, run on CPU tensors with the NPU variant emulated (level 4)."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NTOPS = pathlib.Path(
    os.environ.get("NTOPS_ROOT") or ROOT.parent / "shared" / "downstream" / "ntops"
)
# One of ntops' rot90 cases: a 1-D fp32 tensor made 2-D, rotated once.
CASE = "tests/test_rot90.py::test_rot90[shape0-dtype0-cuda-0.001-0.001-1]"


@pytest.mark.skipif(
    not (NTOPS / "tests" / "test_rot90.py").is_file(),
    reason=f"no ntops checkout at {NTOPS} (set NTOPS_ROOT to one of InfiniTensor/ntops)",
)
def test_an_ntops_test_written_for_cuda_passes_on_the_cpu_emulated(tmp_path):
    completed = subprocess.run(
        [str(ROOT / "scripts" / "ntops-suite.sh"), "--cpu", CASE, "-q", "-rA"],
        env=os.environ
        | {
            "PYTHON": sys.executable,
            "NINETOOTHED_ASCEND_CACHE_DIR": str(tmp_path / "cache"),
        },
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert completed.returncode == 0, (
        completed.stdout[-3000:] + completed.stderr[-2000:]
    )
    assert f"PASSED {CASE}" in completed.stdout
    # ntops' kernel went through ninetoothed-ascend (the transparent import):
    # its variants' sources are in the cache.
    assert any((tmp_path / "cache" / "sources").glob("*.py"))
