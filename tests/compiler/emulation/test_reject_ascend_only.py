"""RejectAscendOnly: a symbol still Ascend-only after the emulation passes fails by name."""

import pytest

from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.passes import (
    PipelineError,
    run_pipeline,
)


def test_ascend_only_symbols_left_by_other_passes_are_refused():
    source = """
import triton.triton_patch.language.core as ascend_core
import triton

@triton.jit
def kernel(x):
    return ascend_core.sort(x)
"""
    with pytest.raises(
        PipelineError,
        match="pass RejectAscendOnly: `triton.triton_patch.language.core.sort` exists only",
    ):
        run_pipeline(source, pipelines.EMULATIONS["cuda"])

    with pytest.raises(
        PipelineError, match="pass RejectAscendOnly: `triton.triton_patch"
    ):
        run_pipeline(
            "import triton\nx = triton.triton_patch.language.core.sort\n",
            pipelines.EMULATIONS["cuda"],
        )
