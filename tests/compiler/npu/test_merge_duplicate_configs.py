"""MergeDuplicateConfigs: configs differing only in num_warps/num_stages are one NPU compile."""

import ast

import ninetoothed
from helpers import rewrite
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend.compiler.generated import GeneratedModule
from ninetoothed_ascend.compiler.npu.merge_duplicate_configs import (
    MergeDuplicateConfigs,
)
from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import FitUnifiedBuffer
from ninetoothed_ascend.compiler.passes import run_pipeline
from ninetoothed_ascend.compiler.pipelines import NPU
from ninetoothed_ascend.compiler.syntax import keyword

MODULE = """
import triton

@triton.jit
def kernel(x, BLOCK_SIZE: triton.language.constexpr):
    pass

kernel_tuned = triton.autotune(configs=[
    triton.Config({'BLOCK_SIZE': 64}, num_warps=4, num_stages=2),
    triton.Config({'BLOCK_SIZE': 64}, num_warps=8, num_stages=2),
    triton.Config({'BLOCK_SIZE': 128}, num_warps=4, num_stages=2),
    triton.Config({'BLOCK_SIZE': 64}, num_warps=4, num_stages=3),
    triton.Config({'BLOCK_SIZE': 128}, num_warps=8, num_stages=3, maxnreg=128),
], key=['x'])(kernel)
"""


def _configs(source):
    """The meta-parameters of each config of the module's one autotuner, as source text."""

    ((_, call),) = GeneratedModule(ast.parse(source)).autotune_calls()

    return [
        ast.unparse(config.args[0]) for config in keyword(call, "configs").value.elts
    ]


def test_merge_keeps_the_first_config_of_each_set_of_meta_parameters():
    source, count = rewrite(MergeDuplicateConfigs, MODULE)

    assert count == 1
    assert _configs(source) == [
        "{'BLOCK_SIZE': 64}",
        "{'BLOCK_SIZE': 128}",
        "{'BLOCK_SIZE': 128}",
    ]
    # The first 64 config keeps its compiler options; maxnreg is not ignored.
    first = ast.parse(source).body[-1].value.func.keywords[0].value.elts[0]
    assert {k.arg: k.value.value for k in first.keywords} == {
        "num_warps": 4,
        "num_stages": 2,
    }


def test_merge_leaves_distinct_configs():
    distinct = MODULE.replace(
        "{'BLOCK_SIZE': 64}, num_warps=8", "{'BLOCK_SIZE': 32}, num_warps=8"
    )
    distinct = distinct.replace(
        "{'BLOCK_SIZE': 64}, num_warps=4, num_stages=3", "{'BLOCK_SIZE': 16}"
    )
    source, count = rewrite(
        MergeDuplicateConfigs, distinct.replace("maxnreg=128", "num_ctas=1")
    )

    assert count == 0
    assert len(_configs(source)) == 5


def _add(input, other, output, BLOCK_SIZE=ninetoothed.block_size()):
    return (
        input.tile((BLOCK_SIZE,)),
        other.tile((BLOCK_SIZE,)),
        output.tile((BLOCK_SIZE,)),
    )


def _application(input, other, output):
    output = input + other  # noqa: F841


def test_npu_variant_of_a_kernel_made_with_several_num_warps_and_num_stages():
    handle = ninetoothed_ascend.make(
        _add,
        _application,
        (Tensor(1), Tensor(1), Tensor(1)),
        kernel_name="add_warps_and_stages",
        num_warps=(4, 8),
        num_stages=(2, 3),
    )
    cuda = _configs(handle.source("cuda"))

    # NineToothed writes each block size four times; the NPU compiles each once.
    assert len(cuda) == 4 * len(set(cuda))
    assert len(_configs(handle.source("npu"))) == len(
        set(_configs(handle.source("npu")))
    )

    # Without FitUnifiedBuffer (a kernel whose configs it leaves as written:
    # tiles sized at the launch, left to SplitSubBlocks) the merge does it.
    unresized = tuple(step for step in NPU if step is not FitUnifiedBuffer)
    rewritten = run_pipeline(handle.source("cuda"), unresized)

    assert dict(rewritten.rewrites)["MergeDuplicateConfigs"] == 1
    assert sorted(_configs(rewritten.source)) == sorted(set(cuda))
