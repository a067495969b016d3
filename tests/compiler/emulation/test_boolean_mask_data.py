"""BooleanMaskData: the NPU variant's masks on Triton's interpreter."""

import pytest
import torch
from helpers import load_example
from libdevice_helpers import import_source

from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.emulation.boolean_mask_data import BooleanMaskData
from ninetoothed_ascend.compiler.passes import (
    run_pipeline,
)


def test_without_boolean_mask_data_the_interpreter_refuses_the_npu_mask():
    """Reproducer for the Triton 3.9 interpreter behaviour :class:`BooleanMaskData` avoids."""

    triton = pytest.importorskip("triton")
    module = load_example("add")
    pipeline = tuple(
        pass_class
        for pass_class in pipelines.EMULATIONS["cpu"]
        if pass_class is not BooleanMaskData
    )
    source = run_pipeline(module.kernel.source("npu"), pipeline).source
    launch = getattr(
        import_source(source, "no_boolean_masks"), module.kernel.launch_name
    )
    input, other = module.inputs("cpu", torch.float32)

    with pytest.raises(
        triton.runtime.errors.InterpreterError, match="mask has unsupported dtype"
    ):
        module.launch(launch, input, other)

    assert pipelines.CPU == pipelines.EMULATIONS["cpu"][-len(pipelines.CPU) :]
