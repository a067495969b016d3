"""DropSoftwarePipelining: on a small module (level 1) and on the CUDA emulation of an attention example, whose NPU variant keeps NineToothed's ``num_stages``."""

import re

from helpers import rewrite, shared_example

from ninetoothed_ascend.compiler.emulation.drop_software_pipelining import (
    DropSoftwarePipelining,
)

MODULE = """
import triton
import triton.language as tl

@triton.jit
def kernel(x_pointer, BLOCK: tl.constexpr):
    tl.store(x_pointer, 1)

def tuned():
    return triton.autotune(configs=[triton.Config({'BLOCK': 64}, num_warps=8, num_stages=7), triton.Config({'BLOCK': 32}, num_stages=1)], key=[])(kernel)

def launch_kernel(x):
    tuned()[(1,)](x)
    kernel[(1,)](x, BLOCK=16, num_warps=4, num_stages=3)
"""


def test_every_config_and_launch_gets_one_stage():
    source, count = rewrite(DropSoftwarePipelining, MODULE)

    assert count == 2
    assert re.findall(r"num_stages=(\d+)", source) == ["1", "1", "1"]
    assert "triton.Config({'BLOCK': 64}, num_warps=8, num_stages=1)" in source
    assert "kernel[1,](x, BLOCK=16, num_warps=4, num_stages=1)" in source


def test_the_cuda_emulation_of_an_attention_kernel_has_one_stage():
    kernel = shared_example("flash_attention").kernel
    stages = set(re.findall(r"num_stages=(\d+)", kernel.source("npu")))
    emulated = kernel.emulated_source("cuda")

    assert stages - {"1"}
    assert set(re.findall(r"num_stages=(\d+)", emulated.source)) == {"1"}
    assert dict(emulated.rewrites)["DropSoftwarePipelining"] >= 1
