"""``check --manifest``: a launch the NPU variant refuses before compiling (its tiles overflow the Unified Buffer by the UB model and cannot be split) is reported as refused, and nothing is compiled for it."""

import json
import os
import sys

import pytest
from click.testing import CliRunner

from ninetoothed_ascend.cli import main

#: A prefix sum over a block of 1024 the kernel states: its lanes depend on
#: each other, so ``SplitSubBlocks`` cannot split it.
DRIVER = """
import torch
import ninetoothed.language as ntl
from ninetoothed import Tensor
import ninetoothed_ascend

def arrangement(input, output):
    return input.tile((1024,)), output.tile((1024,))

def application(input, output):
    output = ntl.cumsum(input, 0)  # noqa: F841

kernel = ninetoothed_ascend.make(
    arrangement, application, (Tensor(1, other=0), Tensor(1)),
    kernel_name="block_prefix_sum",
)
try:
    kernel(torch.randn(3000), torch.empty(3000))
except Exception:  # triton-ascend's interpreter need not run it: the call is recorded
    pass
"""


@pytest.mark.ascend
def test_check_reports_a_launch_the_npu_variant_refuses(tmp_path):
    manifest, driver = tmp_path / "m.json", tmp_path / "driver.py"
    # A file: NineToothed reads the kernel's functions from their source.
    driver.write_text(DRIVER)
    # 1024 fp32 lanes fit 196,608 B; they do not fit 2 KB.
    environment = os.environ | {
        "NINETOOTHED_ASCEND_CACHE_DIR": str(tmp_path),
        "NINETOOTHED_ASCEND_UB_BYTES": "2048",
    }
    runner = CliRunner()
    recorded = runner.invoke(
        main,
        ["record", "-o", str(manifest), "--", sys.executable, str(driver)],
        env=environment,
    )

    assert recorded.exit_code == 0, recorded.output

    checked = runner.invoke(
        main, ["check", "--manifest", str(manifest), "--json"], env=environment
    )
    (result,) = json.loads(checked.output)["results"]

    assert checked.exit_code == 1
    assert "config" not in result
    assert result["refused"].startswith(
        "kernel `block_prefix_sum` (NPU variant) cannot run this launch on Ascend"
    )
    assert "2048 available" in result["refused"]

    as_text = runner.invoke(
        main, ["check", "--manifest", str(manifest)], env=environment
    )

    assert "block_prefix_sum" in as_text.output
    assert ": REFUSED at the launch: kernel `block_prefix_sum`" in as_text.output
    assert "passed ttir" not in as_text.output
