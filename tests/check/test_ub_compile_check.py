"""Level 2: the UB-driven rewrites through triton-ascend's ttir and ttadapter (no NPU)."""

import pytest
import torch
from helpers import load_example

from ninetoothed_ascend.check.compile_check import check_variant

pytestmark = pytest.mark.ascend


@pytest.mark.parametrize("name", ["softmax", "rms_norm"])
def test_sub_block_branch_compiles(monkeypatch, name):
    # A 4 KB UB makes the examples' 1024-lane rows take the split branch.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "4096")
    module = load_example(name)

    results = check_variant(
        module.kernel, module.launch, *module.inputs("cpu", torch.float16)
    )

    assert ("SplitSubBlocks", 1) in module.kernel.rewrites("npu")
    # Three (softmax) or two (rms_norm) sub-block loops plus the task loop.
    assert results[0].linalg.count("scf.for") >= 3


def test_configs_checked_are_the_npu_variants_own(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", str(12 * 128))
    module = load_example("add")

    results = check_variant(
        module.kernel, module.launch, *module.inputs("cpu", torch.float16)
    )

    # 20 bytes per element: 64 lanes fit 1536 bytes, 128 do not.
    assert [list(result.config.values()) for result in results] == [[32], [64]]
